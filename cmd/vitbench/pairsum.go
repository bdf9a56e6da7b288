package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"vitbench/bench/results"
)

// pairRun is one directory written by `vitbench pair`: its two result files read back.
type pairRun struct {
	Dir     string
	VB, ORT results.BenchFile
}

// pairKey names a case of a pair run: the case at one batch size.
type pairKey struct {
	Case  string
	Batch int
}

// runRatio is what one pair run says of one case: the median of its pair-by-pair ratios
// (ORT's time over vitbench's) with the 95% interval of that median, or why it has none.
type runRatio struct {
	Present bool // the case is in the run at all
	Ratio   results.Summary
	Why     string // FAIL or NS text when the run has no pairs for the case
}

// cmdPairs reads the bench.txt and ort.txt of several `vitbench pair` runs (taken at
// different hours, say) and writes one Markdown table: each case's median paired ratio and
// interval run by run, the lowest and the median of the runs, and, with -target, how many
// runs reach it. The ratios are recomputed pair by pair from the samples, which the two
// files hold in pair order.
func cmdPairs(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("pairs", stderr)
	out := fs.String("o", "", "write the table to this file (atomically) instead of stdout")
	target := fs.Float64("target", 0, "a speed-up over ONNX Runtime to hold every case to: the table counts each case's runs whose median ratio reaches it, and the exit status is 1 when a run of a case falls short or has no pairs (0 = no target)")
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() == 0 {
		return exitUsage, usagef("name at least one directory written by vitbench pair -o")
	}
	if *target < 0 || math.IsNaN(*target) || math.IsInf(*target, 0) {
		return exitUsage, usagef("-target %v: want a positive speed-up, or 0 for none", *target)
	}
	if err := checkOutputs("-o", *out); err != nil {
		return exitUsage, err
	}
	runs := make([]pairRun, 0, fs.NArg())
	for _, dir := range fs.Args() {
		r, err := readPairRun(dir)
		if err != nil {
			return exitUsage, usageError{err}
		}
		runs = append(runs, r)
	}
	keys, table, err := pairTable(runs)
	if err != nil {
		return exitUsage, usageError{err}
	}
	md := pairsSummaryMarkdown(runs, keys, table, *target)
	if *out == "" {
		if _, err := io.WriteString(stdout, md); err != nil {
			return exitWrite, err
		}
	} else if err := saveResult(*out, func(w io.Writer) error { _, err := io.WriteString(w, md); return err }, stdout); err != nil {
		return exitWrite, err
	}
	if *target > 0 && len(shortCases(keys, table, *target)) > 0 {
		return exitFail, nil
	}
	return exitOK, nil
}

// readPairRun reads dir/bench.txt (vitbench's samples) and dir/ort.txt (ONNX Runtime's).
func readPairRun(dir string) (pairRun, error) {
	r := pairRun{Dir: dir}
	if fi, err := os.Stat(dir); err != nil {
		return r, err
	} else if !fi.IsDir() {
		return r, fmt.Errorf("%s: not a directory (want one written by vitbench pair -o)", dir)
	}
	var err error
	if r.VB, err = results.ReadBench(filepath.Join(dir, "bench.txt")); err != nil {
		return r, err
	}
	if r.ORT, err = results.ReadBench(filepath.Join(dir, "ort.txt")); err != nil {
		return r, err
	}
	return r, nil
}

// pairTable matches each run's vitbench rows with its ONNX Runtime rows case by case and
// returns the cases in order of first appearance with each run's ratio. A case whose two
// sides hold different numbers of samples, or a vitbench file with two rows of one case,
// is not a pair run's: an error naming the file and the case.
func pairTable(runs []pairRun) ([]pairKey, map[pairKey][]runRatio, error) {
	var keys []pairKey
	table := map[pairKey][]runRatio{}
	add := func(k pairKey) []runRatio {
		if _, ok := table[k]; !ok {
			keys = append(keys, k)
			table[k] = make([]runRatio, len(runs))
		}
		return table[k]
	}
	for i, r := range runs {
		vbFile, ortFile := filepath.Join(r.Dir, "bench.txt"), filepath.Join(r.Dir, "ort.txt")
		ort := map[pairKey]results.BenchRow{}
		for _, row := range r.ORT.Rows {
			if row.Backend != ortBackend {
				return nil, nil, fmt.Errorf("%s: a row of backend %q (%s); want ONNX Runtime's rows (%q) only", ortFile, row.Backend, row.Case, ortBackend)
			}
			ort[pairKey{row.Case, row.Batch}] = row
		}
		for _, row := range r.VB.Rows {
			k := pairKey{row.Case, row.Batch}
			cells := add(k)
			if cells[i].Present {
				return nil, nil, fmt.Errorf("%s: two rows of %s at batch %d; a pair run has one per case", vbFile, k.Case, k.Batch)
			}
			o, ok := ort[k]
			if !ok {
				return nil, nil, fmt.Errorf("%s: no row of %s at batch %d beside %s's", ortFile, k.Case, k.Batch, vbFile)
			}
			if len(o.SamplesNs) != len(row.SamplesNs) {
				return nil, nil, fmt.Errorf("%s and %s: %s at batch %d has %d and %d samples; a pair run has as many on each side",
					vbFile, ortFile, k.Case, k.Batch, len(row.SamplesNs), len(o.SamplesNs))
			}
			ratios := make([]float64, len(row.SamplesNs))
			for j, v := range row.SamplesNs {
				ratios[j] = o.SamplesNs[j] / v
			}
			cells[i] = runRatio{Present: true, Ratio: results.Summarize(ratios)}
		}
		for _, f := range r.VB.Failed {
			k := pairKey{f.Case, f.Batch}
			cells := add(k)
			if cells[i].Present {
				continue
			}
			why := "FAIL: " + f.Error
			if f.NS {
				why = "NS: " + strings.TrimPrefix(f.Error, "no pair: ")
			}
			cells[i] = runRatio{Present: true, Why: why}
		}
	}
	return keys, table, nil
}

// runMedians returns the medians of the runs that have pairs for the case.
func runMedians(cells []runRatio) []float64 {
	var m []float64
	for _, c := range cells {
		if c.Present && c.Why == "" {
			m = append(m, c.Ratio.Median)
		}
	}
	return m
}

// shortCases returns the cases with a run whose median ratio is under target, or a run
// with no pairs for them (a FAIL or NS); a case absent from a run is not counted.
func shortCases(keys []pairKey, table map[pairKey][]runRatio, target float64) []pairKey {
	var short []pairKey
	for _, k := range keys {
		if reach, counted := runsReaching(table[k], target); reach < counted {
			short = append(short, k)
		}
	}
	return short
}

// runsReaching counts the runs that have the case (counted) and those among them whose
// median ratio is target or more (reach); a run with no pairs for it (FAIL or NS) does not
// reach it.
func runsReaching(cells []runRatio, target float64) (reach, counted int) {
	for _, c := range cells {
		if c.Present {
			counted++
			if c.Why == "" && c.Ratio.Median >= target {
				reach++
			}
		}
	}
	return reach, counted
}

// pairsSummaryMarkdown is the table cmdPairs writes.
func pairsSummaryMarkdown(runs []pairRun, keys []pairKey, table map[pairKey][]runRatio, target float64) string {
	var sb strings.Builder
	sb.WriteString("# vitbench against ONNX Runtime over several paired runs\n\n")
	sb.WriteString("| run | directory | date | vitbench commit | machine | cases |\n|---:|---|---|---|---|---:|\n")
	for i, r := range runs {
		fmt.Fprintf(&sb, "| %d | %s | %s | %s | %s | %d |\n", i+1, mdCell(r.Dir), mdCell(cmp.Or(r.VB.Meta.Date, "unknown")),
			mdCell(cmp.Or(r.VB.Meta.Commit, "unknown")), mdCell(cmp.Or(r.VB.Meta.Machine, r.VB.Meta.CPU, "unknown")), len(r.VB.Rows)+len(r.VB.Failed))
	}
	sb.WriteString("\n| case | batch |")
	for i := range runs {
		fmt.Fprintf(&sb, " run %d |", i+1)
	}
	sb.WriteString(" lowest | median of runs |")
	if target > 0 {
		fmt.Fprintf(&sb, " runs ≥ %.3g× |", target)
	}
	sb.WriteString("\n|---|---:|")
	sb.WriteString(strings.Repeat("---:|", len(runs)+2))
	if target > 0 {
		sb.WriteString("---:|")
	}
	sb.WriteString("\n")
	for _, k := range keys {
		cells := table[k]
		fmt.Fprintf(&sb, "| %s | %d |", k.Case, k.Batch)
		for _, c := range cells {
			switch {
			case !c.Present:
				sb.WriteString(" — |")
			case c.Why != "":
				fmt.Fprintf(&sb, " %s |", mdCell(c.Why))
			default:
				fmt.Fprintf(&sb, " %.3f× [%s] |", c.Ratio.Median, intervalText(c.Ratio))
			}
		}
		med := runMedians(cells)
		if len(med) == 0 {
			sb.WriteString(" | |")
		} else {
			fmt.Fprintf(&sb, " %.3f× | %.3f× |", slices.Min(med), results.Summarize(med).Median)
		}
		if target > 0 {
			reach, counted := runsReaching(cells, target)
			mark := ""
			if reach < counted {
				mark = " (short)"
			}
			fmt.Fprintf(&sb, " %d of %d%s |", reach, counted, mark)
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\nEach run's cell is the median of its pair-by-pair ratios (ONNX Runtime's time over vitbench's: above 1, vitbench is faster) " +
		"with the 95% interval of that median (— below 6 pairs), recomputed from the run's bench.txt and ort.txt; — alone: the case is not in that run. " +
		"The runs differ by what the machine was doing at the time, which the intervals do not cover: the lowest run is the ratio a verdict can count on.\n")
	return sb.String()
}
