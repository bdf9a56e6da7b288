package report

import (
	"fmt"
	"io"
	"strings"

	"vitbench/bench/results"
)

// contendedMark follows a time taken while other processes used more than the threshold
// of the machine's CPUs (results.RowLoad.Contended); the note under the table says so.
const contendedMark = "‡"

// loadMark returns " ‡" when r was timed contended, else "".
func loadMark(r results.BenchRow) string {
	if r.Load != nil && r.Load.Contended {
		return " " + contendedMark
	}
	return ""
}

// contentionCell adds "contended ‡" to a spread cell when e, or the PyTorch row paired with
// it, was timed contended.
func contentionCell(cell string, es []entry, e entry) string {
	var who []string
	if loadMark(e.BenchRow) != "" {
		who = append(who, "contended")
	}
	if t, ok := torchFor(es, e); ok && loadMark(t.BenchRow) != "" {
		who = append(who, "PyTorch contended")
	}
	if len(who) == 0 {
		return cell
	}
	return strings.TrimPrefix(cell+", "+strings.Join(who, ", ")+" "+contendedMark, ", ")
}

// writeContentionNote writes, under a table, the footnote of its ‡ marks: which of shown
// (and their PyTorch rows) were timed under foreign load and how much, and which were
// re-timed; nothing when none was.
func writeContentionNote(w io.Writer, es, shown []entry) {
	var hit []string
	add := func(e entry) {
		l := e.Load
		if l == nil || (!l.Contended && !l.Retimed) {
			return
		}
		s := fmt.Sprintf("%s on %s %s", e.Case, e.Backend, pct(l.Foreign))
		if l.Retimed {
			s += fmt.Sprintf(" (re-timed; first attempt %s)", pct(l.FirstForeign))
		}
		hit = appendNew(hit, s)
	}
	for _, e := range shown {
		add(e)
		if t, ok := torchFor(es, e); ok {
			add(t)
		}
	}
	if len(hit) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", Inline(contendedMark+" Timed while other processes used more than 10% of the CPUs (foreign load over the timing window, from /proc/stat): "+
		noteList(hit)+". Its ratios are less trustworthy; `vitbench run` re-times such a group once and keeps the second attempt."))
}

// noteList joins a footnote's items with "; ", the first 8 of them, then ", and N more".
func noteList(items []string) string {
	const most = 8
	if len(items) <= most {
		return strings.Join(items, "; ")
	}
	return strings.Join(items[:most], "; ") + fmt.Sprintf(", and %d more", len(items)-most)
}

// pct formats a load as a percentage; dash when not measured.
func pct(v float64) string {
	if !finite(v) {
		return dash
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// contentionSummary is the header's line about foreign load: how many rows were timed
// contended and how many re-timed; "" when every load was below the threshold or none was
// measured.
func contentionSummary(in Input) string {
	n, re, measured := 0, 0, 0
	for _, f := range in.Bench {
		for _, r := range f.Rows {
			if r.Load == nil {
				continue
			}
			measured++
			if r.Load.Contended {
				n++
			}
			if r.Load.Retimed {
				re++
			}
		}
	}
	if measured == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d rows timed under more than 10%% foreign CPU load (marked %s), %d re-timed", n, measured, contendedMark, re)
}
