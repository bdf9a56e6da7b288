package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"

	"vitbench/bench/results"
)

// writeConformance writes one row per check result (case, backend, dtype, status, error
// figures, tolerance, reason), sorted by case then backend then dtype, and the totals line
// "N OK, N FAIL, N NS". Every row is listed, FAIL rows included, except those of a backend
// that ran nothing at all (every row NS for one reason: no GPU on this machine, say): such
// backends get one line each after the totals, with the count and the reason, instead of a
// row per case.
func writeConformance(w io.Writer, in Input, _ []entry) error {
	var all []results.CheckRow
	for _, f := range in.Check {
		all = append(all, f.Rows...)
	}
	if len(all) == 0 {
		return nil
	}
	idle := results.IdleBackends(all)
	var rows []results.CheckRow
	for _, r := range all {
		if _, ok := idle[r.Backend]; !ok {
			rows = append(rows, r)
		}
	}
	slices.SortStableFunc(rows, func(a, b results.CheckRow) int {
		return cmp.Or(cmp.Compare(a.Case, b.Case), cmp.Compare(a.Backend, b.Backend), cmp.Compare(a.DType, b.DType))
	})
	counts := map[string]int{}
	for _, r := range all {
		if _, ok := idle[r.Backend]; ok {
			counts[r.Status]++
		}
	}
	var cells [][]string
	for _, r := range rows {
		counts[r.Status]++
		reason := r.Reason
		if r.Error {
			reason = "error: " + reason
		}
		measured := r.Status != results.StatusNS
		cells = append(cells, []string{
			r.Case, r.Backend, r.DType, r.Status,
			ifMeasured(measured, fmtSci(r.MaxAbs)), ifMeasured(measured, fmtSci(r.MaxRel)),
			ifMeasured(measured, fmtSci(r.NMSE)), fmtTolerance(r.Tolerance), reason,
		})
	}
	section(w, "Conformance", "Error of the worst output against the reference; a case passes when it is within its tolerance class.")
	if err := writeTable(w, "llllrrrll",
		[]string{"case", "backend", "dtype", "status", "max abs", "max rel", "NMSE", "tolerance", "reason"}, cells); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d OK, %d FAIL, %d NS\n", counts[results.StatusOK], counts[results.StatusFail], counts[results.StatusNS])
	if other := len(all) - counts[results.StatusOK] - counts[results.StatusFail] - counts[results.StatusNS]; other > 0 {
		fmt.Fprintf(w, "%d with an unknown status\n", other)
	}
	for _, b := range slices.Sorted(maps.Keys(idle)) {
		fmt.Fprintf(w, "\nNot run on backend %s: all %d cases NS (rows left out above): %s\n", Inline(b), idle[b].Cases, Inline(idle[b].Reason))
	}
	return nil
}

func ifMeasured(ok bool, s string) string {
	if !ok {
		return dash
	}
	return s
}

// fmtTolerance formats "class (rtol 1.00e-03, atol 1.00e-03, nmse 5.00e-04)".
func fmtTolerance(t results.Tolerance) string {
	if t == (results.Tolerance{}) {
		return dash
	}
	return fmt.Sprintf("%s (rtol %s, atol %s, nmse %s)", cmp.Or(t.Class, "?"), fmtSci(t.RTol), fmtSci(t.ATol), fmtSci(t.NMSE))
}
