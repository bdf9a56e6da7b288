package report

import (
	"bytes"
	"strings"
	"testing"

	"vitbench/bench/results"
)

func TestMarkdownABAndAgreement(t *testing.T) {
	in := sampleInput()
	in.Check[0].Rows = append(in.Check[0].Rows,
		results.CheckRow{Case: "vit_b16", Kind: "network", Backend: "cpu", DType: "float32", Status: "OK", NMSE: 5.88e-13})
	info := in.Cases["vit_b16"]
	info.Top1 = true
	in.Cases["vit_b16"] = info
	var buf bytes.Buffer
	if err := Markdown(&buf, in); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	ab := sectionOf(t, md, "A/B: PyTorch → vitbench")
	// PyTorch 3.7 ms → vitbench 2 ms: -45.95%, significant, faster; vit_b16 at two batches.
	for _, want := range [][]string{
		{"patch_embed/vit_b16", "| cpu ", "-45.95%", "faster"},
		{"vit_b16", "| 8 ", "-20.00%", "faster"},
		{"geomean", "n=3 rows"},
	} {
		if l, ok := tableLine(ab, want[0], want[1:]...); !ok {
			t.Errorf("A/B: no row %q with %q: %q\n%s", want[0], want[1:], l, ab)
		}
	}
	if !strings.Contains(ab, "3 faster, 0 slower, 3 rows compared") {
		t.Errorf("A/B totals:\n%s", ab)
	}
	if l, ok := tableLine(sectionOf(t, md, "Networks"), "vit_b16", "| OK, NMSE 5.88e-13, top-1 same "); !ok {
		t.Errorf("networks: agreement missing: %q", l)
	}

	// With a base file, the A/B section compares it with the report's vitbench rows.
	base := in.Bench[0]
	in.Base, in.BasePath = &base, "old/bench.txt"
	buf.Reset()
	Markdown(&buf, in)
	ab = sectionOf(t, buf.String(), "A/B: base → this report")
	if !strings.Contains(ab, "Base: `old/bench.txt`") || !strings.Contains(ab, "0 faster, 0 slower") {
		t.Errorf("A/B with base:\n%s", ab)
	}
}

func TestAgreement(t *testing.T) {
	in := Input{Cases: map[string]CaseInfo{"net": {Kind: KindNetwork, Top1: true}}, Check: []results.CheckFile{{Rows: []results.CheckRow{
		{Case: "net", Backend: "cpu", DType: "float32", Status: "FAIL", NMSE: 1e-3, Reason: "logits: top-1 class differs for 1 of 2 images"},
		{Case: "net", Backend: "cpu", DType: "float16", Status: "OK", NMSE: 1e-5},
		{Case: "net", Backend: "cuda", DType: "float32", Status: "NS", Reason: "no driver"},
		{Case: "det", Backend: "cpu", DType: "float32", Status: "OK", NMSE: 1e-9},
	}}}}
	for _, tt := range []struct{ caseName, backend, dtype, want string }{
		{"net", "cpu", "float32", "FAIL, NMSE 1.00e-03, top-1 differs for 1 of 2 images"},
		{"net", "cpu", "float16", "OK, NMSE 1.00e-05, top-1 same"},
		{"net", "cpu", "bfloat16", "FAIL, NMSE 1.00e-03, top-1 differs for 1 of 2 images"},
		{"net", "cuda", "float32", "NS"},
		{"det", "cpu", "float32", "OK, NMSE 1.00e-09"},
		{"other", "cpu", "float32", dash},
	} {
		if got := in.agreement(tt.caseName, tt.backend, tt.dtype); got != tt.want {
			t.Errorf("agreement(%s, %s, %s) = %q, want %q", tt.caseName, tt.backend, tt.dtype, got, tt.want)
		}
	}
}

func TestCompareChecks(t *testing.T) {
	file := func(rows ...results.CheckRow) []results.CheckFile { return []results.CheckFile{{Rows: rows}} }
	r := func(c, status string) results.CheckRow {
		return results.CheckRow{Case: c, Backend: "cpu", DType: "float32", Status: status, NMSE: 1e-9, Reason: "why"}
	}
	var buf bytes.Buffer
	res, err := CompareChecks(&buf,
		file(r("ok_to_fail", "OK"), r("fail_to_ok", "FAIL"), r("still", "FAIL"), r("ok_to_ns", "OK"), r("same", "OK"), r("gone", "OK")),
		file(r("ok_to_fail", "FAIL"), r("fail_to_ok", "OK"), r("still", "FAIL"), r("ok_to_ns", "NS"), r("same", "OK"), r("new_fail", "FAIL"), r("new_ok", "OK")))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(res.Regressions, "\n")
	for _, w := range []string{"ok_to_fail backend=cpu dtype=float32: OK -> FAIL", "ok_to_ns backend=cpu dtype=float32: OK -> NS", "new_fail backend=cpu dtype=float32: — -> FAIL"} {
		if !strings.Contains(got, w) {
			t.Errorf("regressions %q lack %q", res.Regressions, w)
		}
	}
	if len(res.Regressions) != 3 || len(res.Fixed) != 1 || len(res.StillFailing) != 1 || len(res.OnlyBase) != 1 || len(res.OnlyHead) != 1 || res.Compared != 5 {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(buf.String(), "Conformance: 5 rows in both, 4 status changes") {
		t.Errorf("output:\n%s", buf.String())
	}
}

// TestCompareChecksFlagsNMSEDrift: a row still OK whose NMSE grew tenfold
// is a hard failure; ninefold, a drop, or growth inside float32 rounding
// is not.
func TestCompareChecksFlagsNMSEDrift(t *testing.T) {
	row := func(c string, nmse float64) results.CheckRow {
		return results.CheckRow{Case: c, Backend: "cpu", DType: "float32", Status: "OK", Output: "logits", NMSE: nmse}
	}
	var buf bytes.Buffer
	res, err := CompareChecks(&buf,
		[]results.CheckFile{{Rows: []results.CheckRow{row("grew10", 1e-13), row("grew9", 1e-13), row("fell", 1e-12), row("tiny", 1e-18)}}},
		[]results.CheckFile{{Rows: []results.CheckRow{row("grew10", 1e-12), row("grew9", 9e-13), row("fell", 1e-13), row("tiny", 5e-16)}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Drift) != 1 || !strings.HasPrefix(res.Drift[0], "grew10 backend=cpu dtype=float32: NMSE drift") ||
		len(res.Regressions) != 1 {
		t.Errorf("drift %q, regressions %q", res.Drift, res.Regressions)
	}
	if !strings.Contains(buf.String(), "NMSE DRIFT") {
		t.Errorf("the table does not show the drift:\n%s", buf.String())
	}
}
