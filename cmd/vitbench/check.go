package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"vitbench/bench/fixture"
	"vitbench/bench/npy"
	"vitbench/bench/report"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

// checkConfig is what `check` and `run` share.
type checkConfig struct {
	backends string
	fixtures string
	run      *regexp.Regexp
	threads  int
	limits   npy.Limits
	maxBytes int64 // memory budget of one case (0: runner.DefaultMaxBytes)
	verbose  bool
	stop     *stopper // interrupts the case in progress on SIGINT/SIGTERM; nil never stops
}

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("check", stderr)
	backend := fs.String("backend", "cpu", "backends to check, comma-separated, or all")
	dir := fs.String("fixtures", defaultFixtures, "fixture directory (any tree in the format of fixtures/FORMAT.md); default ./fixtures, else the fixtures/ next to or above the executable")
	runRE := fs.String("run", "", "only cases whose name matches this regular expression")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	threads := fs.Int("threads", 0, "CPU threads (0 = all available)")
	isa := fs.String("isa", "", "force the CPU ISA path (avx512, avx2, go)")
	maxBytes := fs.Int64("max-array-bytes", npy.DefaultMaxBytes, "largest array a fixture may declare, in bytes")
	budget := maxBytesFlag(fs)
	verbose := fs.Bool("v", false, "print each case's provenance and timing")
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if err := applyISA(*isa); err != nil {
		return exitUsage, err
	}
	re, err := compileRun(*runRE)
	if err != nil {
		return exitUsage, err
	}
	if err := checkOutputs("-json", *jsonOut); err != nil {
		return exitUsage, err
	}
	if *dir, err = fixturesFlag(fs, *dir); err != nil {
		return exitUsage, err
	}
	stop := watchSignals()
	defer stop.Close()
	cf, code, err := runCheck(checkConfig{backends: *backend, fixtures: *dir, run: re, threads: *threads,
		limits: npy.Limits{MaxBytes: *maxBytes}, maxBytes: int64(*budget), verbose: *verbose, stop: stop}, stdout, stderr)
	if _, stopped := isInterrupted(err); err != nil && !stopped {
		return code, err
	}
	if *jsonOut != "" {
		if werr := saveResult(*jsonOut, func(w io.Writer) error { return results.WriteCheckJSON(w, cf) }, stdout); werr != nil {
			return exitWrite, errors.Join(err, werr)
		}
	}
	return code, err
}

// runCheck checks every fixture under cfg.fixtures on every backend,
// prints the table, and returns the rows and the exit code: 2 when any
// fixture (or a directory of the tree) was unreadable, 1 when any case
// failed, 0 otherwise. A signal interrupts the case in progress, which
// has no row; the file's meta then says the results are partial.
func runCheck(cfg checkConfig, stdout, stderr io.Writer) (results.CheckFile, int, error) {
	cf := results.CheckFile{Meta: newMeta(cfg.threads)}
	found, err := fixture.Walk(cfg.fixtures)
	if err != nil {
		return cf, exitUsage, usageError{err}
	}
	backends, err := openBackends(cfg.backends, cfg.threads)
	if err != nil {
		return cf, exitUsage, err
	}
	defer closeAll(backends)
	cf.Meta.Threads = threadsOf(backends[0], cfg.threads)
	man, err := fixture.ReadManifest(cfg.fixtures)
	switch {
	case errors.Is(err, fixture.ErrNoManifest):
		man = nil
	case err != nil:
		return cf, exitUsage, usageError{err}
	}
	opt := runner.CheckOptions{Limits: cfg.limits, Root: cfg.fixtures, Manifest: man, MaxBytes: cfg.maxBytes, Cancel: cfg.stop.Done()}
	prog := newProgress(stderr)
	total := 0
	for _, f := range found {
		if checkMatches(cfg.run, f.Dir) {
			total += len(backends)
		}
	}
cases:
	for _, b := range backends {
		seen := map[string]string{}
		for _, f := range found {
			d := f.Dir
			if !checkMatches(cfg.run, d) {
				continue
			}
			if cfg.stop.Stopped() {
				break cases
			}
			prog.start(d + " on " + b.Name())
			var row results.CheckRow
			if f.Err != nil {
				row = results.CheckRow{Case: d, Backend: b.Name(), Status: runner.FAIL, Error: true, Reason: f.Err.Error()}
			} else {
				row = runner.CheckFixture(b, d, opt)
			}
			if cfg.stop.Stopped() {
				break cases // the case in progress was interrupted: no row
			}
			if prev, dup := seen[row.Case]; dup && !row.Error {
				row.Status, row.Error = runner.FAIL, true
				row.Reason = fmt.Sprintf("duplicate case name %q: also in %s", row.Case, prev)
				row.Case = d // rows stay unique: the directory names the duplicate
			} else if !row.Error {
				seen[row.Case] = d
			}
			prog.done(fmt.Sprintf("%-40s %-5s %-4s %s", short(row.Case), b.Name(), row.Status, short(row.Reason)))
			if cfg.verbose {
				if desc, err := fixture.ReadDesc(d); err == nil {
					fmt.Fprintf(stderr, "    %s: %v (%.2fs)\n", d, desc.Provenance, row.Seconds)
				}
			}
			cf.Rows = append(cf.Rows, row)
		}
	}
	var stopped error
	if cfg.stop.Stopped() {
		stopped = cfg.stop.interruptedErr(len(cf.Rows), total, "cases")
		markPartial(&cf.Meta, stopped)
	}
	if len(cf.Rows) == 0 && stopped == nil {
		return cf, exitUsage, usagef("no fixture under %s matches -run", cfg.fixtures)
	}
	if len(cf.Rows) > 0 {
		if err := printCheckTable(stdout, cf.Rows); err != nil {
			return cf, exitFail, err
		}
	}
	if code, ok := isInterrupted(stopped); ok {
		return cf, code, stopped
	}
	return cf, checkExitCode(cf.Rows), nil
}

// checkMatches reports whether the fixture in d is selected by -run: the
// declared name when readable, else the path, matches re (nil matches all).
func checkMatches(re *regexp.Regexp, d string) bool {
	if re == nil {
		return true
	}
	name := d
	if desc, err := fixture.ReadDesc(d); err == nil {
		name = desc.Name
	}
	return re.MatchString(name)
}

func checkExitCode(rows []results.CheckRow) int {
	code := exitOK
	for _, r := range rows {
		switch {
		case r.Error:
			return exitUsage
		case r.Status == runner.FAIL:
			code = exitFail
		}
	}
	return code
}

// printCheckTable prints one row per result and the totals; a backend that ran none of its
// cases (all NS for one reason: no GPU here) is one line after the totals instead.
func printCheckTable(w io.Writer, rows []results.CheckRow) error {
	t := newTable(w, "case", "backend", "dtype", "status", "max abs", "max rel", "NMSE", "tolerance", "reason")
	counts := map[string]int{}
	idle := results.IdleBackends(rows)
	listed := 0
	for _, r := range rows {
		counts[r.Status]++
		if _, ok := idle[r.Backend]; ok {
			continue
		}
		listed++
		t.Append(cell(r.Case), cell(r.Backend), cell(r.DType), cell(r.Status),
			sci(r.MaxAbs, r.Status), sci(r.MaxRel, r.Status), sci(r.NMSE, r.Status),
			cell(tolString(r.Tolerance)), cell(short(r.Reason)))
	}
	if listed > 0 {
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d OK, %d FAIL, %d NS\n", counts[runner.OK], counts[runner.FAIL], counts[runner.NS])
	for _, b := range slices.Sorted(maps.Keys(idle)) {
		fmt.Fprintf(w, "not run on %s: all %d cases NS: %s\n", report.OneLine(b), idle[b].Cases, report.OneLine(idle[b].Reason))
	}
	return nil
}

// cell makes text from an input file one cell of the terminal's Markdown table: on one
// line, with '|' escaped, so that a case name cannot end the row or add rows.
func cell(s string) string {
	return strings.ReplaceAll(report.OneLine(s), "|", `\|`)
}

func sci(v float64, status string) string {
	if status == runner.NS || status == runner.FAIL && v == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2e", v)
}

func tolString(t results.Tolerance) string {
	if t.Class == "" {
		return "—"
	}
	return fmt.Sprintf("%s (rtol %.g, atol %.g, NMSE %.g)", t.Class, t.RTol, t.ATol, t.NMSE)
}

// short keeps table cells and progress lines on one line and readable: line breaks and
// control characters become spaces (report.OneLine) and the text is cut at 160
// characters, never inside a UTF-8 sequence.
func short(s string) string {
	s = report.OneLine(s)
	if r := []rune(s); len(r) > 160 {
		s = string(r[:157]) + "..."
	}
	return s
}
