package report

import (
	"fmt"
	"strings"

	"vitbench/bench/results"
)

// agreement summarises how a network's outputs agree with the reference on (case,
// backend, dtype), from the conformance results: the status, the NMSE of the worst output
// and, for networks whose check compares top-1 classes (CaseInfo.Top1), whether they are
// the same — "OK, NMSE 5.88e-13, top-1 same". Rows of the same dtype are preferred, else
// any dtype; the worst status wins. It returns dash when the case was not checked.
func (in Input) agreement(caseName, backend, dtype string) string {
	best := in.checkRow(caseName, backend, dtype)
	if best == nil {
		return dash
	}
	if best.Status == results.StatusNS {
		return best.Status
	}
	s := fmt.Sprintf("%s, NMSE %s", best.Status, fmtSci(best.NMSE))
	top1 := strings.Contains(best.Reason, "top-1")
	switch {
	case top1:
		_, detail, _ := strings.Cut(best.Reason, "top-1 class ")
		s += ", top-1 " + detail
	case in.Cases[caseName].Top1 && best.Status == results.StatusOK:
		s += ", top-1 same"
	}
	return s
}

// checkRow returns the conformance row of (case, backend, dtype) the agreement cells are
// read from: a row of the same dtype if any, else of any dtype, the worst status among those
// (FAIL, then OK, then NS); nil when the case was not checked on that backend.
func (in Input) checkRow(caseName, backend, dtype string) *results.CheckRow {
	var best *results.CheckRow
	exact := false
	for fi := range in.Check {
		for ri := range in.Check[fi].Rows {
			r := &in.Check[fi].Rows[ri]
			if r.Case != caseName || r.Backend != backend {
				continue
			}
			same := r.DType == dtype
			switch {
			case best == nil, same && !exact:
				best, exact = r, same
			case same == exact && worse(best.Status, r.Status) != best.Status:
				best = r
			}
		}
	}
	return best
}
