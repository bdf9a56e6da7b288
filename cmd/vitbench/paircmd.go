package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/contention"
	"vitbench/bench/results"
	"vitbench/bench/runner"
)

// pairConfig is what `pair` needs besides the ONNX Runtime server.
type pairConfig struct {
	count, warmup int
	minSample     time.Duration
	rewarm        time.Duration // untimed runs before each sample, after the other side's
	maxBytes      int64
	stop          *stopper
}

// pairCase is one case timed by pair: the vitbench and ONNX Runtime samples taken in
// alternation (sample i of each side in pair i), or why a side has none.
type pairCase struct {
	Case                  string
	Batch                 int
	Spec                  bench.Spec // the case at Batch, as timed
	DType                 bench.DType
	VitbenchNs, OrtNs     []float64 // ns per run, sample by sample
	VitbenchRuns, OrtRuns []int
	VitbenchLoad, OrtLoad float64 // foreign load over each side's samples (NaN: not measured)
	OrtLabel              string
	OrtRSS                int64
	Peak, RSS             int64  // vitbench's allocator peak and the process's peak RSS
	NS, Err               string // why a side cannot run it (NS), or how a side failed (Err)
	Interrupted           bool
}

// Ratios returns ORT's time over vitbench's, pair by pair (above 1: vitbench is faster).
func (p pairCase) Ratios() []float64 {
	n := min(len(p.VitbenchNs), len(p.OrtNs))
	r := make([]float64, n)
	for i := range r {
		r[i] = p.OrtNs[i] / p.VitbenchNs[i]
	}
	return r
}

func cmdPair(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("pair", stderr)
	outDir := fs.String("o", "pair", "directory for bench.txt (vitbench's samples), ort.txt (ONNX Runtime's) and pairs.md (the paired ratios)")
	runRE := fs.String("run", "", "the cases to time: their names match this regular expression (required)")
	backendName := fs.String("backend", "cpu", "the vitbench backend timed against ONNX Runtime (one)")
	batch := fs.Int("batch", 0, "batch size, both sides (0 = each case's own)")
	threads := fs.Int("threads", 0, "CPU threads of vitbench and ONNX Runtime's intra-op threads (0 = all available)")
	count := fs.Int("count", 20, "pairs of samples per case (at least 6 for a 95% interval of the median ratio)")
	warmup := fs.Int("warmup", 3, "untimed runs of each side before its first sample")
	minSample := fs.Duration("min-sample", 10*time.Millisecond, "repeat runs within a sample until it lasts this long and record the mean (both sides)")
	rewarm := fs.Duration("rewarm", 50*time.Millisecond, "before each sample, untimed runs of its side for at least this long (at least one), which bring its caches back without leaving the CPUs idle; vitbench's go on until ONNX Runtime's threads, which spin for 30 ms or more after a run, have used no CPU for 10 ms")
	python := fs.String("python", "/usr/bin/python3", "Python interpreter with torch and onnx for reference/onnx_export.py")
	nodeExe := fs.String("node", "node", "Node.js for reference/bench_ort.js")
	ortModules := fs.String("ort-modules", defaultOrtModules(), "the node_modules folder holding onnxruntime-node")
	refDir := fs.String("reference", "reference", "the directory holding onnx_export.py and bench_ort.js (default: ./reference, else the one beside the fixtures found)")
	budget := maxBytesFlag(fs)
	machineArg := machineFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if *runRE == "" {
		return exitUsage, usagef("-run is required: name the cases to pair (vitbench list shows them)")
	}
	if *count < 1 || *warmup < 0 || *batch < 0 || *batch > maxRunBatch || *threads < 0 || *rewarm < 0 || *minSample < 0 {
		return exitUsage, usagef("-count must be ≥ 1, -batch from 0 to %d, and -warmup, -threads, -rewarm, -min-sample ≥ 0", maxRunBatch)
	}
	re, err := compileRun(*runRE)
	if err != nil {
		return exitUsage, err
	}
	list := cases.Match(re)
	if len(list) == 0 {
		return exitUsage, usagef("no built-in case matches -run")
	}
	if _, err := exec.LookPath(*nodeExe); err != nil {
		return exitUsage, usagef("-node %s: %v (pair needs Node.js with onnxruntime-node: bash ci/install-deps.sh)", *nodeExe, err)
	}
	ref := referenceDirFlag(fs, *refDir)
	if !isFile(filepath.Join(ref, "bench_ort.js")) || !isFile(filepath.Join(ref, "onnx_export.py")) {
		return exitUsage, usagef("-reference %s: no bench_ort.js and onnx_export.py there", ref)
	}
	machine := *machineArg
	if machine == "" {
		machine = localMachine()
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return exitUsage, usageError{err}
	}
	benchPath, ortPath, pairsPath := filepath.Join(*outDir, "bench.txt"), filepath.Join(*outDir, "ort.txt"), filepath.Join(*outDir, "pairs.md")
	if err := checkOutputs("-o", benchPath, "-o", ortPath, "-o", pairsPath); err != nil {
		return exitUsage, err
	}
	backends, err := openBackends(*backendName, *threads)
	if err != nil {
		return exitUsage, err
	}
	defer closeAll(backends)
	if len(backends) != 1 {
		return exitUsage, usagef("-backend names one backend, not %d", len(backends))
	}
	b := backends[0]
	if info := b.Info(); !info.Available {
		return exitUsage, usagef("backend %s is unavailable: %s", b.Name(), info.Reason)
	}
	nThreads := threadsOf(b, *threads)
	stop := watchSignals()
	defer stop.Close()

	// Export every case once; the server loads each model in turn.
	dir, err := os.MkdirTemp(*outDir, "onnx-")
	if err != nil {
		return exitFail, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(stderr, "== exporting %d cases to ONNX\n", len(list))
	exportArgs := append([]string{filepath.Join(ref, "onnx_export.py"), "--out", dir, "--run", re.String()}, batchArgs(*batch)...)
	if err := runChild(stop.Done(), *python, exportArgs, nil, stderr); err != nil {
		return exitFail, fmt.Errorf("ONNX export: %v", err)
	}
	ortCfg := ortConfig{refDir: ref, node: *nodeExe, modules: *ortModules, threads: nThreads, minSample: *minSample}
	srv, err := startOrtServer(stop.Done(), ortCfg, filepath.Join(dir, "manifest.json"), *warmup, stderr)
	if err != nil {
		return exitFail, err
	}
	defer srv.Close()

	cfg := pairConfig{count: *count, warmup: *warmup, minSample: *minSample, rewarm: *rewarm, maxBytes: int64(*budget), stop: stop}
	var done []pairCase
	code := exitOK
	for _, c := range list {
		if stop.Stopped() {
			break
		}
		spec, err := c.Spec(*batch)
		if err != nil {
			return exitUsage, usageError{err}
		}
		fmt.Fprintf(stderr, "== %s: %d pairs of samples, %s and ONNX Runtime %s alternating\n", c.Name, *count, b.Name(), srv.Version)
		pc := pairOne(b, srv, c, spec, cfg)
		if pc.Err != "" {
			code = exitFail
			fmt.Fprintf(stderr, "%s: FAIL %s\n", c.Name, pc.Err)
		} else if pc.NS != "" {
			fmt.Fprintf(stderr, "%s: NS %s\n", c.Name, pc.NS)
		} else if r := pc.Ratios(); len(r) > 0 {
			s := results.Summarize(r)
			fmt.Fprintf(stderr, "%s: ORT/vitbench %.3f× [%.3f, %.3f] over %d pairs\n", c.Name, s.Median, s.CILow, s.CIHigh, s.N)
		}
		done = append(done, pc)
	}
	var partial string
	if stop.Stopped() {
		e := stop.interruptedErr(len(done), len(list), "cases")
		partial, code = e.Error(), max(code, e.code())
	}
	vb, ort := pairFiles(done, b, nThreads, machine, srv)
	if partial != "" {
		vb.Meta.MarkPartial(partial)
		ort.Meta.MarkPartial(partial)
	}
	var writeErrs []error
	if err := writeBench(vb, benchPath, "", "", stdout); err != nil {
		writeErrs = append(writeErrs, err)
	}
	if err := saveResult(ortPath, func(w io.Writer) error { return results.WriteBenchText(w, ort) }, stdout); err != nil {
		writeErrs = append(writeErrs, err)
	}
	table := pairsMarkdown(done, b.Name(), vb.Meta.Commit, nThreads, *rewarm, machine, srv, partial)
	if err := saveResult(pairsPath, func(w io.Writer) error { _, err := io.WriteString(w, table); return err }, stdout); err != nil {
		writeErrs = append(writeErrs, err)
	}
	io.WriteString(stdout, table)
	if len(writeErrs) > 0 {
		return exitWrite, errors.Join(writeErrs...)
	}
	if partial != "" {
		return code, errors.New(partial)
	}
	if code != exitOK {
		return code, errors.New("some cases have no paired result (FAIL rows above)")
	}
	return code, nil
}

// referenceDirFlag returns -reference as given when it was on the command line or exists,
// else the reference/ beside the fixture directory resolveFixtures finds (a repository
// root), when there is one.
func referenceDirFlag(fs *flag.FlagSet, dir string) string {
	if flagSet(fs, "reference") || isDir(dir) {
		return dir
	}
	if fx, err := fixturesFlag(fs, defaultFixtures); err == nil {
		if cand := filepath.Join(filepath.Dir(filepath.Clean(fx)), "reference"); isDir(cand) {
			return cand
		}
	}
	return dir
}

// quietSpell is how long the ONNX Runtime server must have used no CPU before a vitbench
// sample starts; maxRewarm bounds the wait for it.
const (
	quietSpell = 10 * time.Millisecond
	maxRewarm  = 2 * time.Second
)

// pairOne times case c (spec) on b and on the server, sample by sample: in pair i the side
// that goes first alternates (vitbench in even pairs), and each sample follows untimed runs
// of its own side lasting cfg.rewarm; vitbench's go on until the server has been quiet for
// quietSpell. A failure of either side ends the case with Err set; a side that cannot run
// it (an op the backend lacks, a case ONNX Runtime has no model for), with NS.
func pairOne(b bench.Backend, srv *ortServer, c cases.Case, spec bench.Spec, cfg pairConfig) (pc pairCase) {
	pc = pairCase{Case: c.Name, Batch: int(spec.Inputs()[0].Shape[0]), Spec: spec, DType: c.DType,
		VitbenchLoad: math.NaN(), OrtLoad: math.NaN()}
	if err := runner.Unsupported(b, spec, c.DType); err != nil {
		pc.NS = fmt.Sprintf("%s cannot run it: %v", b.Name(), err)
		return pc
	}
	label, ns, err := srv.Open(c.Name, pc.Batch)
	switch {
	case err != nil:
		pc.Err = "ONNX Runtime: " + err.Error()
		return pc
	case ns != "":
		pc.NS = "ONNX Runtime cannot run it: " + ns
		return pc
	}
	pc.OrtLabel = label
	defer func() {
		rss, err := srv.CloseCase()
		pc.OrtRSS = rss
		if err != nil && pc.Err == "" && !pc.Interrupted {
			pc.Err = "ONNX Runtime: " + err.Error()
		}
	}()
	runner.ResetPeakRSS()
	s, err := runner.NewSampler(b, spec, c.DType, runner.BenchOptions{Warmup: cfg.warmup, MinSampleTime: cfg.minSample,
		Seed: 1, MaxBytes: cfg.maxBytes, CaseName: c.Name, Cancel: cfg.stop.Done()})
	if err != nil {
		pc.Err = err.Error()
		return pc
	}
	defer s.Close()
	var vbMeter contention.Meter
	var ortLoad, ortWall float64
	vitbenchSample := func() error {
		// Untimed runs for cfg.rewarm, and on until the server's threads have been off the
		// CPUs for quietSpell (ONNX Runtime's spin counts polls, so it lasts longer in wall
		// time while vitbench keeps both CPUs busy), at most maxRewarm.
		quiet := contention.NewQuiet(srv.Pid, quietSpell)
		for t0 := time.Now(); ; {
			if err := s.Run(); err != nil {
				return err
			}
			if el := time.Since(t0); el >= maxRewarm || el >= cfg.rewarm && quiet.Now() {
				break
			}
		}
		vbMeter.Begin()
		k, _, runs, err := s.Sample()
		vbMeter.End()
		if err != nil {
			return err
		}
		pc.VitbenchNs, pc.VitbenchRuns = append(pc.VitbenchNs, k), append(pc.VitbenchRuns, runs)
		return nil
	}
	ortSample := func() error {
		ns, runs, load, err := srv.Sample(cfg.rewarm)
		if err != nil {
			return fmt.Errorf("ONNX Runtime: %v", err)
		}
		pc.OrtNs, pc.OrtRuns = append(pc.OrtNs, ns), append(pc.OrtRuns, runs)
		wall := ns * float64(runs)
		ortLoad, ortWall = ortLoad+load*wall, ortWall+wall
		return nil
	}
	for i := 0; i < cfg.count; i++ {
		first, second := vitbenchSample, ortSample
		if i%2 == 1 {
			first, second = ortSample, vitbenchSample
		}
		err := first()
		if err == nil {
			err = second()
		}
		if err != nil || cfg.stop.Stopped() {
			if errors.Is(err, runner.ErrInterrupted) || cfg.stop.Stopped() {
				pc.Interrupted = true
			} else {
				pc.Err = err.Error()
			}
			break
		}
	}
	// A pair is whole or not kept.
	n := min(len(pc.VitbenchNs), len(pc.OrtNs))
	pc.VitbenchNs, pc.VitbenchRuns, pc.OrtNs, pc.OrtRuns = pc.VitbenchNs[:n], pc.VitbenchRuns[:n], pc.OrtNs[:n], pc.OrtRuns[:n]
	pc.VitbenchLoad, _ = vbMeter.Load()
	if ortWall > 0 {
		pc.OrtLoad = ortLoad / ortWall
	}
	pc.Peak, pc.RSS = s.Peak(), runner.PeakRSS()
	return pc
}
