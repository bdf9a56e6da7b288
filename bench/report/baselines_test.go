package report

import (
	"bytes"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// labelled returns sampleInput with its PyTorch rows labelled as bench_torch.py labels them,
// except vit_b16 at batch 8, which records no label.
func labelled() Input {
	in := sampleInput()
	for i := range in.Bench[1].Rows {
		r := &in.Bench[1].Rows[i]
		switch {
		case r.Case == "patch_embed/vit_b16":
			r.Baseline = "vitbench_ref.modules.PatchEmbed: nn.Conv2d"
		case r.Batch == 1:
			r.Baseline = "vitbench_ref.vit.VisionTransformer: timm-style ViT | eager"
		}
	}
	return in
}

func render(t *testing.T, in Input) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestBaselineLabels(t *testing.T) {
	md := render(t, labelled())
	comp := sectionOf(t, md, "Components")
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| cpu ", "| 3.7 | a "); !ok {
		t.Errorf("components: patch_embed's PyTorch code is not marker a:\n%s", comp)
	}
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| cuda ", "| — | — "); !ok {
		t.Errorf("components: a row without PyTorch has no code:\n%s", comp)
	}
	if !strings.Contains(comp, "- PyTorch code a: vitbench_ref.modules.PatchEmbed: nn.Conv2d\n") {
		t.Errorf("components: no legend for a:\n%s", comp)
	}
	if strings.Contains(comp, "code b:") {
		t.Errorf("components: legend lists a marker no row uses:\n%s", comp)
	}
	nets := sectionOf(t, md, "Networks")
	// Each table's markers start at a. Batch 1 is labelled, batch 8 is not: the detailed row
	// has both, the compact row (at batch 8) the unknown one; the legend keeps the label whole.
	if _, ok := tableLine(nets, "vit_b16", "1: 1.50×; 8: 1.25×", "| a, unknown |"); !ok {
		t.Errorf("networks: detailed row lacks codes a, unknown:\n%s", nets)
	}
	for _, s := range []string{"- PyTorch code a: vitbench_ref.vit.VisionTransformer: timm-style ViT | eager\n", "- PyTorch code unknown: "} {
		if !strings.Contains(nets, s) {
			t.Errorf("networks: legend lacks %q:\n%s", s, nets)
		}
	}
}

func TestBaselineLabelsMissing(t *testing.T) {
	// Files written before the labels: every PyTorch row is unknown, never blank.
	md := render(t, sampleInput())
	comp := sectionOf(t, md, "Components")
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| cpu ", "| 3.7 | unknown |"); !ok {
		t.Errorf("components: an unlabelled PyTorch row is not unknown:\n%s", comp)
	}
	if !strings.Contains(comp, "- PyTorch code unknown: ") {
		t.Errorf("components: no legend line for unknown:\n%s", comp)
	}
	// No PyTorch at all: the column is a dash and there is no legend.
	in := sampleInput()
	in.Bench = []results.BenchFile{in.Bench[0]}
	comp = sectionOf(t, render(t, in), "Components")
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| — | — | — |"); !ok || strings.Contains(comp, "PyTorch code unknown") {
		t.Errorf("components without PyTorch: want dashes and no legend:\n%s", comp)
	}
}

func TestMarkerOf(t *testing.T) {
	for i, want := range map[int]string{0: "a", 25: "z", 26: "a2", 53: "b3"} {
		if got := markerOf(i); got != want {
			t.Errorf("markerOf(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestNetworkSummary(t *testing.T) {
	in := labelled()
	in.Bench = in.Bench[:2] // one machine: no machine column
	in.Check[0].Rows = append(in.Check[0].Rows, results.CheckRow{Case: "vit_b16", Kind: "network", Backend: "cpu", DType: "float32",
		Status: "OK", NMSE: 2.5e-12})
	in.Cases["vit_b16"] = CaseInfo{Name: "vit_b16", Kind: KindNetwork, Params: 86_567_656, MACs: 17_500_000_000, ImgSize: "224", Top1: true}
	nets := sectionOf(t, render(t, in), "Networks")
	glance := strings.Index(nets, "### At a glance")
	detail := strings.Index(nets, "### Every measurement")
	if glance < 0 || detail < glance {
		t.Fatalf("want the compact table first, then the detailed one:\n%s", nets)
	}
	compact := nets[glance:detail]
	header := "| model | image size | params (M) | GMACs | agreement | batch-1 ms | img/s | vs PyTorch | PyTorch code |"
	if !strings.Contains(strings.Join(strings.Fields(compact), " "), header) {
		t.Errorf("compact header is not %q:\n%s", header, compact)
	}
	// vit_b16: 100 ms at batch 1; 8 / 640 ms = 12.5 img/s at batch 8, 800/640 = 1.25×
	// over PyTorch there, whose batch-8 row records no code.
	l, ok := tableLine(compact, "vit_b16")
	want := []string{"vit_b16", "224", "86.6", "17.50", "OK, top-1 same", "100", "12.5 (batch 8)", "1.25×", "unknown"}
	var got []string
	for _, c := range strings.Split(strings.Trim(l, "| "), "|") {
		got = append(got, strings.TrimSpace(c))
	}
	if !ok || strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("compact row %q, want cells %q", got, want)
	}

	// Families in paper order in the compact table (ViT before Deformable DETR's
	// transformer), by name in the detailed one.
	in.Bench[0].Rows = append(in.Bench[0].Rows, row("ddetr_transformer", "cpu", 1, 2, 700e6, 9e10))
	dt := row("ddetr_transformer", "torch", 1, 2, 16e9, 9e10)
	dt.Baseline = "ddetr code"
	in.Bench[1].Rows = append(in.Bench[1].Rows, dt)
	in.Cases["ddetr_transformer"] = CaseInfo{Name: "ddetr_transformer", Kind: KindNetwork, Op: "ddetr_transformer"}
	in.Cases["vit_b16"] = CaseInfo{Name: "vit_b16", Kind: KindNetwork, Op: "vit", ImgSize: "224"}
	nets = sectionOf(t, render(t, in), "Networks")
	detail = strings.Index(nets, "### Every measurement")
	compact, full := nets[:detail], nets[detail:]
	if strings.Index(compact, "| vit_b16 ") > strings.Index(compact, "| ddetr_transformer ") {
		t.Errorf("compact table: ddetr_transformer before vit_b16:\n%s", compact)
	}
	if strings.Index(full, "| vit_b16 ") < strings.Index(full, "| ddetr_transformer ") {
		t.Errorf("detailed table: not by name:\n%s", full)
	}
	// Markers follow the compact table: the ViT's label is a, the transformer's b.
	if _, ok := tableLine(compact, "ddetr_transformer", "| b "); !ok || !strings.Contains(compact, "- PyTorch code b: ddetr code\n") {
		t.Errorf("compact table: ddetr_transformer's code is not b:\n%s", compact)
	}
}
