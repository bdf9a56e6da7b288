package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"vitbench/bench/report"
	"vitbench/bench/results"
)

// cmdCompare compares two result sets and gates: exit 1 on any change of a deterministic
// metric (MACs/op, B/peak, bytes), on a conformance regression (when both sides have
// conformance results) and on a wall-time regression that is significant (Mann–Whitney,
// -alpha) and larger than -max-slowdown, and on a row (timing or conformance) of BASE that
// HEAD lacks, naming it.
func cmdCompare(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("compare", stderr)
	maxSlowdown := fs.String("max-slowdown", "10%", "a significant slowdown larger than this fails the gate: a percentage (10%), a fraction (0.1), or off to report wall time without gating")
	threshold := fs.Float64("threshold", -1, "the same as -max-slowdown, as a fraction (kept for scripts)")
	alpha := fs.Float64("alpha", 0.05, "significance level of the Mann-Whitney U test")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: vitbench compare [flags] BASE HEAD\n\n"+
			"BASE and HEAD are each a vitbench run directory (bench.json or bench.txt, and check.json),\n"+
			"a timing file, a conformance file (vitbench check -json), or several of these joined by commas.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() != 2 {
		return exitUsage, usagef("want BASE and HEAD result sets, got %d arguments", fs.NArg())
	}
	limit, gateTime, err := parseSlowdown(*maxSlowdown)
	if err != nil {
		return exitUsage, err
	}
	if !(*alpha > 0 && *alpha < 1) {
		return exitUsage, usagef("-alpha: want a significance level strictly between 0 and 1, got %v", *alpha)
	}
	if flagSet(fs, "threshold") {
		if !(*threshold >= 0) || math.IsInf(*threshold, 0) {
			return exitUsage, usagef("-threshold: want a fraction ≥ 0 (0.1 = 10%%), got %v", *threshold)
		}
		limit, gateTime = *threshold, true
	}
	base, err := loadResultSet(fs.Arg(0))
	if err != nil {
		return exitUsage, usageError{err}
	}
	head, err := loadResultSet(fs.Arg(1))
	if err != nil {
		return exitUsage, usageError{err}
	}
	haveTiming := len(base.bench) > 0 && len(head.bench) > 0
	haveChecks := len(base.check) > 0 && len(head.check) > 0
	if !haveTiming && !haveChecks {
		return exitUsage, usagef("nothing to compare: BASE and HEAD need timing files or conformance files on both sides")
	}

	var failures []string
	if haveTiming {
		opt := report.CompareOptions{Alpha: *alpha, Threshold: limit}
		if !gateTime {
			opt.Threshold = math.Inf(1)
		}
		res, err := report.Compare(stdout, mergeBench(base.bench), mergeBench(head.bench), opt)
		if err != nil {
			return exitFail, err
		}
		if res.Compared == 0 {
			failures = append(failures, fmt.Sprintf("nothing compared: no timing row of HEAD (%d rows) has the case, backend, batch, threads and dtype of a row of BASE (%d rows)",
				rowCount(head.bench), rowCount(base.bench)))
		}
		for _, r := range res.DeterministicChanges {
			failures = append(failures, "deterministic change: "+r)
		}
		for _, r := range res.Regressions {
			failures = append(failures, "regression: "+r)
		}
		for _, r := range res.Vanished {
			failures = append(failures, "vanished: "+r+": in BASE, missing from HEAD")
		}
	}
	if haveChecks {
		if haveTiming {
			fmt.Fprintln(stdout)
		}
		res, err := report.CompareChecks(stdout, base.check, head.check)
		if err != nil {
			return exitFail, err
		}
		if res.Compared == 0 {
			failures = append(failures, "nothing compared: no conformance row of HEAD has the case, backend and dtype of a row of BASE")
		}
		for _, r := range res.Regressions {
			failures = append(failures, "conformance regression: "+r)
		}
		for _, r := range res.OnlyBase {
			failures = append(failures, "vanished conformance row: "+r+": in BASE, missing from HEAD")
		}
	}
	for _, f := range failures {
		fmt.Fprintln(stderr, f)
	}
	if len(failures) > 0 {
		return exitFail, nil
	}
	return exitOK, nil
}

// flagSet reports whether the flag called name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// rowCount is the number of timing rows in files.
func rowCount(files []results.BenchFile) int {
	n := 0
	for _, f := range files {
		n += len(f.Rows)
	}
	return n
}

// parseSlowdown reads -max-slowdown: "10%", "0.1", or "off"/"none" for no wall-time gate.
func parseSlowdown(s string) (limit float64, gate bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "none", "inf":
		return math.Inf(1), false, nil
	}
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, perr := strconv.ParseFloat(num, 64)
	if perr != nil || v < 0 || math.IsNaN(v) {
		return 0, false, usagef("-max-slowdown: want a percentage (10%%), a fraction (0.1) or off, got %q", s)
	}
	if pct {
		v /= 100
	}
	return v, true, nil
}

// resultSet is one side of a comparison: its timing and conformance files.
type resultSet struct {
	bench []results.BenchFile
	check []results.CheckFile
}

// loadResultSet reads a comma-separated list of result files and run directories. A
// directory contributes bench.json (else bench.txt), torch.txt and check.json where present.
func loadResultSet(spec string) (resultSet, error) {
	var set resultSet
	for _, p := range splitList(spec) {
		st, err := os.Stat(p)
		if err != nil {
			return set, err
		}
		files := []string{p}
		if st.IsDir() {
			files = runDirFiles(p)
			if len(files) == 0 {
				return set, fmt.Errorf("%s: no bench.json, bench.txt, torch.txt or check.json", p)
			}
		}
		for _, f := range files {
			b, c, err := results.ReadAny(f)
			if err != nil {
				return set, err
			}
			if b != nil {
				set.bench = append(set.bench, *b)
			}
			if c != nil {
				set.check = append(set.check, *c)
			}
		}
	}
	if len(set.bench)+len(set.check) == 0 {
		return set, errors.New("no result files named")
	}
	return set, nil
}

// runDirFiles lists the result files of a vitbench run directory: bench.json (exact
// bytes) or else bench.txt, then torch.txt and check.json, those that exist.
func runDirFiles(dir string) []string {
	var out []string
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case exists("bench.json"):
		out = append(out, filepath.Join(dir, "bench.json"))
	case exists("bench.txt"):
		out = append(out, filepath.Join(dir, "bench.txt"))
	}
	for _, name := range []string{"torch.txt", "check.json"} {
		if exists(name) {
			out = append(out, filepath.Join(dir, name))
		}
	}
	return out
}

// mergeBench joins timing files into one: the first file's meta, every file's rows.
func mergeBench(files []results.BenchFile) results.BenchFile {
	out := results.BenchFile{Meta: files[0].Meta}
	for _, f := range files {
		out.Rows = append(out.Rows, f.Rows...)
	}
	return out
}
