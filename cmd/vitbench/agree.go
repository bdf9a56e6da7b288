package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"vitbench/bench/cases"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

func init() {
	commands["agree"] = command{"agreement of backends with a reference backend on every built-in case, no fixtures needed", cmdAgree}
}

// cmdAgree runs every selected built-in case on the reference backend and on each other
// backend with the same synthesized data, and judges the others against the reference
// with the case's tolerance class, as check judges against fixtures. Exit status: 1 when a
// case disagrees or fails, 2 on bad usage.
func cmdAgree(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("agree", stderr)
	refName := fs.String("ref", "cpu", "the reference backend")
	backend := fs.String("backend", "cuda", "backends to judge against the reference, comma-separated, or all (but the reference)")
	runRE := fs.String("run", "", "only cases whose name matches this regular expression")
	batch := fs.Int("batch", 0, "run every case at this batch (0 = each case's own)")
	seed := fs.Uint64("seed", 1, "generator seed for inputs and weights")
	threads := fs.Int("threads", 0, "CPU threads (0 = all available)")
	isa := fs.String("isa", "", "force the CPU ISA path (avx512, avx2, go)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file (conformance format; meta extra 'reference' names the reference)")
	budget := maxBytesFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if *batch < 0 {
		return exitUsage, usagef("-batch must be ≥ 0")
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
	names := *backend
	if names == "all" {
		names = ""
		for _, n := range allBackendNames() {
			if n != *refName {
				names += n + ","
			}
		}
	}
	refs, err := openBackends(*refName, *threads)
	if err != nil {
		return exitUsage, err
	}
	defer closeAll(refs)
	ref := refs[0]
	if info := ref.Info(); !info.Available {
		return exitUsage, usagef("reference backend %s is unavailable: %s", ref.Name(), info.Reason)
	}
	others, err := openBackends(names, *threads)
	if err != nil {
		return exitUsage, err
	}
	defer closeAll(others)
	list := cases.Match(re)
	if len(list) == 0 {
		return exitUsage, usagef("no case matches -run %q", *runRE)
	}
	stop := watchSignals()
	defer stop.Close()
	cf := results.CheckFile{Meta: newMeta(*threads)}
	cf.Meta.Threads = threadsOf(ref, *threads)
	if cf.Meta.Extra == nil {
		cf.Meta.Extra = map[string]string{}
	}
	cf.Meta.Extra["reference"] = ref.Name()
	prog := newProgress(stderr)
	total := len(list) * len(others)
	var stopped error
	for _, c := range list {
		if stop.Stopped() {
			stopped = stop.interruptedErr(len(cf.Rows), total, "cases")
			break
		}
		prog.start(c.Name + " against " + ref.Name())
		rows := runner.AgreeCaseWith(ref, others, c, runner.AgreeOptions{Batch: *batch, Seed: *seed,
			MaxBytes: int64(*budget), Cancel: stop.Done()})
		if stop.Stopped() {
			// The case in progress was interrupted: no rows.
			stopped = stop.interruptedErr(len(cf.Rows), total, "cases")
			break
		}
		for _, row := range rows {
			prog.done(fmt.Sprintf("%-40s %-9s %-4s %s", row.Case, row.Backend, row.Status, short(row.Reason)))
		}
		cf.Rows = append(cf.Rows, rows...)
	}
	if stopped != nil {
		markPartial(&cf.Meta, stopped)
	}
	slices.SortStableFunc(cf.Rows, func(a, b results.CheckRow) int { return cmp.Compare(a.Backend, b.Backend) })
	if len(cf.Rows) > 0 {
		fmt.Fprintf(stdout, "Agreement with backend %s (same synthesized inputs and weights, seed %d):\n\n", ref.Name(), *seed)
		if err := printCheckTable(stdout, cf.Rows); err != nil {
			return exitFail, err
		}
	}
	if *jsonOut != "" {
		if err := saveResult(*jsonOut, func(w io.Writer) error { return results.WriteCheckJSON(w, cf) }, stdout); err != nil {
			return exitWrite, errors.Join(stopped, err)
		}
	}
	if code, ok := isInterrupted(stopped); ok {
		return code, stopped
	}
	return checkExitCode(cf.Rows), nil
}
