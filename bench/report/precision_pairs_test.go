package report

import (
	"strings"
	"testing"

	"vitbench/bench/results"
)

// precisionInput has networks timed on cpu and cpu-bf16: a classifier at two batches whose
// bf16 top-1 matches, a classifier whose bf16 top-1 differs, a detector whose labels differ in
// bf16, a network without class output, and two rows that have no partner (a bf16 row
// without its fp32 row, an fp32 row at a batch bf16 was not timed at).
func precisionInput() Input {
	vit := results.BenchFile{
		Meta: results.Meta{Tool: "vitbench", Machine: "ci", CPU: "EPYC", Threads: 2},
		Rows: []results.BenchRow{
			row("vit_s16", "cpu", 1, 2, 40e6, 4.6e9),
			row("vit_s16", "cpu-bf16", 1, 2, 25e6, 4.6e9),
			row("vit_s16", "cpu", 8, 2, 320e6, 8*4.6e9),
			row("vit_s16", "cpu-bf16", 8, 2, 160e6, 8*4.6e9),
			row("deit_ti", "cpu", 1, 2, 12e6, 1.3e9),
			row("deit_ti", "cpu-bf16", 1, 2, 15e6, 1.3e9),
			row("detr_r50_small_b2", "cpu", 2, 2, 90e6, 2e10),
			row("detr_r50_small_b2", "cpu-bf16", 2, 2, 60e6, 2e10),
			row("clip_vit_b32", "cpu", 1, 2, 30e6, 4.4e9),
			row("clip_vit_b32", "cpu-bf16", 1, 2, 20e6, 4.4e9),
			row("volo_d1", "cpu-bf16", 1, 2, 70e6, 6.8e9), // no fp32 row
			row("mingpt_small", "cpu", 1, 2, 5e6, 1e8),    // no bf16 row
		},
	}
	ok := func(c, backend, out string, nmse float64) results.CheckRow {
		return results.CheckRow{Case: c, Kind: KindNetwork, Backend: backend, DType: "float32", Status: results.StatusOK, Output: out, NMSE: nmse}
	}
	check := results.CheckFile{Rows: []results.CheckRow{
		ok("vit_s16", "cpu", "logits", 9e-13), ok("vit_s16", "cpu-bf16", "logits", 3.3e-5),
		ok("deit_ti", "cpu", "logits", 4e-13),
		{Case: "deit_ti", Kind: KindNetwork, Backend: "cpu-bf16", DType: "float32", Status: results.StatusFail, Output: "logits",
			NMSE: 6e-5, Reason: "logits: top-1 class differs for 1 of 2 images"},
		ok("detr_r50_small_b2", "cpu", "pred_logits", 3e-13),
		{Case: "detr_r50_small_b2", Kind: KindNetwork, Backend: "cpu-bf16", DType: "float32", Status: results.StatusFail, Output: "labels",
			NMSE: 2e-3, Reason: "labels: 1 elements outside atol 0 + rtol 0·|ref| (first at [0 3])"},
		ok("clip_vit_b32", "cpu", "image_features", 7e-13), ok("clip_vit_b32", "cpu-bf16", "image_features", 1.1e-5),
	}}
	net := func(name, op string, top1, labels bool) CaseInfo {
		return CaseInfo{Name: name, Kind: KindNetwork, Op: op, Top1: top1, Labels: labels}
	}
	return Input{
		Bench: []results.BenchFile{vit},
		Check: []results.CheckFile{check},
		Cases: map[string]CaseInfo{
			"vit_s16": net("vit_s16", "vit", true, false), "deit_ti": net("deit_ti", "vit", true, false),
			"detr_r50_small_b2": net("detr_r50_small_b2", "detr", false, true), "clip_vit_b32": net("clip_vit_b32", "clip", false, false),
			"volo_d1": net("volo_d1", "volo", true, false), "mingpt_small": net("mingpt_small", "mingpt", false, false),
		},
	}
}

// pairCells returns the cells of the side-by-side table's row of caseName at batch, split.
func pairCells(t *testing.T, table, caseName, batch string) []string {
	t.Helper()
	l, ok := tableLine(table, caseName, "| "+batch+" | 2 |")
	if !ok {
		t.Fatalf("no row %s batch %s in:\n%s", caseName, batch, table)
	}
	var cells []string
	for _, c := range strings.Split(strings.Trim(l, "| "), "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

// TestPrecisionPairs: each network timed on cpu and cpu-bf16 gets one row per batch with the
// fp32 and bf16 medians of that batch, bf16's speed-up (fp32 / bf16), bf16's own check status
// and NMSE (not fp32's), fp32's NMSE, and the class agreement its check recorded; rows without
// a partner are left out, and the other network tables are unchanged by it.
func TestPrecisionPairs(t *testing.T) {
	nets := sectionOf(t, render(t, precisionInput()), "Networks")
	start := strings.Index(nets, "### fp32 and bf16 side by side")
	end := strings.Index(nets, "### Every measurement")
	if glance := strings.Index(nets, "### At a glance"); glance < 0 || start < glance || end < start {
		t.Fatalf("want At a glance, then fp32 and bf16 side by side, then Every measurement:\n%s", nets)
	}
	table := nets[start:end]
	header := "| model | batch | threads | fp32 ms | bf16 ms | bf16 speed-up | bf16 check | bf16 NMSE (worst output) | fp32 NMSE | bf16 classes |"
	if !strings.Contains(strings.Join(strings.Fields(table), " "), header) {
		t.Errorf("header is not %q:\n%s", header, table)
	}
	for _, c := range []struct {
		name, batch string
		want        []string
	}{
		{"vit_s16", "1", []string{"vit_s16", "1", "2", "40", "25", "1.60×", "OK", "3.30e-05 (logits)", "9.00e-13", "top-1 same"}},
		{"vit_s16", "8", []string{"vit_s16", "8", "2", "320", "160", "2.00×", "OK", "3.30e-05 (logits)", "9.00e-13", "top-1 same"}},
		{"deit_ti", "1", []string{"deit_ti", "1", "2", "12", "15", "0.80×", "FAIL", "6.00e-05 (logits)", "4.00e-13",
			"top-1 differs for 1 of 2 images"}},
		{"detr_r50_small_b2", "2", []string{"detr_r50_small_b2", "2", "2", "90", "60", "1.50×", "FAIL", "2.00e-03 (labels)",
			"3.00e-13", "labels differ"}},
		{"clip_vit_b32", "1", []string{"clip_vit_b32", "1", "2", "30", "20", "1.50×", "OK", "1.10e-05 (image_features)",
			"7.00e-13", dash}},
	} {
		if got := pairCells(t, table, c.name, c.batch); strings.Join(got, ";") != strings.Join(c.want, ";") {
			t.Errorf("%s batch %s: cells %q, want %q", c.name, c.batch, got, c.want)
		}
	}
	for _, alone := range []string{"volo_d1", "mingpt_small"} {
		if strings.Contains(table, "| "+alone+" ") {
			t.Errorf("%s has no fp32/bf16 partner but has a row:\n%s", alone, table)
		}
	}
	// ViT/DeiT first (familyOrder), the other families after them by op name.
	if i, j, k := strings.Index(table, "| vit_s16 "), strings.Index(table, "| clip_vit_b32 "), strings.Index(table, "| detr_r50_small_b2 "); i > j || j > k {
		t.Errorf("rows not in family order:\n%s", table)
	}
	// Without a bf16 backend there is no such table.
	in := precisionInput()
	var fp32 []results.BenchRow
	for _, r := range in.Bench[0].Rows {
		if r.Backend == "cpu" {
			fp32 = append(fp32, r)
		}
	}
	in.Bench[0].Rows = fp32
	if md := render(t, in); strings.Contains(md, "fp32 and bf16 side by side") {
		t.Errorf("a side-by-side table without bf16 rows:\n%s", sectionOf(t, md, "Networks"))
	}
}

// TestClassAgreement: what a check row says about a reduced-precision run's classes.
func TestClassAgreement(t *testing.T) {
	in := Input{Cases: map[string]CaseInfo{
		"cls": {Kind: KindNetwork, Top1: true}, "det": {Kind: KindNetwork, Labels: true}, "enc": {Kind: KindNetwork},
	}}
	fail := func(out, reason string) *results.CheckRow {
		return &results.CheckRow{Status: results.StatusFail, Output: out, Reason: reason}
	}
	for _, c := range []struct {
		name string
		row  *results.CheckRow
		want string
	}{
		{"cls", &results.CheckRow{Status: results.StatusOK}, "top-1 same"},
		{"cls", fail("logits", "logits: top-1 class differs for 3 of 8 images"), "top-1 differs for 3 of 8 images"},
		{"cls", fail("logits", "logits: NMSE 0.1 above 0.001"), "top-1 not known (logits fails)"},
		{"cls", &results.CheckRow{Status: results.StatusNS}, dash},
		{"cls", nil, dash},
		{"det", &results.CheckRow{Status: results.StatusOK}, "labels same"},
		{"det", fail("labels", "labels: 2 elements outside"), "labels differ"},
		{"det", fail("boxes", "boxes: NMSE 1 above 0.01"), "labels not known (boxes fails)"},
		{"enc", &results.CheckRow{Status: results.StatusOK}, dash},
	} {
		if got := in.classAgreement(c.name, c.row); got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.name, c.row, got, c.want)
		}
	}
}
