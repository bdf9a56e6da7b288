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
	stop          *stopper // stops between cases on SIGINT/SIGTERM; nil never stops
	// opened, when set, are the backends to time (the caller opened them and
	// closes them); backends is then ignored.
	opened []bench.Backend
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
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
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
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return exitFail, err
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
		count: *count, warmup: *warmup, minSample: *minSample, seed: *seed, weights: *weights, stop: stop}, stderr)
	if err != nil && len(bf.Rows) == 0 && len(bf.Failed) == 0 {
		return code, err
	}
	if werr := writeBench(bf, *out, *jsonOut, stdout); werr != nil {
		return exitFail, werr
	}
	return code, err
}

// writeBench writes the text format to path (stdout when empty) and JSON
// to jsonPath when given, each atomically.
func writeBench(bf results.BenchFile, path, jsonPath string, stdout io.Writer) error {
	if path == "" {
		if err := results.WriteBenchText(stdout, bf); err != nil {
			return err
		}
	} else if err := results.WriteFileAtomic(path, func(w io.Writer) error { return results.WriteBenchText(w, bf) }); err != nil {
		return err
	}
	if jsonPath != "" {
		return results.WriteFileAtomic(jsonPath, func(w io.Writer) error { return results.WriteBenchJSON(w, bf) })
	}
	return nil
}

// runBench times every matching built-in case on every available backend
// that supports it. A case that fails to run is reported and the others go
// on; the exit code is then 1 and the error names every case without a
// result.
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
	prog := newProgress(stderr)
	code := exitOK
	var failed []string // "case on backend: error", one per case without a result
	done, total := 0, 0
	for _, b := range backends {
		if b.Info().Available {
			total += len(list)
		}
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
				e := cfg.stop.interruptedErr(done, total, "cases")
				return bf, e.code(), e
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
			opt := runner.BenchOptions{Count: cfg.count, Warmup: cfg.warmup, MinSampleTime: cfg.minSample, Seed: cfg.seed}
			closeWeights := func() error { return nil }
			if cfg.weights != "" {
				if opt.Data, closeWeights, err = runner.NPZWeights(spec, cfg.weights, cfg.seed, npy.Limits{}); err != nil {
					return bf, exitUsage, usageError{fmt.Errorf("case %s: %v", c.Name, err)}
				}
			}
			row, err := runner.BenchRow(b, c.Name, spec, c.DType, batch, threads, opt)
			closeWeights()
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
		e := cfg.stop.interruptedErr(done, total, "cases")
		return bf, e.code(), e
	}
	return bf, code, noResultErr(failed)
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
