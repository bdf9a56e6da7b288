package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"vitbench/bench/results"
)

// CheckCompareResult is CompareChecks's verdict.
type CheckCompareResult struct {
	// Regressions lists the (case, backend, dtype) that fail in head but did not fail in
	// base (OK, NS or not checked there), and those OK in base but not supported in head;
	// a gate treats them as hard failures.
	Regressions []string
	// Drift lists the rows OK on both sides whose NMSE grew by DriftFactor
	// or more (drift.go); they are in Regressions too.
	Drift []string
	// Fixed lists those failing in base and OK in head.
	Fixed []string
	// StillFailing lists those failing in both.
	StillFailing []string
	// OnlyBase lists those checked in base only (a case removed, or a narrower -run
	// filter in head); a gate treats them as failures, as vanished cases. OnlyHead lists
	// those checked in head only that did not fail (new cases).
	OnlyBase, OnlyHead []string
	// Compared counts the rows present in both.
	Compared int
}

// checkKey identifies a conformance row across files.
type checkKey struct{ caseName, backend, dtype string }

func (k checkKey) String() string {
	return fmt.Sprintf("%s backend=%s dtype=%s", k.caseName, k.backend, k.dtype)
}

// CompareChecks compares the conformance results of base and head per (case, backend,
// dtype) and writes on w a table of the rows whose status changed, then the lists of
// regressions, fixes, rows failing in both and rows checked on one side only, after a
// totals line. Where a file holds a key twice, the worse status counts.
func CompareChecks(w io.Writer, base, head []results.CheckFile) (CheckCompareResult, error) {
	b, h := indexChecks(base), indexChecks(head)
	keys := make([]checkKey, 0, len(b)+len(h))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range h {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y checkKey) int {
		return cmp.Or(cmp.Compare(x.caseName, y.caseName), cmp.Compare(x.backend, y.backend), cmp.Compare(x.dtype, y.dtype))
	})
	var res CheckCompareResult
	var cells [][]string
	for _, k := range keys {
		br, inBase := b[k]
		hr, inHead := h[k]
		switch {
		case !inHead:
			res.OnlyBase = append(res.OnlyBase, k.String())
			continue
		case inBase:
			res.Compared++
		}
		baseStatus := dash
		if inBase {
			baseStatus = br.Status
		}
		verdict := ""
		switch {
		case hr.Status == results.StatusFail && baseStatus == results.StatusFail:
			res.StillFailing = append(res.StillFailing, fmt.Sprintf("%s: %s", k, hr.Reason))
		case hr.Status != results.StatusOK && hr.Status != results.StatusNS:
			verdict = "REGRESSION"
			res.Regressions = append(res.Regressions, fmt.Sprintf("%s: %s -> %s (%s)", k, baseStatus, hr.Status, hr.Reason))
		case hr.Status == results.StatusNS && baseStatus == results.StatusOK:
			verdict = "REGRESSION"
			res.Regressions = append(res.Regressions, fmt.Sprintf("%s: OK -> NS (%s)", k, hr.Reason))
		case hr.Status == results.StatusOK && baseStatus == results.StatusFail:
			verdict = "fixed"
			res.Fixed = append(res.Fixed, k.String())
		}
		if line, drift := nmseDrift(k, br, hr); inBase && drift {
			verdict = "NMSE DRIFT"
			res.Drift, res.Regressions = append(res.Drift, line), append(res.Regressions, line)
		}
		if !inBase && verdict == "" {
			res.OnlyHead = append(res.OnlyHead, fmt.Sprintf("%s: %s", k, hr.Status))
			continue
		}
		if baseStatus == hr.Status && verdict == "" {
			continue
		}
		baseNMSE := dash
		if inBase && br.Status != results.StatusNS {
			baseNMSE = fmtSci(br.NMSE)
		}
		cells = append(cells, []string{k.caseName, k.backend, k.dtype, baseStatus, hr.Status, baseNMSE,
			ifMeasured(hr.Status != results.StatusNS, fmtSci(hr.NMSE)), verdict})
	}
	fmt.Fprintf(w, "Conformance: %d rows in both, %d status changes\n", res.Compared, len(cells))
	if len(cells) > 0 {
		fmt.Fprintln(w)
		if err := writeTable(w, "llllllrl", []string{"case", "backend", "dtype", "base", "head", "base NMSE", "head NMSE", "verdict"}, cells); err != nil {
			return res, err
		}
	}
	printList(w, "Conformance regressions (hard failures)", res.Regressions)
	printList(w, fmt.Sprintf("NMSE drift (OK, but %d× or more the base's)", DriftFactor), res.Drift)
	printList(w, "Fixed", res.Fixed)
	printList(w, "Failing in both", res.StillFailing)
	printList(w, "VANISHED: checked only in base, missing from head (failures)", res.OnlyBase)
	printList(w, "Checked only in head", res.OnlyHead)
	return res, nil
}

// indexChecks maps each conformance row to its key, keeping the worse status of duplicates.
func indexChecks(files []results.CheckFile) map[checkKey]results.CheckRow {
	m := map[checkKey]results.CheckRow{}
	for _, f := range files {
		for _, r := range f.Rows {
			k := checkKey{r.Case, r.Backend, r.DType}
			if old, ok := m[k]; ok && worse(old.Status, r.Status) == old.Status {
				continue
			}
			m[k] = r
		}
	}
	return m
}
