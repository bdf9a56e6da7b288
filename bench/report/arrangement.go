package report

import (
	"fmt"
	"io"
	"math"

	"vitbench/bench/contention"
	"vitbench/bench/results"
)

// arrangementMark follows a speed-up whose two sides were timed with the CPUs arranged
// differently: their cross-CPU round trips (results.RowLoad.RoundTripNs) differ by more
// than contention.Moved, or one side's own probes disagreed (CoresMoved). On a VM whose
// vCPUs the host sometimes places on one die and sometimes on two, such a ratio compares
// two different machines in effect.
const arrangementMark = "§"

// movedApart reports whether the timings of a and b saw different CPU arrangements.
func movedApart(a, b results.BenchRow) bool {
	if a.Load == nil || b.Load == nil {
		return false
	}
	return a.Load.CoresMoved || b.Load.CoresMoved || contention.Differ(a.Load.RoundTripNs, b.Load.RoundTripNs)
}

// speedupCell is the speed-up of ours over theirs (theirs' median / ours), followed by
// " §" when the two were timed with the CPUs arranged differently.
func speedupCell(theirs, ours entry) string {
	s := fmtSpeedup(theirs.MedianNs, ours.MedianNs)
	if s != dash && movedApart(theirs.BenchRow, ours.BenchRow) {
		s += " " + arrangementMark
	}
	return s
}

// writeArrangementNote writes, under a table, the footnote of its § marks: each pair of
// shown rows and their baselines (PyTorch, ONNX Runtime) timed with the CPUs arranged
// differently, with both round trips; nothing when there is none.
func writeArrangementNote(w io.Writer, es, shown []entry) {
	var hit []string
	add := func(ours entry, theirs entry, ok bool) {
		if !ok || !movedApart(ours.BenchRow, theirs.BenchRow) {
			return
		}
		hit = appendNew(hit, fmt.Sprintf("%s on %s %s against %s %s", ours.Case, ours.Backend, rttText(ours.Load),
			theirs.Backend, rttText(theirs.Load)))
	}
	for _, e := range shown {
		t, ok := torchFor(es, e)
		add(e, t, ok)
		o, ok := ortFor(es, e)
		add(e, o, ok)
	}
	if len(hit) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", Inline(arrangementMark+" The two sides of this ratio were timed with the CPUs arranged differently "+
		"(cross-CPU cache-line round trip, probed before and after each timing; \"moved\": the probes around one timing disagreed): "+
		noteList(hit)+". On a VM whose vCPUs sometimes share a last-level cache and sometimes do not, multi-threaded "+
		"times move by up to 2× with it; `vitbench run` re-times such a group once."))
}

// rttText is a row's round trip for the note: "61 ns", "370 ns (moved)", or "not probed".
func rttText(l *results.RowLoad) string {
	if l == nil || l.RoundTripNs <= 0 {
		return "not probed"
	}
	s := fmt.Sprintf("%.0f ns", l.RoundTripNs)
	if l.CoresMoved {
		s += " (moved)"
	}
	return s
}

// arrangementSummary is the header's line about the CPUs' arrangement: the range of the
// rows' cross-CPU round trips and how many rows' probes disagreed; "" when no row was
// probed.
func arrangementSummary(in Input) string {
	lo, hi, n, moved := math.Inf(1), 0.0, 0, 0
	for _, f := range in.Bench {
		for _, r := range f.Rows {
			if r.Load == nil || r.Load.RoundTripNs <= 0 {
				continue
			}
			n++
			lo, hi = min(lo, r.Load.RoundTripNs), max(hi, r.Load.RoundTripNs)
			if r.Load.CoresMoved {
				moved++
			}
		}
	}
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("%.0f–%.0f ns over %d rows", lo, hi, n)
	if lo == hi {
		s = fmt.Sprintf("%.0f ns over %d rows", lo, n)
	}
	if contention.Differ(lo, hi) {
		s += " (the CPUs' arrangement changed during the run; ratios whose sides differ are marked " + arrangementMark + ")"
	}
	if moved > 0 {
		s += fmt.Sprintf(", %d rows with the arrangement changing while they were timed", moved)
	}
	return s
}
