package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"

	"vitbench/bench/results"
)

// CompareOptions sets how Compare judges a change.
type CompareOptions struct {
	// Alpha is the significance level of the Mann–Whitney U test; 0 means 0.05.
	Alpha float64
	// Threshold is the smallest relative change that counts (0.05 = 5%); 0 counts any
	// significant change.
	Threshold float64
	// Worse and Better are the verdict words of a significant change beyond Threshold;
	// "" means "REGRESSION" and "improvement".
	Worse, Better string
}

// CompareResult is Compare's verdict.
type CompareResult struct {
	// Regressions lists the rows significantly (p < Alpha) worse by more than Threshold.
	Regressions []string
	// Improvements lists the rows significantly better by more than Threshold.
	Improvements []string
	// DeterministicChanges lists every change of MACs/op, B/peak (including measured vs
	// not measured) or bytes moved; a gate treats them as hard failures.
	DeterministicChanges []string
	// Geomean is the geometric mean over the rows present in both files of head median time /
	// base median time (1.05 = 5% slower overall); NaN when no row is common.
	Geomean float64
	// Vanished lists the rows of base (case, backend, batch, threads, dtype) that head
	// does not have: a case that stopped being measured; a gate treats them as failures.
	Vanished []string
	// Compared counts the rows present in both files; 0 means nothing was compared.
	Compared int
	// Unjudged lists the rows with a significant change beyond Threshold whose two sides
	// were timed with the CPUs arranged differently (their cross-CPU round trips differ
	// by more than contention.Moved, or one side's own probes disagreed): neither a
	// regression nor an improvement, since on a VM that moves its vCPUs between dies
	// two-thread times move by up to 2× with the arrangement.
	Unjudged []string
}

// rowKey identifies a benchmark across files.
type rowKey struct {
	caseName, backend, dtype string
	batch, threads           int
}

func (k rowKey) String() string {
	return fmt.Sprintf("%s backend=%s batch=%d threads=%d dtype=%s", k.caseName, k.backend, k.batch, k.threads, k.dtype)
}

// Compare writes a benchstat-like A/B table of base against head on w: per (case, backend,
// batch, threads, dtype) the two medians with their 95% intervals, the change of the median,
// the Mann–Whitney p-value (benchmath.AssumeNothing) and "~" when not significant, then a
// geomean row over the rows present in both; rows of base missing from head are
// CompareResult.Vanished. The metric is time per call (lower is better),
// or GFLOP/s per sample (higher is better) where MACs/op differ between the files, since
// then the two runs did different work. The lists of regressions, improvements,
// deterministic changes, vanished rows and rows new in head follow the table. A change
// whose two sides saw different CPU arrangements (movedApart) is listed as not judged
// instead of as a regression or an improvement.
func Compare(w io.Writer, base, head results.BenchFile, opt CompareOptions) (CompareResult, error) {
	t := compareFiles(base, head, opt)
	fmt.Fprintf(w, "Comparison: base %s vs head %s (Mann–Whitney U, alpha %.3g, threshold %.3g%%)\n\n",
		describe(base.Meta), describe(head.Meta), t.opt.Alpha, 100*t.opt.Threshold)
	if err := t.write(w); err != nil {
		return t.res, err
	}
	printList(w, "Regressions", t.res.Regressions)
	printList(w, "Improvements", t.res.Improvements)
	printList(w, "Not judged: the CPUs were arranged differently for base and head "+arrangementMark, t.res.Unjudged)
	printList(w, "Deterministic changes (hard failures)", t.res.DeterministicChanges)
	printList(w, "VANISHED: only in base, missing from head (failures)", t.res.Vanished)
	printList(w, "Only in head", t.onlyHead)
	return t.res, nil
}

// compareTable is the outcome of comparing two timing files: the table's cells, the
// verdict and the rows found on one side only.
type compareTable struct {
	opt      CompareOptions // with defaults filled in
	cells    [][]string
	res      CompareResult
	onlyHead []string
}

// write renders the comparison table.
func (t compareTable) write(w io.Writer) error {
	return writeTable(w, "llrrllrrrll",
		[]string{"case", "backend", "batch", "threads", "dtype", "unit", "base ± 95% CI", "head ± 95% CI", "change", "p", "verdict"}, t.cells)
}

// compareFiles compares every row of base with the row of head having the same key (see
// Compare) and judges each change: significant (p < Alpha) and worse or better by more
// than Threshold.
func compareFiles(base, head results.BenchFile, opt CompareOptions) compareTable {
	if opt.Alpha <= 0 {
		opt.Alpha = 0.05
	}
	worseWord, betterWord := cmp.Or(opt.Worse, "REGRESSION"), cmp.Or(opt.Better, "improvement")
	thr := &benchmath.Thresholds{CompareAlpha: opt.Alpha}
	b, h := indexRows(base), indexRows(head)
	keys := unionKeys(b, h)

	t := compareTable{opt: opt, res: CompareResult{Geomean: math.NaN()}}
	res := &t.res
	var logSum, logBase, logHead float64
	var common int
	for _, k := range keys {
		br, inBase := b[k]
		hr, inHead := h[k]
		switch {
		case !inHead:
			res.Vanished = append(res.Vanished, k.String())
			continue
		case !inBase:
			t.onlyHead = append(t.onlyHead, k.String())
			continue
		}
		res.Compared++
		res.DeterministicChanges = append(res.DeterministicChanges, deterministicChanges(k, br, hr)...)

		if len(br.SamplesNs) == 0 || len(hr.SamplesNs) == 0 {
			t.cells = append(t.cells, []string{k.caseName, k.backend, fmt.Sprint(k.batch), fmt.Sprint(k.threads), k.dtype, "ms",
				fmtMs(br.MedianNs), fmtMs(hr.MedianNs), dash, "no samples", ""})
			continue
		}
		// The statistics are not defined on a NaN, infinite, negative or zero time (the
		// readers refuse such files; this guards rows built in memory): never call them.
		if !validSamples(br.SamplesNs) || !validSamples(hr.SamplesNs) {
			t.cells = append(t.cells, []string{k.caseName, k.backend, fmt.Sprint(k.batch), fmt.Sprint(k.threads), k.dtype, "ms",
				fmtMs(br.MedianNs), fmtMs(hr.MedianNs), dash, "invalid samples (not positive finite times)", ""})
			continue
		}
		m := chooseMetric(br, hr)
		sb := benchmath.NewSample(m.values(br), thr)
		sh := benchmath.NewSample(m.values(hr), thr)
		sumB := benchmath.AssumeNothing.Summary(sb, 0.95)
		sumH := benchmath.AssumeNothing.Summary(sh, 0.95)
		c := benchmath.AssumeNothing.Compare(sb, sh)
		change := sumH.Center/sumB.Center - 1
		significant := c.P < opt.Alpha && finite(change)
		worseBy := change // positive = worse
		if m.higherBetter {
			worseBy = -change
		}
		verdict, delta := "", "~"
		if significant {
			delta = fmt.Sprintf("%+.2f%%", 100*change)
			line := fmt.Sprintf("%s: %s %s -> %s (%+.2f%%, %s)", k, m.unit, m.format(sumB.Center), m.format(sumH.Center), 100*change, c)
			switch {
			case math.Abs(worseBy) > opt.Threshold && movedApart(br, hr):
				verdict = "CPUs moved " + arrangementMark
				res.Unjudged = append(res.Unjudged, fmt.Sprintf("%s (cross-CPU round trip %s -> %s)", line, rttText(br.Load), rttText(hr.Load)))
			case worseBy > opt.Threshold:
				verdict = worseWord
				res.Regressions = append(res.Regressions, line)
			case -worseBy > opt.Threshold:
				verdict = betterWord
				res.Improvements = append(res.Improvements, line)
			}
		}
		t.cells = append(t.cells, []string{k.caseName, k.backend, fmt.Sprint(k.batch), fmt.Sprint(k.threads), k.dtype, m.unit,
			m.format(sumB.Center) + " ± " + sumB.PctRangeString(), m.format(sumH.Center) + " ± " + sumH.PctRangeString(),
			delta, c.String(), verdict})

		if br.MedianNs > 0 && hr.MedianNs > 0 && finite(br.MedianNs) && finite(hr.MedianNs) {
			logSum += math.Log(hr.MedianNs / br.MedianNs)
			logBase += math.Log(br.MedianNs)
			logHead += math.Log(hr.MedianNs)
			common++
		}
	}
	if common > 0 {
		n := float64(common)
		res.Geomean = math.Exp(logSum / n)
		t.cells = append(t.cells, []string{"geomean", "", "", "", "", "ms",
			fmtMs(math.Exp(logBase / n)), fmtMs(math.Exp(logHead / n)),
			fmt.Sprintf("%+.2f%%", 100*(res.Geomean-1)), fmt.Sprintf("n=%d rows", common), ""})
	}
	return t
}

// deterministicChanges lists the changes between two rows of the same key in the metrics
// that do not depend on timing: MACs/op, allocator peak bytes (B/peak, including measured
// vs not measured) and bytes moved per run. Bytes are compared to 0.1%, because an older text file
// carries them only as GB/s (bytes = GB/s × ns, rounded); an exact count differs more
// whenever the formula changes.
func deterministicChanges(k rowKey, b, h results.BenchRow) []string {
	var out []string
	if b.MACs != h.MACs {
		out = append(out, fmt.Sprintf("%s: MACs/op %d -> %d", k, b.MACs, h.MACs))
	}
	if b.PeakBytes != h.PeakBytes {
		out = append(out, fmt.Sprintf("%s: B/peak %d -> %d", k, b.PeakBytes, h.PeakBytes))
	}
	if b.Bytes > 0 && h.Bytes > 0 && math.Abs(float64(h.Bytes-b.Bytes)) > 1e-3*float64(b.Bytes) {
		out = append(out, fmt.Sprintf("%s: bytes/op %d -> %d", k, b.Bytes, h.Bytes))
	}
	return out
}

// validSamples reports whether every sample is a positive, finite time.
func validSamples(ns []float64) bool {
	for _, v := range ns {
		if !(v > 0) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// metric is what Compare judges a row by.
type metric struct {
	unit         string
	higherBetter bool
	values       func(r results.BenchRow) []float64 // a fresh slice (benchmath sorts it)
	format       func(v float64) string
}

var timeMetric = metric{
	unit:   "ms",
	values: func(r results.BenchRow) []float64 { return slices.Clone(r.SamplesNs) },
	format: fmtMs,
}

// chooseMetric returns time, or GFLOP/s when both rows count MACs and the counts differ.
func chooseMetric(b, h results.BenchRow) metric {
	if b.MACs == h.MACs || b.MACs <= 0 || h.MACs <= 0 {
		return timeMetric
	}
	return metric{
		unit:         "GFLOP/s",
		higherBetter: true,
		values: func(r results.BenchRow) []float64 {
			v := make([]float64, len(r.SamplesNs))
			for i, ns := range r.SamplesNs {
				v[i] = 2 * float64(r.MACs) / ns
			}
			return v
		},
		format: func(v float64) string { return fmt.Sprintf("%.4g", v) },
	}
}

// indexRows maps each row to its key; rows with the same key are merged (samples appended).
func indexRows(f results.BenchFile) map[rowKey]results.BenchRow {
	m := map[rowKey]results.BenchRow{}
	for _, r := range f.Rows {
		k := rowKey{r.Case, r.Backend, r.DType, r.Batch, r.Threads}
		if old, ok := m[k]; ok {
			old.SamplesNs = append(slices.Clone(old.SamplesNs), r.SamplesNs...)
			old.MedianNs = results.Summarize(old.SamplesNs).Median
			r = old
		}
		m[k] = r
	}
	return m
}

// unionKeys returns the keys of a and b sorted by case, backend, dtype, batch, threads.
func unionKeys(a, b map[rowKey]results.BenchRow) []rowKey {
	var keys []rowKey
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y rowKey) int {
		return cmp.Or(cmp.Compare(x.caseName, y.caseName), cmp.Compare(x.backend, y.backend),
			cmp.Compare(x.dtype, y.dtype), cmp.Compare(x.batch, y.batch), cmp.Compare(x.threads, y.threads))
	})
	return keys
}

func printList(w io.Writer, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(items))
	for _, it := range items {
		fmt.Fprintf(w, "- %s\n", Inline(it))
	}
}
