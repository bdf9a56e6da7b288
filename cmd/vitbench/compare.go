package main

import (
	"fmt"
	"io"

	"vitbench/bench/report"
	"vitbench/bench/results"
)

func cmdCompare(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("compare", stderr)
	threshold := fs.Float64("threshold", 0.05, "a significant slowdown larger than this fraction fails the gate")
	alpha := fs.Float64("alpha", 0.05, "significance level of the Mann-Whitney U test")
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 2 {
		return exitUsage, usagef("want BASE and HEAD result files, got %d arguments", fs.NArg())
	}
	base, err := results.ReadBench(fs.Arg(0))
	if err != nil {
		return exitUsage, usageError{err}
	}
	head, err := results.ReadBench(fs.Arg(1))
	if err != nil {
		return exitUsage, usageError{err}
	}
	res, err := report.Compare(stdout, base, head, report.CompareOptions{Alpha: *alpha, Threshold: *threshold})
	if err != nil {
		return exitFail, err
	}
	if len(res.Regressions) > 0 || len(res.DeterministicChanges) > 0 {
		for _, r := range res.DeterministicChanges {
			fmt.Fprintf(stderr, "deterministic change: %s\n", r)
		}
		for _, r := range res.Regressions {
			fmt.Fprintf(stderr, "regression: %s\n", r)
		}
		return exitFail, nil
	}
	return exitOK, nil
}
