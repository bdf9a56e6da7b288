package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/npy"
	"vitbench/bench/results"
	"vitbench/bench/safeio"
	vcpu "vitbench/impl/cpu"
)

func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("run", stderr)
	outDir := fs.String("o", "out", "directory for peak.json, check.json, bench.txt, bench.json, bench.csv, torch.txt, report.md and its plots")
	base := fs.String("base", "", "a timing file of an earlier run (bench.txt or bench.json) for the report's A/B section (default: PyTorch against vitbench)")
	dir := fs.String("fixtures", defaultFixtures, "fixture directory; default ./fixtures, else the fixtures/ next to or above the executable")
	runRE := fs.String("run", "", "only cases whose name matches this regular expression")
	threads := fs.Int("threads", 0, "CPU threads for vitbench and PyTorch (0 = all available)")
	count := fs.Int("count", 10, "timed samples per case")
	batchList := fs.String("batch", "", "batch sizes to time every case at, comma-separated (e.g. 1,8), vitbench and the baselines alike (default: each case's own)")
	full := fs.Bool("full", false, "time and check every built-in case (default: the quick set, one case of every op kind, networks included)")
	minSample := fs.Duration("min-sample", 10*time.Millisecond, "repeat runs within a sample until it lasts this long (vitbench and PyTorch alike)")
	torch := fs.String("torch", "auto", "PyTorch baseline: auto (when python3 with torch is present), on (required) or off")
	python := fs.String("python", "/usr/bin/python3", "Python interpreter with torch for reference/bench_torch.py")
	script := fs.String("torch-script", "reference/bench_torch.py", "the PyTorch timing script")
	ortMode := fs.String("ort", "off", "ONNX Runtime baseline (reference/bench_ort.js, ort.txt): off, auto (when node and onnxruntime-node are installed) or on (cases it cannot run are NS rows with the reason)")
	nodeExe := fs.String("node", "node", "Node.js for reference/bench_ort.js")
	torchBF16 := fs.String("torch-bf16", "off", "bf16 PyTorch baseline on the CPU (bench_torch.py --dtype bf16, beside cpu-bf16): off, auto (when a CPU bf16 backend is timed) or on")
	ortModules := fs.String("ort-modules", defaultOrtModules(), "the node_modules folder holding onnxruntime-node")
	group := fs.Int("group", defaultGroup, "cases vitbench times before the baselines time the same ones (its interleaving group); 1 puts the two sides of each ratio seconds apart, at the cost of starting PyTorch and ONNX Runtime once per case")
	budget := maxBytesFlag(fs)
	machineArg := machineFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if *torch != "auto" && *torch != "on" && *torch != "off" {
		return exitUsage, usagef("-torch must be auto, on or off")
	}
	if *group < 1 {
		return exitUsage, usagef("-group must be at least 1, not %d", *group)
	}
	if *ortMode != "auto" && *ortMode != "on" && *ortMode != "off" {
		return exitUsage, usagef("-ort must be auto, on or off")
	}
	if *torchBF16 != "auto" && *torchBF16 != "on" && *torchBF16 != "off" {
		return exitUsage, usagef("-torch-bf16 must be auto, on or off")
	}
	re, err := compileRun(*runRE)
	if err != nil {
		return exitUsage, err
	}
	batches, err := parseBatches(*batchList)
	if err != nil {
		return exitUsage, err
	}
	var baseFile *results.BenchFile
	if *base != "" {
		bf, err := results.ReadBench(*base)
		if err != nil {
			return exitUsage, usageError{err}
		}
		baseFile = &bf
	}
	machine := strings.TrimSpace(*machineArg)
	if machine == "" {
		machine = localMachine()
	}
	if *dir, err = fixturesFlag(fs, *dir); err != nil {
		return exitUsage, err
	}
	*script = torchScriptFlag(fs, *script, *dir)
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return exitUsage, usageError{err}
	}
	var outs []string
	for _, name := range []string{"peak.json", "check.json", "bench.txt", "bench.json", "bench.csv", "torch.txt", "ort.txt", "report.md",
		"report-throughput.png", "report-roofline.png"} {
		outs = append(outs, "-o", filepath.Join(*outDir, name))
	}
	if err := checkOutputs(outs...); err != nil {
		return exitUsage, err
	}
	files := []string{}
	// A signal interrupts the stage in progress (its current case is
	// dropped); the later stages are skipped and the report is written
	// from what exists, saying at the top that it is partial. A result
	// file that cannot be written is kept in a fallback and the run goes
	// on; it then exits 3.
	stop := watchSignals()
	defer stop.Close()
	var stopErr error
	var writeErrs []error

	fmt.Fprintln(stderr, "== machine peak (fp32 FMA, memory bandwidth)")
	pk, err := vcpu.MeasurePeak(vcpu.PeakOptions{Threads: *threads, Duration: 50 * time.Millisecond, Count: 5,
		BandwidthBytes: 128 << 20})
	if err != nil {
		return exitFail, fmt.Errorf("peak: %v", err)
	}
	addRoundTrip(&pk)
	peakPath := filepath.Join(*outDir, "peak.json")
	if err := saveResult(peakPath, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(pk)
	}, nil); err != nil {
		writeErrs = append(writeErrs, err)
	}
	fmt.Fprintf(stderr, "fp32 FMA peak %.0f GFLOP/s on 1 thread, %.0f on %d; bandwidth %.1f / %.1f GB/s; cross-CPU round trip %.0f ns\n",
		pk.FMAPerCore, pk.FMATotal, pk.Threads, pk.Bandwidth1T, pk.BandwidthTotal, pk.CoreRoundTripNs)

	// The quick set by default (its fixtures checked, its cases timed), every case with -full.
	list, checkRE, which := runCases(re, *full), re, "-full: every built-in case"
	if !*full {
		which = "the quick set: one case of every op kind; -full times all"
		if len(list) == 0 {
			return exitUsage, usagef("no case of the quick set matches -run (add -full to choose among every built-in case)")
		}
		checkRE = caseGroups(list, len(list))[0]
	}
	fmt.Fprintf(stderr, "== %d cases (%s)\n", len(list), which)
	fmt.Fprintln(stderr, "== conformance (every backend)")
	cf, checkCode, err := runCheck(checkConfig{backends: "all", fixtures: *dir, run: checkRE, threads: *threads,
		limits: npy.Limits{MaxBytes: npy.DefaultMaxBytes}, maxBytes: int64(*budget), stop: stop}, stdout, stderr)
	if _, ok := isInterrupted(err); ok {
		stopErr, err = fmt.Errorf("conformance %w; timing and PyTorch skipped", err), nil
	}
	if err != nil {
		return checkCode, err
	}
	cf.Meta.Machine = machine
	checkPath := filepath.Join(*outDir, "check.json")
	if err := saveResult(checkPath, func(w io.Writer) error { return results.WriteCheckJSON(w, cf) }, nil); err != nil {
		writeErrs = append(writeErrs, err)
	} else {
		files = append(files, checkPath)
	}

	// Timing: vitbench and PyTorch alternate over groups of cases, so that
	// the two sides of a ratio are measured seconds apart, not the whole
	// run apart (on a shared VM capacity changes within minutes).
	var bf results.BenchFile
	benchCode := exitOK
	torchOn := *torch != "off"
	var torchText []byte
	torchPath := filepath.Join(*outDir, "torch.txt")
	groups := caseGroups(list, *group)
	ortOn := ortWanted(*ortMode, *nodeExe, *ortModules)
	var ortText []byte
	ortCfg := ortConfig{python: *python, refDir: filepath.Dir(*script), node: *nodeExe, modules: *ortModules,
		count: *count, minSample: *minSample, work: *outDir}
	if len(groups) == 0 && stopErr == nil {
		return exitUsage, usagef("no built-in case matches -run")
	}
	// The backends are opened once for all groups (a GPU backend's context,
	// cuBLAS handle and kernels are not rebuilt per group); the unavailable
	// ones are named once here rather than in every group.
	all, err := openBackends("all", *threads)
	if err != nil {
		return exitUsage, err
	}
	defer closeAll(all)
	var backends []bench.Backend
	for _, b := range all {
		if info := b.Info(); info.Available {
			backends = append(backends, b)
		} else {
			fmt.Fprintf(stderr, "%s: unavailable, not timed: %s\n", b.Name(), info.Reason)
		}
	}
	if len(backends) == 0 {
		backends = all // runBench reports them
	}
	// One progress count over every group: k/N, elapsed time and ETA.
	prog := newProgress(stderr)
	prog.n = len(list) * len(backends) * len(batches)
	rt := &runRetime{texts: []*[]byte{&torchText, &ortText}, prog: prog, stderr: stderr}
	for gi := 0; gi < len(groups); gi = rt.next(gi, &bf, stopErr == nil) {
		if stopErr != nil {
			break
		}
		group := groups[gi]
		rt.begin(&bf, len(cases.Match(group))*len(backends)*len(batches))
		for _, batch := range batches {
			if stopErr != nil {
				break
			}
			fmt.Fprintf(stderr, "== timing, group %d of %d%s (every available backend, then the baselines)\n", gi+1, len(groups), batchNote(batch))
			part, code, benchErr := runBench(benchConfig{opened: backends, run: group, batch: batch, threads: *threads, count: *count,
				warmup: 3, minSample: *minSample, seed: 1, maxBytes: int64(*budget), stop: stop, prog: prog}, stderr)
			if gi == 0 && batch == batches[0] {
				bf.Meta = part.Meta
			}
			bf.Rows, bf.Failed = append(bf.Rows, part.Rows...), append(bf.Failed, part.Failed...)
			benchCode = max(benchCode, code)
			if _, ok := isInterrupted(benchErr); ok {
				stopErr, benchErr = fmt.Errorf("timing %w; PyTorch skipped", benchErr), nil
			}
			if benchErr != nil {
				fmt.Fprintf(stderr, "vitbench run: %v\n", benchErr)
			}
			if ortOn && stopErr == nil {
				ortCfg.threads, ortCfg.batch = bf.Meta.Threads, batch
				raw, err := probed(func() ([]byte, error) { return runOrt(stop.Done(), ortCfg, group, stderr) })
				switch {
				case err == nil:
					ortText = append(ortText, raw...)
				case stop.Stopped():
					stopErr = fmt.Errorf("ONNX Runtime baseline %w", stop.interruptedErr(gi, len(groups), "groups"))
				default:
					fmt.Fprintf(stderr, "vitbench run: no ONNX Runtime column: %v\n", err)
					ortOn = false
				}
			}
			if !torchOn || stopErr != nil {
				continue
			}
			partPath := torchPath + ".part"
			raw, err := probed(func() ([]byte, error) {
				return torchRows(stop.Done(), *python, *script, partPath, group.String(), bf.Meta.Threads, *count, *minSample, stderr,
					batchArgs(batch)...)
			})
			if err == nil {
				torchText = append(torchText, raw...)
			}
			if stop.Stopped() {
				stopErr = fmt.Errorf("PyTorch baseline %w", stop.interruptedErr(gi, len(groups), "groups"))
			}
			switch {
			case err == nil:
			case stopErr != nil:
				fmt.Fprintf(stderr, "vitbench run: PyTorch stopped: %v\n", err)
			case *torch == "on":
				return exitFail, fmt.Errorf("PyTorch baseline: %v", err)
			default:
				fmt.Fprintf(stderr, "vitbench run: no PyTorch column: %v\n", err)
				torchOn = false
			}
			if torchOn && stopErr == nil && (*torchBF16 == "on" || *torchBF16 == "auto" && wantsTorchBF16(backends)) {
				// The bf16 PyTorch baseline, beside the cpu-bf16 rows (paired by dtype).
				if raw, err := probed(func() ([]byte, error) {
					return torchRows(stop.Done(), *python, *script, partPath, group.String(), bf.Meta.Threads, *count, *minSample, stderr,
						append(batchArgs(batch), "--dtype", "bf16")...)
				}); err != nil {
					fmt.Fprintf(stderr, "vitbench run: no bf16 PyTorch rows: %v\n", err)
				} else {
					torchText = append(torchText, raw...)
				}
				if stop.Stopped() {
					stopErr = fmt.Errorf("PyTorch bf16 baseline %w", stop.interruptedErr(gi, len(groups), "groups"))
				}
			}
		}
	}
	if stopErr != nil {
		markPartial(&bf.Meta, stopErr)
	}
	bf.Meta.Machine = machine
	if len(bf.Rows) > 0 || len(bf.Failed) > 0 || stopErr == nil {
		benchPath, benchJSON := filepath.Join(*outDir, "bench.txt"), filepath.Join(*outDir, "bench.json")
		if err := writeBench(bf, benchPath, benchJSON, filepath.Join(*outDir, "bench.csv"), nil); err != nil {
			writeErrs = append(writeErrs, err)
		}
		if _, err := os.Stat(benchPath); err == nil {
			files = append(files, benchPath)
		}
	}
	if len(torchText) > 0 {
		if err := saveResult(torchPath, func(w io.Writer) error {
			_, err := w.Write(torchText)
			return err
		}, nil); err != nil {
			writeErrs = append(writeErrs, err)
		} else {
			files = append(files, torchPath)
		}
	}

	if len(ortText) > 0 {
		ortPath := filepath.Join(*outDir, "ort.txt")
		if err := saveResult(ortPath, func(w io.Writer) error {
			_, err := w.Write(ortText)
			return err
		}, nil); err != nil {
			writeErrs = append(writeErrs, err)
		} else {
			files = append(files, ortPath)
		}
	}

	in, err := loadReportInput(files)
	if err != nil {
		return exitFail, err
	}
	fillMachines(&in, machine) // torch.txt does not name it
	in.Title = "vitbench report"
	in.PeakByBackend = peaksByBackend(pk, bf.Meta.Threads)
	in.Roof = roofFor(pk, bf.Meta.Threads, "peak.json") // beside the report
	in.Base, in.BasePath = baseFile, *base
	if stopErr != nil {
		in.Partial = stopErr.Error()
	}
	reportPath := filepath.Join(*outDir, "report.md")
	if code, err := writeReport(in, reportPath, stdout, stderr); err != nil {
		if code != exitWrite {
			return code, err
		}
		writeErrs = append(writeErrs, err)
	}
	if len(writeErrs) > 0 {
		return exitWrite, errors.Join(append([]error{stopErr}, writeErrs...)...)
	}
	if code, ok := isInterrupted(stopErr); ok {
		return code, stopErr
	}
	return max(checkCode, benchCode), nil
}

// defaultGroup is how many cases vitbench times before PyTorch and ONNX
// Runtime time the same ones in `run` (-group): small enough that the two
// sides of a ratio are close in time, large enough that starting Python
// and torch and exporting the group to ONNX (a few seconds) stay a small
// part of the run.
const defaultGroup = 12

// caseGroups splits list, in order, into groups of at most n cases, each
// as a regular expression matching exactly its cases' names.
func caseGroups(list []cases.Case, n int) []*regexp.Regexp {
	var out []*regexp.Regexp
	for i := 0; i < len(list); i += n {
		var names []string
		for _, c := range list[i:min(i+n, len(list))] {
			names = append(names, regexp.QuoteMeta(c.Name))
		}
		out = append(out, regexp.MustCompile("^("+strings.Join(names, "|")+")$"))
	}
	return out
}

// runTorch runs reference/bench_torch.py with the same cases, threads and
// sample count, writing the Go benchmark format to out; extra arguments follow
// ("--dtype", "bf16"). When stop is closed (a signal), the script is sent
// SIGTERM, and killed a second later. The script exits 1 when some case
// raised, after writing out with that case's "# FAILED" line: that is not an
// error here, the other cases' rows count. (A stale out is removed first, so
// an exit 1 before writing, Python's status for an uncaught exception, is
// still an error.)
func runTorch(stop <-chan struct{}, python, script, out, runRE string, threads, count int, minSample time.Duration, stderr io.Writer,
	extra ...string) error {
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("%s not found (run from the repository root or pass -torch-script)", script)
	}
	if _, err := exec.LookPath(python); err != nil {
		return fmt.Errorf("%s not found: %v", python, err)
	}
	args := []string{script, "-o", out, "--threads", strconv.Itoa(threads), "--count", strconv.Itoa(count),
		"--min-sample-ms", strconv.FormatFloat(float64(minSample)/1e6, 'f', -1, 64)}
	if runRE != "" {
		args = append(args, "--run", runRE)
	}
	args = append(args, extra...)
	cmd, done := stoppableCommand(stop, python, args, stderr)
	defer done()
	// Some machines force OPENBLAS_CORETYPE (and OPENBLAS_L2_SIZE) for the
	// sake of old OpenBLAS builds; on a CPU with AVX-512 that pins
	// OpenBLAS 0.3.21 to its AVX2 kernels and halves the baseline. The
	// baseline runs with OpenBLAS's own detection; torch.txt records the
	// core it chose.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") && !strings.HasPrefix(kv, "OPENBLAS_L2_SIZE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	os.Remove(out)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		// Exit status 1 with its output written means some cases raised: their
		// "# FAILED" lines are in the file beside the other cases' rows, which
		// are kept (the report shows the failures as FAIL rows).
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !isFile(out) {
			return fmt.Errorf("%s %s: %v", python, script, err)
		}
		fmt.Fprintf(stderr, "vitbench run: %s: some cases failed (their FAILED lines are kept with the other rows)\n", script)
	}
	fmt.Fprintf(stderr, "PyTorch baseline written to %s (%.1fs)\n", out, time.Since(start).Seconds())
	return nil
}

// torchRows runs bench_torch.py (runTorch) into out and returns what it wrote, removing
// out afterwards.
func torchRows(stop <-chan struct{}, python, script, out, runRE string, threads, count int, minSample time.Duration, stderr io.Writer,
	extra ...string) ([]byte, error) {
	if err := runTorch(stop, python, script, out, runRE, threads, count, minSample, stderr, extra...); err != nil {
		return nil, err
	}
	raw, err := safeio.ReadFile(out, results.MaxFileBytes)
	if err == nil {
		os.Remove(out)
	}
	return raw, err
}
