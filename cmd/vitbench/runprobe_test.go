package main

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"vitbench/bench/results"
)

// rttRow is a quiet timed row whose probes saw round trip rtt (moved: they disagreed).
func rttRow(name, backend string, rtt float64, moved bool) results.BenchRow {
	r := loadRow(name, backend, 0.01, false)
	r.Load.RoundTripNs, r.Load.CoresMoved = rtt, moved
	return r
}

// TestRetimeWhenCoresMoved: a quiet group is timed once more when a vitbench row and the
// baseline row of the same case have round trips more than contention.Moved apart
// (vitbench at 60 ns, ORT at 370: the two sides of the ratio saw different CPU
// arrangements) or when one row's own probes disagreed; rows whose round trips agree
// within the factor, vitbench's rows among themselves and rows of different cases are
// not, and the re-timed rows keep their round trips.
func TestRetimeWhenCoresMoved(t *testing.T) {
	text := func(rows ...results.BenchRow) []byte {
		var b bytes.Buffer
		if err := results.WriteBenchText(&b, results.BenchFile{Rows: rows}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var ort []byte
	var stderr bytes.Buffer
	rt := &runRetime{texts: []*[]byte{&ort}, prog: &progress{w: io.Discard, now: time.Now}, stderr: &stderr}
	var bf results.BenchFile

	rt.begin(&bf, 1)
	bf.Rows = append(bf.Rows, rttRow("a", "cpu", 60, false))
	ort = append(ort, text(rttRow("a", "ort", 370, false))...)
	if got := rt.next(0, &bf, true); got != 0 {
		t.Fatalf("round trips 60 and 370 ns: next = %d, want 0 (re-time)", got)
	}
	if !strings.Contains(stderr.String(), "cache arrangement changed (cross-CPU round trip; a: vitbench at 60 ns, a baseline at 370 ns)") {
		t.Errorf("stderr: %q", stderr.String())
	}
	rt.begin(&bf, 1)
	bf.Rows = append(bf.Rows, rttRow("a", "cpu", 61, false))
	ort = append(ort, text(rttRow("a", "ort", 66, false))...)
	if got := rt.next(0, &bf, true); got != 1 {
		t.Fatalf("second attempt: next = %d, want 1", got)
	}
	if l := bf.Rows[0].Load; !l.Retimed || l.RoundTripNs != 61 || l.CoresMoved {
		t.Errorf("re-timed row's load %+v: want re-timed with its 61 ns round trip", *l)
	}

	for _, c := range []struct {
		rows []results.BenchRow
		want bool
	}{
		{[]results.BenchRow{rttRow("b", "cpu", 60, false), rttRow("b", "ort", 110, false)}, false},
		{[]results.BenchRow{rttRow("b", "cpu", 60, true), rttRow("b", "ort", 62, false)}, true},
		{[]results.BenchRow{rttRow("b", "cpu", 60, false), loadRow("b", "torch", 0.01, false)}, false},
		// vitbench's rows apart from each other: no ratio compares them.
		{[]results.BenchRow{rttRow("b", "cpu", 60, false), rttRow("b", "cpu-bf16", 370, false)}, false},
		// Apart, but of different cases: not one ratio.
		{[]results.BenchRow{rttRow("b", "cpu", 60, false), rttRow("c", "ort", 370, false)}, false},
	} {
		if got := retimeReason(c.rows) != ""; got != c.want {
			t.Errorf("rows %+v %+v: re-time %v, want %v", *c.rows[0].Load, *c.rows[1].Load, got, c.want)
		}
	}
}

// TestWithRoundTrips: a baseline's rows gain the probes taken around it (the larger round
// trip, moved when they disagree) and keep the foreign load the baseline measured; with
// neither probe measured the text is unchanged.
func TestWithRoundTrips(t *testing.T) {
	var b bytes.Buffer
	if err := results.WriteBenchText(&b, results.BenchFile{Rows: []results.BenchRow{loadRow("a", "ort", 0.02, false)}}); err != nil {
		t.Fatal(err)
	}
	raw := b.Bytes()
	if got := withRoundTrips(raw, math.NaN(), math.NaN()); !bytes.Equal(got, raw) {
		t.Errorf("no probes, yet the text changed:\n%s", got)
	}
	f, err := results.ParseBench(withRoundTrips(raw, 60, 370), "ort.txt")
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Rows[0].Load; l == nil || l.Foreign != 0.02 || l.RoundTripNs != 370 || !l.CoresMoved {
		t.Errorf("load %+v: want foreign 0.02, round trip 370 ns, moved", l)
	}
}
