package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func loadRows() []BenchRow {
	mk := func(name string, l *RowLoad) BenchRow {
		r := NewBenchRow(name, "cpu", 1, 2, "float32", 1000, 100, 0, 0, []float64{1e6, 1.1e6, 1.2e6}, nil)
		r.Load = l
		return r
	}
	return []BenchRow{
		mk("quiet", &RowLoad{Foreign: 0.031}),
		mk("busy", &RowLoad{Foreign: 0.42, Contended: true}),
		mk("again", &RowLoad{Foreign: 0.05, Retimed: true, FirstForeign: 0.37, FirstContended: true}),
		mk("unmeasured", &RowLoad{Foreign: math.NaN()}),
		mk("none", nil),
		mk("split", &RowLoad{Foreign: 0.01, RoundTripNs: 372, CoresMoved: true}),
		mk("probedOnly", &RowLoad{Foreign: math.NaN(), RoundTripNs: 61}),
	}
}

// TestLoadRoundTrip: the load of each row, the contended flag and a re-time's first attempt
// survive the text format and JSON; an unmeasured load is null in JSON and empty in the CSV,
// never 0.
func TestLoadRoundTrip(t *testing.T) {
	f := BenchFile{Meta: Meta{Tool: "vitbench"}, Rows: loadRows()}
	var txt, js, cs bytes.Buffer
	if err := WriteBenchText(&txt, f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "# load BenchmarkBusy/backend=cpu/batch=1/threads=2/dtype=float32: 0.420 contended\n") ||
		!strings.Contains(txt.String(), ": 0.050 retimed 0.370 contended\n") ||
		!strings.Contains(txt.String(), "BenchmarkSplit/backend=cpu/batch=1/threads=2/dtype=float32: 0.010 rtt 372 moved\n") ||
		!strings.Contains(txt.String(), "BenchmarkProbedOnly/backend=cpu/batch=1/threads=2/dtype=float32: null rtt 61\n") {
		t.Errorf("text:\n%s", txt.String())
	}
	back, err := readBenchText(txt.Bytes(), "b.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteBenchJSON(&js, f); err != nil {
		t.Fatal(err)
	}
	var fromJSON benchFileJSON
	if err := json.Unmarshal(js.Bytes(), &fromJSON); err != nil {
		t.Fatal(err)
	}
	for _, got := range [][]BenchRow{back.Rows, fromJSON.Rows} {
		for i, want := range f.Rows {
			g := got[i].Load
			if want.Load != nil && want.Load.RoundTripNs > 0 && (g == nil || g.RoundTripNs != want.Load.RoundTripNs || g.CoresMoved != want.Load.CoresMoved) {
				t.Errorf("%s: load %+v, want the round trip of %+v", want.Case, g, *want.Load)
				continue
			}
			switch {
			case want.Load == nil || math.IsNaN(want.Load.Foreign):
				if g != nil && !math.IsNaN(g.Foreign) {
					t.Errorf("%s: load %+v, want none", want.Case, *g)
				}
			case g == nil:
				t.Errorf("%s: no load read back", want.Case)
			case g.Foreign != want.Load.Foreign || g.Contended != want.Load.Contended || g.Retimed != want.Load.Retimed ||
				(g.Retimed && g.FirstForeign != want.Load.FirstForeign) || g.FirstContended != want.Load.FirstContended:
				t.Errorf("%s: load %+v, want %+v", want.Case, *g, *want.Load)
			}
		}
	}
	var raw struct {
		Rows []map[string]any `json:"rows"`
	}
	json.Unmarshal(js.Bytes(), &raw)
	for _, i := range []int{3, 4} {
		if v, ok := raw.Rows[i]["foreign_load"]; !ok || v != nil {
			t.Errorf("%s: foreign_load %v (present %v), want null", f.Rows[i].Case, v, ok)
		}
	}
	if raw.Rows[1]["contended"] != true || raw.Rows[2]["retimed"] != true || raw.Rows[2]["first_foreign_load"] != 0.37 {
		t.Errorf("JSON rows %v / %v", raw.Rows[1], raw.Rows[2])
	}
	if err := WriteBenchCSV(&cs, f); err != nil {
		t.Fatal(err)
	}
	recs, _ := csv.NewReader(&cs).ReadAll()
	for i, want := range []string{"0.031,0", "0.42,1", "0.05,0", ",", ",", "0.01,0", ","} {
		rec := recs[i+1]
		if got := strings.Join(rec[len(rec)-2:], ","); got != want {
			t.Errorf("CSV %s: load columns %q, want %q", rec[0], got, want)
		}
	}
}

func TestLoadLineRejectsBadValues(t *testing.T) {
	good := "BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32 1 100 ns/op\n"
	for _, line := range []string{
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: 1.5",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: busy",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32 0.1",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: 0.1 retimed",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: 0.1 extra",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: 0.1 rtt",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: 0.1 rtt -5",
		"# load BenchmarkX/backend=cpu/batch=1/threads=2/dtype=float32: 0.1 moved rtt 60",
	} {
		if _, err := readBenchText([]byte(good+line+"\n"), "t.txt"); err == nil || !strings.Contains(err.Error(), "t.txt:2") {
			t.Errorf("%q: error %v, want one naming t.txt:2", line, err)
		}
	}
}
