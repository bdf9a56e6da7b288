package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/pprof"
	"strings"
	"time"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/npy"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

// benchConfig is what `bench` and `run` share.
type benchConfig struct {
	backends      string
	run           *regexp.Regexp
	batch         int
	threads       int
	count, warmup int
	minSample     time.Duration
	seed          uint64
	weights       string   // .npz of real weights by state_dict name ("" = synthesized)
	maxBytes      int64    // memory budget of one case (0: runner.DefaultMaxBytes)
	stop          *stopper // interrupts the case in progress on SIGINT/SIGTERM; nil never stops
	// opened, when set, are the backends to time (the caller opened them and
	// closes them); backends is then ignored.
	opened []bench.Backend
	// prog, when set, counts the cases across calls (run's groups); else runBench
	// counts its own.
	prog *progress
}

func cmdBench(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("bench", stderr)
	backend := fs.String("backend", "cpu", "backends to time, comma-separated, or all")
	runRE := fs.String("run", "", "only cases whose name matches this regular expression")
	batch := fs.Int("batch", 0, "batch size (0 = each case's own)")
	threads := fs.Int("threads", 0, "CPU threads (0 = all available)")
	count := fs.Int("count", 10, "timed samples per case (at least 10 for a 95% interval)")
	warmup := fs.Int("warmup", 3, "untimed runs before the samples")
	minSample := fs.Duration("min-sample", 10*time.Millisecond, "repeat runs within a sample until it lasts this long and record the mean (0 = one run per sample)")
	seed := fs.Uint64("seed", 1, "seed of the synthesized inputs and weights")
	weights := fs.String("weights", "", "time with these weights: an .npz keyed by state_dict names (reference/convert_checkpoint.py makes one from a .pth)")
	isa := fs.String("isa", "", "force the CPU ISA path (avx512, avx2, go)")
	out := fs.String("o", "", "write the Go benchmark format to this file instead of stdout")
	jsonOut := fs.String("json", "", "also write JSON rows to this file")
	csvOut := fs.String("csv", "", "also write a timm-style CSV (model, backend, dtype, batch, img/s, median and p90 step ms, params (M), GMACs, image size, threads) to this file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	budget := maxBytesFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if *count < 1 || *warmup < 0 || *batch < 0 || *threads < 0 {
		return exitUsage, usagef("-count must be ≥ 1 and -warmup, -batch, -threads ≥ 0")
	}
	if err := applyISA(*isa); err != nil {
		return exitUsage, err
	}
	re, err := compileRun(*runRE)
	if err != nil {
		return exitUsage, err
	}
	if err := checkOutputs("-o", *out, "-json", *jsonOut, "-csv", *csvOut, "-cpuprofile", *cpuProfile); err != nil {
		return exitUsage, err
	}
	if *weights != "" {
		// A weights file that cannot be opened (missing, a FIFO, not a zip) is refused
		// before any case runs; each case then checks the arrays it needs.
		ar, err := npy.OpenNPZ(*weights)
		if err != nil {
			return exitUsage, usagef("-weights: %v", err)
		}
		ar.Close()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return exitUsage, usageError{err}
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return exitFail, err
		}
		defer pprof.StopCPUProfile()
	}
	stop := watchSignals()
	defer stop.Close()
	bf, code, err := runBench(benchConfig{backends: *backend, run: re, batch: *batch, threads: *threads,
		count: *count, warmup: *warmup, minSample: *minSample, seed: *seed, weights: *weights,
		maxBytes: int64(*budget), stop: stop}, stderr)
	if err != nil && len(bf.Rows) == 0 && len(bf.Failed) == 0 {
		return code, err
	}
	if werr := writeBench(bf, *out, *jsonOut, *csvOut, stdout); werr != nil {
		return exitWrite, errors.Join(err, werr)
	}
	return code, err
}

// writeBench writes the text format to path (stdout when empty), JSON to
// jsonPath and the timm-style CSV to csvPath when given, each atomically; a
// file that cannot be written keeps its content in a fallback (saveResult),
// and the error says where.
func writeBench(bf results.BenchFile, path, jsonPath, csvPath string, stdout io.Writer) error {
	var errs []error
	if path == "" {
		if err := results.WriteBenchText(stdout, bf); err != nil {
			errs = append(errs, err)
		}
	} else if err := saveResult(path, func(w io.Writer) error { return results.WriteBenchText(w, bf) }, stdout); err != nil {
		errs = append(errs, err)
	}
	if jsonPath != "" {
		if err := saveResult(jsonPath, func(w io.Writer) error { return results.WriteBenchJSON(w, bf) }, stdout); err != nil {
			errs = append(errs, err)
		}
	}
	if csvPath != "" {
		if err := saveResult(csvPath, func(w io.Writer) error { return results.WriteBenchCSV(w, bf) }, stdout); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runBench times every matching built-in case on every available backend
// that supports it. A case that fails to run (or needs more memory than
// the budget) is reported and the others go on; the exit code is then 1
// and the error names every case without a result. A signal interrupts
// the case in progress, which has no row; the file's meta then says the
// results are partial.
func runBench(cfg benchConfig, stderr io.Writer) (results.BenchFile, int, error) {
	bf := results.BenchFile{Meta: newMeta(cfg.threads)}
	list := cases.Match(cfg.run)
	if len(list) == 0 {
		return bf, exitUsage, usagef("no built-in case matches -run")
	}
	backends := cfg.opened
	if backends == nil {
		var err error
		if backends, err = openBackends(cfg.backends, cfg.threads); err != nil {
			return bf, exitUsage, err
		}
		defer closeAll(backends)
	}
	bf.Meta.Threads = threadsOf(backends[0], cfg.threads)
	if cfg.weights != "" {
		sum, err := runner.FileSHA256(cfg.weights)
		if err != nil {
			return bf, exitUsage, usagef("-weights: %v", err)
		}
		if bf.Meta.Extra == nil {
			bf.Meta.Extra = map[string]string{}
		}
		bf.Meta.Extra[results.WeightsKey] = sum
	}
	code := exitOK
	var failed []string // "case on backend: error", one per case without a result
	done, total := 0, 0
	for _, b := range backends {
		if b.Info().Available {
			total += len(list)
		}
	}
	prog := cfg.prog
	if prog == nil {
		prog = newProgress(stderr)
		prog.n = total
	}
	for _, b := range backends {
		info := b.Info()
		if !info.Available {
			fmt.Fprintf(stderr, "%s: unavailable, not timed: %s\n", b.Name(), info.Reason)
			continue
		}
		threads := threadsOf(b, cfg.threads)
		for _, c := range list {
			if cfg.stop.Stopped() {
				return interruptedBench(bf, cfg.stop, done, total)
			}
			done++
			spec, err := c.Spec(cfg.batch)
			if err != nil {
				return bf, exitUsage, usageError{err}
			}
			batch := spec.Inputs()[0].Shape[0]
			prog.start(c.Name + " on " + b.Name())
			if err := runner.Unsupported(b, spec, c.DType); err != nil {
				prog.done(fmt.Sprintf("%-40s %-5s NS   %s", c.Name, b.Name(), err))
				continue
			}
			opt := runner.BenchOptions{Count: cfg.count, Warmup: cfg.warmup, MinSampleTime: cfg.minSample, Seed: cfg.seed,
				MaxBytes: cfg.maxBytes, CaseName: c.Name, Cancel: cfg.stop.Done()}
			closeWeights := func() error { return nil }
			if cfg.weights != "" {
				// Weights that do not fit this case (a missing array, a wrong shape)
				// are its FAIL row; the other cases still run.
				if opt.Data, closeWeights, err = runner.NPZWeights(spec, cfg.weights, cfg.seed, npy.Limits{}); err != nil {
					prog.done(fmt.Sprintf("%-40s %-5s FAIL  the weights do not fit: %s", c.Name, b.Name(), short(err.Error())))
					code = exitFail
					failed = append(failed, fmt.Sprintf("%s on %s: %v", c.Name, b.Name(), err))
					bf.Failed = append(bf.Failed, results.BenchFailure{Case: c.Name, Backend: b.Name(), Batch: batch,
						Threads: threads, DType: string(c.DType), Error: err.Error()})
					continue
				}
			}
			row, err := runner.BenchRow(b, c.Name, spec, c.DType, batch, threads, opt)
			closeWeights()
			if cfg.stop.Stopped() {
				done-- // the case in progress was interrupted: no row
				return interruptedBench(bf, cfg.stop, done, total)
			}
			if err != nil {
				prog.done(fmt.Sprintf("%-40s %-5s ERROR %v", c.Name, b.Name(), err))
				code = exitFail
				failed = append(failed, fmt.Sprintf("%s on %s: %v", c.Name, b.Name(), err))
				bf.Failed = append(bf.Failed, results.BenchFailure{Case: c.Name, Backend: b.Name(), Batch: batch,
					Threads: threads, DType: string(c.DType), Error: err.Error()})
				continue
			}
			row.ISA = info.Details["isa"]
			bf.Rows = append(bf.Rows, row)
			prog.done(fmt.Sprintf("%-40s %-5s %9.3f ms  p90 %9.3f ms  %7.2f GFLOP/s", c.Name, b.Name(),
				row.MedianNs/1e6, row.P90Ns/1e6, row.GFLOPs))
		}
	}
	if cfg.stop.Stopped() {
		return interruptedBench(bf, cfg.stop, done, total)
	}
	return bf, code, noResultErr(failed)
}

// interruptedBench returns what runBench returns when a signal stopped it after done of
// total cases: the rows so far, marked partial, and the signal's exit code and error.
func interruptedBench(bf results.BenchFile, stop *stopper, done, total int) (results.BenchFile, int, error) {
	e := stop.interruptedErr(done, total, "cases")
	markPartial(&bf.Meta, e)
	return bf, e.code(), e
}

// noResultErr is nil when every case timed has a result, else one error
// naming each case that has none and why.
func noResultErr(failed []string) error {
	switch len(failed) {
	case 0:
		return nil
	case 1:
		return errors.New(failed[0])
	}
	return fmt.Errorf("%d cases have no result:\n  %s", len(failed), strings.Join(failed, "\n  "))
}
