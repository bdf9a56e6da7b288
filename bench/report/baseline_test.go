package report

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"vitbench/bench/results"
)

func baselineCase(name string, macs, peak int64) BaselineCase {
	return BaselineCase{Case: name, Kind: KindComponent, Op: "gemm", DType: "float32", Batch: 1, Tolerance: "gemm",
		Params: 10, MACs: macs, Bytes: 100, Inputs: map[string]string{"x": "1x4"}, Outputs: map[string]string{"out": "1x2"},
		WeightArrays: 2, PeakBytes: map[string]int64{"avx512": peak}}
}

func TestDiffBaseline(t *testing.T) {
	base := Baseline{Regenerate: "go run ./cmd/vitbench baseline -o b.json", Format: BaselineFormat, PeakThreads: 2,
		PeakISAs: []string{"avx512"}, Cases: []BaselineCase{baselineCase("a", 100, 64), baselineCase("b", 100, 64), baselineCase("gone", 1, 1)}}
	head := Baseline{Format: BaselineFormat, PeakThreads: 2, PeakISAs: []string{"avx512"},
		Cases: []BaselineCase{baselineCase("a", 100, 64), baselineCase("b", 120, 72), baselineCase("new", 1, 1)}}
	head.Cases[0].Outputs = map[string]string{"out": "1x3", "extra": "2"}
	d := DiffBaseline(base, head)
	want := []string{"a: output out 1x2 -> 1x3", "a: output extra (none) -> 2", "b: MACs 100 -> 120", "b: B/peak[avx512] 64 -> 72"}
	for _, w := range want {
		found := false
		for _, c := range d.Changed {
			found = found || c == w
		}
		if !found {
			t.Errorf("changes %q lack %q", d.Changed, w)
		}
	}
	if len(d.Changed) != len(want) || strings.Join(d.Vanished, ",") != "gone" || strings.Join(d.New, ",") != "new" || !d.Failed() {
		t.Errorf("diff %+v", d)
	}
	var buf bytes.Buffer
	WriteBaselineDiff(&buf, "b.json", base, d)
	for _, s := range []string{"CHANGED deterministic metrics (failures) (4):", "VANISHED cases (failures) (1):\n- gone",
		"New cases, not in the baseline yet (not failures) (1):\n- new", "FAIL: 4 metric changes, 1 vanished cases", base.Regenerate} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, buf.String())
		}
	}

	// Only new cases: passes. Peaks of a path or thread count not measured are not compared.
	head = Baseline{Format: BaselineFormat, PeakThreads: 4, PeakISAs: []string{"avx2"},
		Cases: []BaselineCase{baselineCase("a", 100, 1), baselineCase("b", 100, 2), baselineCase("gone", 1, 3), baselineCase("new", 1, 1)}}
	d = DiffBaseline(base, head)
	if d.Failed() || len(d.New) != 1 || len(d.Notes) != 2 {
		t.Errorf("diff %+v", d)
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	b := Baseline{Regenerate: "x", Format: BaselineFormat, PeakThreads: 2, PeakISAs: []string{"avx512"},
		Cases: []BaselineCase{baselineCase("z", 1, 2), baselineCase("a", 3, 4)}}
	p := filepath.Join(t.TempDir(), "b.json")
	if err := results.WriteFileAtomic(p, func(w io.Writer) error { return WriteBaseline(w, b) }); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBaseline(p)
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffBaseline(b, got); d.Failed() || len(d.New) > 0 || got.Cases[0].Case != "a" {
		t.Errorf("round trip: %+v %+v", d, got)
	}
	var buf bytes.Buffer
	WriteBaseline(&buf, b)
	if lines := strings.Count(buf.String(), "\n"); lines != 5 {
		t.Errorf("want one line per case (5 lines), got %d:\n%s", lines, buf.String())
	}
}
