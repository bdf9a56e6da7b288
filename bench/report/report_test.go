package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// around returns n samples spread ±2% around center.
func around(center float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = center * (1 + 0.04*(float64((i*7)%n)/float64(n-1)-0.5))
	}
	return s
}

func row(caseName, backend string, batch, threads int, medianNs float64, macs int64) results.BenchRow {
	return results.NewBenchRow(caseName, backend, batch, threads, "float32", macs, macs/10, 8<<20, 0, around(medianNs, 10), nil)
}

func sampleInput() Input {
	cpu := results.BenchFile{
		Meta: results.Meta{Tool: "vitbench", Commit: "abc1234", Date: "2026-11-29", Machine: "ci", CPU: "Xeon 8481C", ISA: "avx512", Threads: 2},
		Rows: []results.BenchRow{
			row("patch_embed/vit_b16", "cpu", 1, 2, 2e6, 115605504),
			row("attention/vit_b16", "cpu", 1, 2, 5e6, 400000000),
			row("vit_b16", "cpu", 1, 2, 100e6, 17_500_000_000),
			row("vit_b16", "cpu", 8, 2, 640e6, 8*17_500_000_000),
		},
	}
	noisy := results.NewBenchRow("gelu", "cpu", 1, 2, "float32", 0, 4<<20, 0, 0, []float64{1e5, 2e5, 1e5, 3e5, 1e5, 2e5, 1e5, 3e5}, nil)
	cpu.Rows = append(cpu.Rows, noisy)
	torch := results.BenchFile{
		Meta: results.Meta{Tool: "bench_torch.py", Date: "2026-11-29", Machine: "ci", CPU: "Xeon 8481C",
			Extra: map[string]string{"torch-version": "2.5.1"}},
		Rows: []results.BenchRow{
			row("patch_embed/vit_b16", "torch", 1, 2, 3.7e6, 115605504),
			row("vit_b16", "torch", 1, 2, 150e6, 17_500_000_000),
			row("vit_b16", "torch", 8, 2, 800e6, 8*17_500_000_000),
		},
	}
	gpu := results.BenchFile{
		Meta: results.Meta{Tool: "vitbench", Commit: "abc1234", Machine: "h200", CPU: "EPYC", Extra: map[string]string{"gpu": "NVIDIA H200"}},
		Rows: []results.BenchRow{row("patch_embed/vit_b16", "cuda", 1, 1, 0.05e6, 115605504)},
	}
	check := results.CheckFile{
		Meta: results.Meta{Tool: "vitbench", Commit: "abc1234"},
		Rows: []results.CheckRow{
			{Case: "patch_embed/vit_b16", Kind: "component", Backend: "cpu", DType: "float32", Status: "OK",
				MaxAbs: 1.2e-6, MaxRel: 3.4e-5, NMSE: 1.1e-13, Tolerance: results.Tolerance{Class: "gemm", RTol: 1e-3, ATol: 1e-3, NMSE: 5e-4}},
			{Case: "attention/vit_b16", Kind: "component", Backend: "cpu", DType: "float32", Status: "FAIL",
				MaxAbs: 0.5, MaxRel: 2.5, NMSE: 0.25, Tolerance: results.Tolerance{Class: "softmax", RTol: 1e-3, ATol: 1e-4, NMSE: 1e-6},
				Reason: "nmse 2.50e-01 > 1.00e-06 | row 3"},
			{Case: "layernorm", Kind: "component", Backend: "cuda", DType: "float16", Status: "NS", Reason: "float16 not supported"},
		},
	}
	return Input{
		Bench:      []results.BenchFile{cpu, torch, gpu},
		Check:      []results.CheckFile{check},
		BenchPaths: []string{"out/cpu.txt", "out/torch.txt", "out/gpu.json"},
		CheckPaths: []string{"out/check.json"},
		Cases: map[string]CaseInfo{
			"vit_b16":             {Name: "vit_b16", Kind: KindNetwork, Params: 86_567_656, MACs: 17_500_000_000, ImgSize: "224"},
			"patch_embed/vit_b16": {Name: "patch_embed/vit_b16", Kind: KindComponent, Op: "patch_embed"},
		},
		PeakGFLOPs:    440,
		PeakByBackend: map[string]float64{"cuda": 0},
		Title:         "vitbench on ci",
	}
}

// sectionOf returns the text of the "## title" section of md.
func sectionOf(t *testing.T, md, title string) string {
	t.Helper()
	i := strings.Index(md, "\n## "+title+"\n")
	if i < 0 {
		t.Fatalf("no section %q in:\n%s", title, md)
	}
	rest := md[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

var spaces = regexp.MustCompile(`\s+`)

// tableLine returns the table line of section having a cell equal to first and containing
// all of want, with runs of spaces collapsed to one.
func tableLine(section, first string, want ...string) (string, bool) {
	for _, l := range strings.Split(section, "\n") {
		l = spaces.ReplaceAllString(l, " ")
		if !strings.HasPrefix(l, "| ") || !strings.Contains(l, "| "+first+" |") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return l, true
		}
	}
	return "", false
}

func TestMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := Markdown(&buf, sampleInput()); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	t.Log("\n" + md)

	tests := []struct {
		section, first string
		want           []string
	}{
		// Conformance: every status, FAIL kept, numbers as %.2e, tolerance, pipes escaped.
		{"Conformance", "attention/vit_b16", []string{"| FAIL ", "5.00e-01", "softmax (rtol 1.00e-03, atol 1.00e-04, nmse 1.00e-06)", `\| row 3`}},
		{"Conformance", "patch_embed/vit_b16", []string{"| OK ", "1.20e-06", "3.40e-05", "1.10e-13"}},
		{"Conformance", "layernorm", []string{"| NS ", "float16 not supported"}},
		// Components: PyTorch median and speed-up 3.7/2 = 1.85×, % of peak, FAIL visible;
		// ceiling 3.7 ms / (2·115605504 MACs at 440 GFLOP/s = 0.525 ms) = 7.04×.
		{"Components", "patch_embed/vit_b16", []string{"| cpu ", "| OK ", "| 2 [", "| 3.7 ", "| 1.85× | 7.04× |", "%"}},
		{"Components", "attention/vit_b16", []string{"| FAIL ", "| — "}},
		{"Components", "gelu", []string{"noisy"}},
		{"Components", "patch_embed/vit_b16", []string{"| cuda "}},
		// Networks: paper columns, throughput at both batches, PyTorch beside.
		// vs PyTorch 150/100 and 800/640; ceiling 150 ms / (2·17.5 GMACs at 440 GFLOP/s
		// = 79.5 ms) = 1.89× at batch 1, 800 / 636 = 1.26× at batch 8.
		{"Networks", "vit_b16", []string{"| 224 ", "| 86.6 ", "| 17.50 ", "| cpu ", "| 100 [", "1: 10.0; 8: 12.5", "| 150 ", "1: 6.7; 8: 10.0",
			"| 1: 1.50×; 8: 1.25× | 1: 1.89×; 8: 1.26× |"}},
		// Hardware comparison: one column per (machine, backend).
		{"Hardware comparison", "patch_embed/vit_b16", []string{"| 2 ", "| 0.05 ", "| 3.7 "}},
	}
	for _, tt := range tests {
		sec := sectionOf(t, md, tt.section)
		if l, ok := tableLine(sec, tt.first, tt.want...); !ok {
			t.Errorf("%s: no row %q with %q; line: %q\nsection:\n%s", tt.section, tt.first, tt.want, l, sec)
		}
	}

	for _, s := range []string{
		"# vitbench on ci\n", "- Backends: cpu, cuda, torch\n", "PyTorch 2.5.1", "- ISA path: avx512",
		"1 OK, 1 FAIL, 1 NS\n",
		"| case ", "| GFLOP/s |", "| PyTorch ms |", "| vs PyTorch |", "| % of peak |",
		"| ci / cpu ms |", "| ci / torch ms |", "| h200 / cuda ms |",
		"- timing: `out/cpu.txt`: tool vitbench, commit abc1234", "- conformance: `out/check.json`",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	comp := sectionOf(t, md, "Components")
	if _, ok := tableLine(comp, "patch_embed/vit_b16", "| torch "); ok {
		t.Errorf("PyTorch rows belong in the PyTorch column, not as rows:\n%s", comp)
	}
	if _, ok := tableLine(comp, "vit_b16"); ok {
		t.Errorf("network rows in the components table:\n%s", comp)
	}
	if strings.Index(comp, "| attention/vit_b16") > strings.Index(comp, "| patch_embed/vit_b16") {
		t.Errorf("rows not sorted by case:\n%s", comp)
	}
	if strings.Contains(md, "GFLOP / S") {
		t.Errorf("header auto-format is on")
	}
}

func TestMarkdownSkipsEmptySections(t *testing.T) {
	in := Input{Bench: []results.BenchFile{{Rows: []results.BenchRow{row("a", "cpu", 1, 1, 1e6, 0)}}}}
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, s := range []string{"## Conformance", "## Networks", "## Hardware comparison"} {
		if strings.Contains(md, s) {
			t.Errorf("empty section %q rendered:\n%s", s, md)
		}
	}
	for _, s := range []string{"## Components", "bench input #1 (path not given)"} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}

// TestMarkdownListsTimingFailures checks that a case that failed to run
// while being timed is a FAIL row with its error, and that the section is
// left out when nothing failed.
func TestMarkdownListsTimingFailures(t *testing.T) {
	in := sampleInput()
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "## Timing failures") {
		t.Error("a timing failures section without failures")
	}
	in.Bench[0].Failed = []results.BenchFailure{{Case: "volo_d5_512", Backend: "cuda", Batch: 1, Threads: 2, DType: "float32",
		Error: "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"}}
	buf.Reset()
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "## Timing failures") ||
		!regexp.MustCompile(`volo_d5_512 +\| cuda +\| float32 +\| +1 \| +2 \| FAIL +\| cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY \(2\): out of memory`).MatchString(out) {
		t.Errorf("no FAIL row for the failed case:\n%s", out)
	}
}
