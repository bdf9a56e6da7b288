package main

import (
	"fmt"
	"io"
	"math"
	"regexp"

	"vitbench/bench/cases"
	"vitbench/bench/contention"
	"vitbench/bench/report"
	"vitbench/bench/results"
)

// runCases is what `run` times: the quick set (cases.Quick: one case of every op kind) or,
// with full, every built-in case, in both cases only those matching re.
func runCases(re *regexp.Regexp, full bool) []cases.Case {
	if full {
		return cases.Match(re)
	}
	return cases.Quick(re)
}

// runRetime is run's re-timing of contended groups. After a group (vitbench, then the
// reference baselines) has been timed, next looks at the loads of its rows: when any was
// contended (results.RowLoad) and the group has not been re-timed yet, it drops the group's
// rows and reference text and has the loop time the group once more; after that second
// attempt, whatever its load, it marks each of the group's rows re-timed with the first
// attempt's load and moves on. The second attempt's rows are kept, so the two sides of
// every ratio stay from one attempt.
type runRetime struct {
	texts  []*[]byte // reference baselines' text (torch.txt, ...), truncated with the group
	prog   *progress // its total grows by the group's items on a re-time
	stderr io.Writer

	rows, failed int   // where the group's rows start in the BenchFile
	textAt       []int // and in each of texts
	items        int   // progress items of the group
	first        map[rowKey]results.RowLoad
}

// rowKey identifies a timing row within a run.
type rowKey struct {
	caseName, backend string
	batch, threads    int
	dtype             string
}

func keyOf(r results.BenchRow) rowKey {
	return rowKey{r.Case, r.Backend, r.Batch, r.Threads, r.DType}
}

// begin records where the group about to be timed starts and how many progress items it has.
func (rt *runRetime) begin(bf *results.BenchFile, items int) {
	rt.rows, rt.failed, rt.items = len(bf.Rows), len(bf.Failed), items
	rt.textAt = rt.textAt[:0]
	for _, t := range rt.texts {
		rt.textAt = append(rt.textAt, len(*t))
	}
}

// next returns the index of the group to time after group gi: gi again when it is to be
// re-timed, else gi+1. ok false (the run was stopped) never re-times.
func (rt *runRetime) next(gi int, bf *results.BenchFile, ok bool) int {
	rows := rt.groupRows(bf)
	if rt.first != nil { // the second attempt has just run
		for i := rt.rows; i < len(bf.Rows); i++ {
			rt.markRetimed(&bf.Rows[i])
		}
		for j, t := range rt.texts {
			for _, r := range parseText((*t)[rt.textAt[j]:]) {
				if rt.markRetimed(&r) {
					*t = append(*t, []byte(results.LoadLine(r)+"\n")...)
				}
			}
		}
		rt.first = nil
		return gi + 1
	}
	why := retimeReason(rows)
	if !ok || why == "" {
		return gi + 1
	}
	rt.first = map[rowKey]results.RowLoad{}
	for _, r := range rows {
		if r.Load != nil {
			rt.first[keyOf(r)] = *r.Load
		}
	}
	bf.Rows, bf.Failed = bf.Rows[:rt.rows], bf.Failed[:rt.failed]
	for j, t := range rt.texts {
		*t = (*t)[:rt.textAt[j]]
	}
	if rt.prog != nil && rt.prog.n > 0 {
		rt.prog.n += rt.items
	}
	fmt.Fprintf(rt.stderr, "== group %d %s: timing it once more\n", gi+1, why)
	return gi
}

// groupRows returns the rows of the group just timed: vitbench's and the reference baselines'.
func (rt *runRetime) groupRows(bf *results.BenchFile) []results.BenchRow {
	rows := append([]results.BenchRow(nil), bf.Rows[rt.rows:]...)
	for j, t := range rt.texts {
		rows = append(rows, parseText((*t)[rt.textAt[j]:])...)
	}
	return rows
}

// markRetimed records in r that it was re-timed, with the first attempt's load; false when
// the first attempt has no row of that key.
func (rt *runRetime) markRetimed(r *results.BenchRow) bool {
	f, ok := rt.first[keyOf(*r)]
	if !ok {
		return false
	}
	l := results.RowLoad{Foreign: math.NaN(), Retimed: true, FirstForeign: f.Foreign, FirstContended: f.Contended}
	if r.Load != nil {
		l.Foreign, l.Contended = r.Load.Foreign, r.Load.Contended
		l.RoundTripNs, l.CoresMoved = r.Load.RoundTripNs, r.Load.CoresMoved
	}
	r.Load = &l
	return true
}

// retimeReason says why a group with these rows (vitbench's and the baselines') is to be
// timed once more, "" when it is not: a row was timed contended (with the largest foreign
// load), or the CPUs' cache arrangement changed under a ratio: a row's own probes
// disagreed, or one of vitbench's rows and a baseline's row of the same case, batch and
// threads have round trips more than contention.Moved apart, which would set the two
// sides of that ratio on different machines in effect. vitbench's rows differing among
// themselves is no reason: no ratio compares them.
func retimeReason(rows []results.BenchRow) string {
	worst, contended := 0.0, false
	var moved []string
	type side struct {
		name         string
		ours, theirs []float64
	}
	sides := map[rowKey]*side{}
	var order []rowKey // keys in the order of their first row, for a stable message
	for _, r := range rows {
		if r.Load == nil {
			continue
		}
		if r.Load.Contended {
			contended = true
			worst = max(worst, r.Load.Foreign)
		}
		if r.Load.CoresMoved {
			moved = append(moved, fmt.Sprintf("%s on %s moved while it was timed (%.0f ns)", r.Case, r.Backend, r.Load.RoundTripNs))
		}
		if r.Load.RoundTripNs <= 0 {
			continue
		}
		k := rowKey{caseName: r.Case, batch: r.Batch, threads: r.Threads}
		if sides[k] == nil {
			sides[k] = &side{name: r.Case}
			order = append(order, k)
		}
		if r.Backend == report.TorchBackend || r.Backend == report.OrtBackend {
			sides[k].theirs = append(sides[k].theirs, r.Load.RoundTripNs)
		} else {
			sides[k].ours = append(sides[k].ours, r.Load.RoundTripNs)
		}
	}
	if contended {
		return fmt.Sprintf("was timed while other processes used up to %.0f%% of the CPUs", 100*worst)
	}
	for _, k := range order {
		sd := sides[k]
		for _, a := range sd.ours {
			for _, b := range sd.theirs {
				if contention.Differ(a, b) {
					moved = append(moved, fmt.Sprintf("%s: vitbench at %.0f ns, a baseline at %.0f ns", sd.name, a, b))
				}
			}
		}
	}
	if len(moved) > 0 {
		return "was timed while the CPUs' cache arrangement changed (cross-CPU round trip; " + moved[0] + ")"
	}
	return ""
}

// parseText reads the rows of a reference baseline's text; text that does not parse has none
// (the report reads it again and says what is wrong).
func parseText(text []byte) []results.BenchRow {
	if len(text) == 0 {
		return nil
	}
	f, err := results.ParseBench(text, "baseline")
	if err != nil {
		return nil
	}
	return f.Rows
}
