package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"vitbench/bench/results"
)

// noisySamples draws n samples of center·(1 + U(-3%, +3%)) from a seeded generator.
func noisySamples(seed uint64, center float64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 42))
	s := make([]float64, n)
	for i := range s {
		s[i] = center * (1 + 0.06*(r.Float64()-0.5))
	}
	return s
}

func benchFile(commit string, rows ...results.BenchRow) results.BenchFile {
	return results.BenchFile{Meta: results.Meta{Tool: "vitbench", Commit: commit, Machine: "ci"}, Rows: rows}
}

func mk(caseName string, macs, peak int64, samples []float64) results.BenchRow {
	return results.NewBenchRow(caseName, "cpu", 1, 2, "float32", macs, 0, peak, 0, samples, nil)
}

// withRTT gives r a load record with cross-CPU round trip rtt.
func withRTT(r results.BenchRow, rtt float64) results.BenchRow {
	r.Load = &results.RowLoad{Foreign: 0, RoundTripNs: rtt}
	return r
}

func TestCompare(t *testing.T) {
	scale := func(s []float64, f float64) []float64 {
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = v * f
		}
		return out
	}
	base := noisySamples(1, 1e6, 10)
	tests := []struct {
		name         string
		base, head   results.BenchRow
		opt          CompareOptions
		regressions  int
		improvements int
		determ       int
		geomean      float64
		out          []string
	}{
		{name: "20% slower", base: mk("a", 100, 8, base), head: mk("a", 100, 8, scale(noisySamples(2, 1e6, 10), 1.2)),
			opt: CompareOptions{Threshold: 0.05}, regressions: 1, geomean: 1.2, out: []string{"REGRESSION", "p=0.000 n=10", "Regressions (1):"}},
		{name: "identical samples", base: mk("a", 100, 8, base), head: mk("a", 100, 8, base),
			opt: CompareOptions{Threshold: 0.05}, geomean: 1, out: []string{"| ~ ", "p=1.000 n=10"}},
		{name: "same distribution, other draws", base: mk("a", 100, 8, base), head: mk("a", 100, 8, noisySamples(3, 1e6, 10)),
			opt: CompareOptions{Threshold: 0.05}, geomean: math.NaN(), out: []string{"| ~ "}},
		{name: "20% faster", base: mk("a", 100, 8, base), head: mk("a", 100, 8, scale(base, 0.8)),
			opt: CompareOptions{Threshold: 0.05}, improvements: 1, geomean: 0.8, out: []string{"improvement", "-20.00%"}},
		{name: "significant but under threshold", base: mk("a", 100, 8, base), head: mk("a", 100, 8, scale(base, 1.1)),
			opt: CompareOptions{Threshold: 0.15}, geomean: 1.1, out: []string{"+10.00%"}},
		{name: "MACs changed", base: mk("a", 100, 8, base), head: mk("a", 120, 8, base),
			opt: CompareOptions{Threshold: 0.05}, determ: 1, improvements: 1, geomean: 1,
			out: []string{"MACs/op 100 -> 120", "Deterministic changes (hard failures) (1):", "GFLOP/s"}},
		{name: "20% slower, the CPUs moved", base: withRTT(mk("a", 100, 8, base), 60), head: withRTT(mk("a", 100, 8, scale(noisySamples(2, 1e6, 10), 1.2)), 370),
			opt: CompareOptions{Threshold: 0.05}, geomean: 1.2, out: []string{"CPUs moved §", "Not judged", "60 ns -> 370 ns"}},
		{name: "20% slower, the CPUs alike", base: withRTT(mk("a", 100, 8, base), 60), head: withRTT(mk("a", 100, 8, scale(noisySamples(2, 1e6, 10), 1.2)), 70),
			opt: CompareOptions{Threshold: 0.05}, regressions: 1, geomean: 1.2, out: []string{"REGRESSION"}},
		{name: "peak bytes changed", base: mk("a", 100, 8, base), head: mk("a", 100, 16, base),
			opt: CompareOptions{Threshold: 0.05}, determ: 1, geomean: 1, out: []string{"B/peak 8 -> 16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			got, err := Compare(&buf, benchFile("base", tt.base), benchFile("head", tt.head), tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			out := spaces.ReplaceAllString(buf.String(), " ")
			if len(got.Regressions) != tt.regressions || len(got.Improvements) != tt.improvements || len(got.DeterministicChanges) != tt.determ {
				t.Errorf("regressions %q improvements %q deterministic %q, want %d, %d, %d\n%s",
					got.Regressions, got.Improvements, got.DeterministicChanges, tt.regressions, tt.improvements, tt.determ, buf.String())
			}
			if !math.IsNaN(tt.geomean) && math.Abs(got.Geomean-tt.geomean) > 0.03 {
				t.Errorf("geomean %v, want about %v", got.Geomean, tt.geomean)
			}
			for _, s := range append(tt.out, "| geomean ", "| base ± 95% CI |") {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, buf.String())
				}
			}
		})
	}
}

func TestCompareUnmatchedRows(t *testing.T) {
	s := noisySamples(1, 1e6, 10)
	var buf bytes.Buffer
	got, err := Compare(&buf, benchFile("b", mk("a", 1, 0, s), mk("old", 1, 0, s)), benchFile("h", mk("a", 1, 0, s), mk("new", 1, 0, s)), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Regressions)+len(got.Improvements)+len(got.DeterministicChanges) != 0 {
		t.Errorf("unexpected verdicts %+v", got)
	}
	if len(got.Vanished) != 1 || !strings.HasPrefix(got.Vanished[0], "old backend=cpu ") {
		t.Errorf("Vanished = %q, want the one row of case old", got.Vanished)
	}
	for _, w := range []string{"VANISHED: only in base, missing from head (failures) (1):\n- old ", "Only in head (1):\n- new "} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, buf.String())
		}
	}
}

func TestCompareNoSamples(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Compare(&buf, benchFile("b", mk("a", 1, 0, nil)), benchFile("h", mk("a", 1, 0, noisySamples(1, 1e6, 10))), CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "no samples") {
		t.Errorf("output lacks the no-samples note:\n%s", buf.String())
	}
}
