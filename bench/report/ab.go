package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"vitbench/bench/results"
)

// writeAB writes the A/B section: two result sets compared row by row with the change of
// the median, its 95% interval, the Mann–Whitney p-value and a geomean row (Compare's
// table). The base is Input.Base when set, against every vitbench row of the report;
// otherwise PyTorch is the base and each other backend on the same machine the head, for
// the cases, batch sizes and thread counts both measured. The section is left out when
// there is nothing to pair.
func writeAB(w io.Writer, in Input, es []entry) error {
	base, head, title, note := abSets(in, es)
	if len(base.Rows) == 0 || len(head.Rows) == 0 {
		return nil
	}
	t := compareFiles(base, head, CompareOptions{Threshold: 0.05, Worse: "slower", Better: "faster"})
	if len(t.cells) == 0 {
		return nil
	}
	section(w, title, note+" Change of the median time per call with each median's 95% interval; p is the "+
		"Mann–Whitney U test (benchmath), ~ when not significant at α = 0.05; a verdict marks significant changes beyond 5%.")
	if err := t.write(w); err != nil {
		return err
	}
	rows := len(t.cells)
	if !math.IsNaN(t.res.Geomean) {
		rows-- // the geomean row
	}
	fmt.Fprintf(w, "\n%d faster, %d slower, %d rows compared", len(t.res.Improvements), len(t.res.Regressions), rows)
	if len(t.res.Vanished)+len(t.onlyHead) > 0 {
		fmt.Fprintf(w, "; %d only in base, %d only in head", len(t.res.Vanished), len(t.onlyHead))
	}
	fmt.Fprintln(w)
	return nil
}

// abSets builds the two sides of the A/B section and its title and note.
func abSets(in Input, es []entry) (base, head results.BenchFile, title, note string) {
	if in.Base != nil {
		base = *in.Base
		for _, e := range es {
			if !isReference(e.Backend) {
				head.Rows = append(head.Rows, e.BenchRow)
			}
		}
		name := cmp.Or(in.BasePath, "the base file")
		return base, head, "A/B: base → this report", fmt.Sprintf("Base: `%s` (%s); head: the vitbench rows above.", name, describe(base.Meta))
	}
	// PyTorch's row stands as base once per vitbench backend measured beside it, renamed
	// to that backend so that the two rows pair up.
	type pair struct{ base, head entry }
	var pairs []pair
	machines := map[string]bool{}
	for _, e := range es {
		if isReference(e.Backend) {
			continue
		}
		if t, ok := torchFor(es, e); ok && t.DType == e.DType {
			pairs = append(pairs, pair{t, e})
			machines[e.machine] = true
		}
	}
	for _, p := range pairs {
		b, h := p.base.BenchRow, p.head.BenchRow
		b.Backend = h.Backend
		if len(machines) > 1 {
			b.Case, h.Case = p.head.machine+": "+b.Case, p.head.machine+": "+h.Case
		}
		base.Rows = append(base.Rows, b)
		head.Rows = append(head.Rows, h)
	}
	slices.SortStableFunc(head.Rows, func(a, b results.BenchRow) int { return cmp.Compare(a.Case, b.Case) })
	return base, head, "A/B: PyTorch → vitbench",
		"Base: PyTorch (reference/bench_torch.py); head: vitbench on the same machine, same case, batch, threads and dtype."
}
