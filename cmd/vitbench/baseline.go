package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"vitbench/bench/cases"
	"vitbench/bench/report"
	"vitbench/bench/runner"
	"vitbench/impl/cpu"
)

func init() {
	commands["baseline"] = command{"deterministic metrics of every case (no timings): write a baseline, or check against one", cmdBaseline}
}

// defaultBaselineThreads is the thread count peak bytes are measured at when a baseline
// is written: CI's machine has two cores, and the count is recorded in the file.
const defaultBaselineThreads = 2

// cmdBaseline writes (-o) or checks (-check) the deterministic metrics of the built-in
// cases: description, parameter, MAC and byte counts, input and output shapes, the number
// of weight arrays, and the CPU
// allocator's peak bytes for one run per ISA path. A check exits 1 when a metric of a
// case in the baseline changed or the case vanished; cases not in the baseline yet are
// listed as new and pass.
func cmdBaseline(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("baseline", stderr)
	out := fs.String("o", "", "write the baseline of the current cases to this file")
	check := fs.String("check", "", "compare the current cases with this baseline file")
	runRE := fs.String("run", "", "only cases whose name matches this regular expression")
	threads := fs.Int("threads", 0, fmt.Sprintf("CPU threads of the peak-bytes runs (0 = the baseline's when checking, %d when writing)", defaultBaselineThreads))
	isaFlag := fs.String("isa", "", "ISA paths whose peak bytes are measured: a comma list, all, or none "+
		"(default: writing, every path this CPU runs but go; checking, the fastest path here)")
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if (*out == "") == (*check == "") {
		return exitUsage, usagef("give exactly one of -o FILE (write) and -check FILE (compare)")
	}
	if *threads < 0 {
		return exitUsage, usagef("-threads must be ≥ 0")
	}
	re, err := compileRun(*runRE)
	if err != nil {
		return exitUsage, err
	}
	if err := checkOutputs("-o", *out); err != nil {
		return exitUsage, err
	}
	list := cases.Match(re)

	if *out != "" {
		isas, err := baselineISAs(*isaFlag, nil, true)
		if err != nil {
			return exitUsage, err
		}
		n := cmp.Or(*threads, defaultBaselineThreads)
		b, err := measureBaseline(list, n, isas, stderr)
		if err != nil {
			return exitFail, err
		}
		b.Regenerate = "go run ./cmd/vitbench baseline " + strings.Join(args, " ")
		if err := saveResult(*out, func(w io.Writer) error { return report.WriteBaseline(w, b) }, stdout); err != nil {
			return exitWrite, err
		}
		fmt.Fprintf(stderr, "baseline of %d cases written to %s\n", len(b.Cases), *out)
		return exitOK, nil
	}

	base, err := report.ReadBaseline(*check)
	if err != nil {
		return exitUsage, usageError{err}
	}
	if re != nil {
		base.Cases = slices.DeleteFunc(base.Cases, func(c report.BaselineCase) bool { return !re.MatchString(c.Case) })
	}
	isas, err := baselineISAs(*isaFlag, base.PeakISAs, false)
	if err != nil {
		return exitUsage, err
	}
	head, err := measureBaseline(list, cmp.Or(*threads, base.PeakThreads, defaultBaselineThreads), isas, stderr)
	if err != nil {
		return exitFail, err
	}
	d := report.DiffBaseline(base, head)
	report.WriteBaselineDiff(stdout, *check, base, d)
	if d.Failed() {
		return exitFail, nil
	}
	return exitOK, nil
}

// baselineISAs resolves -isa against the paths this CPU runs. Writing, the default is
// every path but the pure-Go one (minutes on the full networks, and not what CI runs);
// checking, the default is the fastest path here, and only paths the baseline recorded
// (recorded) are measured.
func baselineISAs(flag string, recorded []string, writing bool) ([]string, error) {
	here := cpu.SupportedISAs()
	var want []string
	switch flag {
	case "none":
		return nil, nil
	case "all":
		want = here
	case "":
		if writing {
			want = slices.DeleteFunc(slices.Clone(here), func(s string) bool { return s == "go" })
		} else {
			want = []string{cpu.ISA()}
		}
	default:
		for _, isa := range splitList(flag) {
			if !slices.Contains(here, isa) {
				return nil, usagef("-isa: %s does not run on this CPU (paths here: %s)", isa, strings.Join(here, ", "))
			}
			want = append(want, isa)
		}
	}
	if !writing {
		want = slices.DeleteFunc(want, func(s string) bool { return !slices.Contains(recorded, s) })
	}
	return want, nil
}

// measureBaseline describes every case and, on each ISA path in isas, runs it once on
// the CPU backend with threads threads to record the allocator's peak bytes.
func measureBaseline(list []cases.Case, threads int, isas []string, stderr io.Writer) (report.Baseline, error) {
	b := report.Baseline{Format: report.BaselineFormat, PeakThreads: threads, PeakISAs: isas}
	index := map[string]int{}
	for _, c := range list {
		s, err := c.Spec(0)
		if err != nil {
			return b, err
		}
		bc := report.BaselineCase{Case: c.Name, Kind: c.Kind, Op: c.Op, DType: string(c.DType), Batch: c.Batch,
			Tolerance: c.Tolerance, Params: s.Params(), MACs: s.MACs(), Bytes: s.Bytes(),
			Inputs: map[string]string{}, Outputs: map[string]string{}}
		for _, a := range s.Inputs() {
			bc.Inputs[a.Name] = report.ShapeString(a.Shape)
		}
		bc.WeightArrays = len(s.Weights())
		for _, a := range s.Outputs() {
			bc.Outputs[a.Name] = report.ShapeString(a.Shape)
		}
		index[c.Name] = len(b.Cases)
		b.Cases = append(b.Cases, bc)
	}
	if len(isas) == 0 {
		return b, nil
	}
	was := cpu.ISA()
	defer cpu.SetISA(was)
	for _, isa := range isas {
		if err := cpu.SetISA(isa); err != nil {
			return b, err
		}
		if err := measurePeaks(list, threads, isa, b.Cases, index, stderr); err != nil {
			return b, err
		}
	}
	return b, nil
}

// measurePeaks runs every case once on the CPU backend (on the ISA path set by the caller)
// and records its allocator peak under isa. A case the backend does not support gets none.
func measurePeaks(list []cases.Case, threads int, isa string, out []report.BaselineCase, index map[string]int, stderr io.Writer) error {
	be, err := openBackends("cpu", threads)
	if err != nil {
		return err
	}
	defer closeAll(be)
	// The rules that depend on the CPU's vendor are off: the peak bytes
	// then depend on the ISA path alone, the same on every machine that
	// has it.
	defer cpu.SetVendorRules(cpu.SetVendorRules(false))
	prog := newProgress(stderr)
	prog.start("peak bytes on " + isa)
	t0 := time.Now()
	for _, c := range list {
		spec, err := c.Spec(0)
		if err != nil {
			return err
		}
		if runner.Unsupported(be[0], spec, c.DType) != nil {
			continue
		}
		prog.start(fmt.Sprintf("peak bytes on %s: %s", isa, c.Name))
		_, _, peak, err := runner.Bench(be[0], spec, c.DType, runner.BenchOptions{Count: 1, Seed: 1})
		if err != nil {
			return fmt.Errorf("%s on %s: %v", c.Name, isa, err)
		}
		bc := &out[index[c.Name]]
		if bc.PeakBytes == nil {
			bc.PeakBytes = map[string]int64{}
		}
		bc.PeakBytes[isa] = peak
	}
	prog.begin = t0 // the line's time is the whole pass's
	prog.done(fmt.Sprintf("peak bytes of %d cases on %s at %d threads", len(list), isa, threads))
	return nil
}
