package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"time"

	"vitbench/bench"
	"vitbench/bench/contention"
	"vitbench/bench/runner"
	vcpu "vitbench/impl/cpu"
)

// cmdPeak measures the ceilings kernel timings are read against: fp32 FMA
// GFLOP/s, the bf16 dot product's (VDPBF16PS, where the CPU has it) and
// memory GB/s, on one thread and on all.
func cmdPeak(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlags("peak", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	threads := fs.Int("threads", 0, "threads of the all-threads figures (0 = GOMAXPROCS)")
	duration := fs.Duration("duration", vcpu.PeakDefaultDuration, "length of each timed FMA run")
	count := fs.Int("count", vcpu.PeakDefaultCount, "timed runs per figure (best and median are reported)")
	memMiB := fs.Int("mem-mib", vcpu.PeakDefaultBandwidthBytes>>20, "total size of the bandwidth arrays, MiB (far above the last-level cache)")
	isa := fs.String("isa", "", "force the FMA path (avx512, avx2, go; default the fastest here)")
	budget := maxBytesFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return exitUsage, err
	}
	if fs.NArg() > 0 {
		return exitUsage, usagef("unexpected arguments %v", fs.Args())
	}
	if *threads < 0 || *duration <= 0 || *count < 1 || *memMiB < 1 {
		return exitUsage, usagef("-threads must be ≥ 0, -duration > 0, -count and -mem-mib ≥ 1")
	}
	if err := checkPeakMemory(int64(*memMiB), int64(*budget)); err != nil {
		return exitUsage, err
	}
	// More threads than GOMAXPROCS would take turns, not run together.
	if *threads > runtime.GOMAXPROCS(0) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(*threads))
	}
	r, err := vcpu.MeasurePeak(vcpu.PeakOptions{ISA: vcpu.PeakISA(*isa), Threads: *threads, Duration: *duration,
		Count: *count, BandwidthBytes: int64(*memMiB) << 20})
	if err != nil {
		return exitUsage, usageError{err}
	}
	addRoundTrip(&r)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(r)
	}
	return exitOK, writePeak(stdout, r)
}

// checkPeakMemory refuses bandwidth arrays of memMiB MiB in all that do not fit the memory
// budget (0: runner.DefaultMaxBytes), before they are allocated, with the need and the
// budget in the message.
func checkPeakMemory(memMiB, budget int64) error {
	if budget <= 0 {
		budget = runner.DefaultMaxBytes()
	}
	need := bench.MulSat(memMiB, 1<<20)
	if need > budget {
		return usagef("-mem-mib %d: the bandwidth arrays need %s, more than the memory budget of %s (%d bytes; raise it with -max-bytes)",
			memMiB, bench.FormatBytes(need), bench.FormatBytes(budget), budget)
	}
	return nil
}

// writePeak prints r as a Markdown table, one row per figure.
func writePeak(w io.Writer, r vcpu.PeakResult) error {
	fmt.Fprintf(w, "cpu: %s; FMA path %s (%d chains × %d lanes); best and median of %d runs of %v; bandwidth arrays %d MiB\n\n",
		r.CPU, r.ISA, r.FMAChains, r.FMALanes, r.Count, time.Duration(r.Duration*1e9), r.BandwidthBytes>>20)
	all := fmt.Sprintf("%d threads", r.Threads)
	if r.Threads == 1 {
		all = "1 thread (all)"
	}
	t := newTable(w, "figure", "path", "1 thread", all, "unit")
	f := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	t.Append("fp32 FMA peak (best)", string(r.ISA), f(r.FMAPerCore), f(r.FMATotal), "GFLOP/s")
	t.Append("fp32 FMA (median)", string(r.ISA), f(r.FMAPerCoreMedian), f(r.FMATotalMedian), "GFLOP/s")
	if r.BF16PerCore > 0 {
		t.Append("bf16 dot peak (best)", "avx512_bf16", f(r.BF16PerCore), f(r.BF16Total), "GFLOP/s")
		t.Append("bf16 dot (median)", "avx512_bf16", f(r.BF16PerCoreMedian), f(r.BF16TotalMedian), "GFLOP/s")
	}
	if r.AMXPerCore > 0 {
		t.Append("bf16 AMX tile peak (best)", "amx_bf16", f(r.AMXPerCore), f(r.AMXTotal), "GFLOP/s")
		t.Append("bf16 AMX tile (median)", "amx_bf16", f(r.AMXPerCoreMedian), f(r.AMXTotalMedian), "GFLOP/s")
	}
	t.Append("memory bandwidth (best)", "triad or copy", f(r.Bandwidth1T), f(r.BandwidthTotal), "GB/s")
	t.Append("triad a = b + s·c (best)", "go loop", f(r.BandwidthKernels1T["triad"]), f(r.BandwidthKernelsTotal["triad"]), "GB/s")
	t.Append("copy a = b (best)", "go memmove", f(r.BandwidthKernels1T["copy"]), f(r.BandwidthKernelsTotal["copy"]), "GB/s")
	if r.CoreRoundTripNs > 0 {
		// Between two CPUs, so no one-thread figure.
		t.Append("cross-CPU round trip (best)", r.CoreRoundTrip, "—", fmt.Sprintf("%.0f", r.CoreRoundTripNs), "ns")
	}
	return t.Render()
}

// addRoundTrip probes the cross-CPU round trip (contention.ProbeRoundTrip) into r; r is
// left without one when the probe fails (one CPU, the other CPU busy).
func addRoundTrip(r *vcpu.PeakResult) {
	rtt := contention.ProbeRoundTrip()
	if !rtt.Measured() {
		return
	}
	r.CoreRoundTripNs, r.CoreRoundTrip = rtt.Nanos, "threads not pinned"
	if rtt.CPUs[0] >= 0 {
		r.CoreRoundTrip = fmt.Sprintf("cpu%d↔cpu%d", rtt.CPUs[0], rtt.CPUs[1])
	}
}
