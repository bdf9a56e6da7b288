package peak

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"vitbench/impl/cpu/internal/cpuinfo"
)

// Options configures Measure. Zero fields take the defaults.
type Options struct {
	// ISA forces the FMA path; "" takes the fastest this machine supports.
	ISA ISA
	// Threads is the goroutine count of the "total" figures (default
	// GOMAXPROCS). At most GOMAXPROCS of them run at once.
	Threads int
	// Duration is the length of each timed FMA run (default 100ms).
	Duration time.Duration
	// Count is the number of timed runs per figure (default 7); figures
	// are the best run and the median run.
	Count int
	// BandwidthBytes is the total size of the three bandwidth arrays
	// (default 256 MiB); it must be far larger than the last-level cache.
	BandwidthBytes int64
}

// Defaults of Options.
const (
	DefaultDuration       = 100 * time.Millisecond
	DefaultCount          = 7
	DefaultBandwidthBytes = 256 << 20
)

// Result is what Measure found; its JSON form is the output of
// `vitbench peak -json`.
type Result struct {
	CPU     string `json:"cpu"`
	ISA     ISA    `json:"isa"` // path of the FMA loop
	Threads int    `json:"threads"`
	// FMA throughput, GFLOP/s (a multiply-add is 2 flops), best and median
	// run: one thread, and Threads threads running together.
	FMAPerCore       float64 `json:"fma_gflops_per_core"`
	FMATotal         float64 `json:"fma_gflops_total"`
	FMAPerCoreMedian float64 `json:"fma_gflops_per_core_median"`
	FMATotalMedian   float64 `json:"fma_gflops_total_median"`
	// bf16 dot-product throughput (VDPBF16PS: two bf16 products summed
	// into each fp32 lane, 4 flops per lane), GFLOP/s, best and median run,
	// one thread and Threads together: the ceiling of the bf16 GEMM. Zero
	// (and absent from the JSON) without AVX512_BF16 or on another path.
	BF16PerCore       float64 `json:"bf16_dot_gflops_per_core,omitempty"`
	BF16Total         float64 `json:"bf16_dot_gflops_total,omitempty"`
	BF16PerCoreMedian float64 `json:"bf16_dot_gflops_per_core_median,omitempty"`
	BF16TotalMedian   float64 `json:"bf16_dot_gflops_total_median,omitempty"`
	// AMX-BF16 tile throughput (TDPBF16PS: 16 pairs of bf16 products into
	// each of a 16×16 tile's float32 lanes, 64 flops per lane), GFLOP/s,
	// best and median, one thread and Threads together: the ceiling of the
	// bf16 GEMM where it runs on AMX. Zero (and absent) without AMX-BF16
	// or on another path.
	AMXPerCore       float64 `json:"amx_bf16_gflops_per_core,omitempty"`
	AMXTotal         float64 `json:"amx_bf16_gflops_total,omitempty"`
	AMXPerCoreMedian float64 `json:"amx_bf16_gflops_per_core_median,omitempty"`
	AMXTotalMedian   float64 `json:"amx_bf16_gflops_total_median,omitempty"`
	// Memory bandwidth, GB/s (bytes read + written / time, 1e9 bytes),
	// best run of the better of triad and copy: one thread, Threads threads.
	Bandwidth1T    float64 `json:"bandwidth_gbps_1t"`
	BandwidthTotal float64 `json:"bandwidth_gbps_total"`
	// Every kernel's best GB/s, keyed "triad", "copy".
	BandwidthKernels1T    map[string]float64 `json:"bandwidth_kernels_gbps_1t"`
	BandwidthKernelsTotal map[string]float64 `json:"bandwidth_kernels_gbps_total"`
	// The cross-CPU cache-line round trip in ns and the CPU pair ("cpu0↔cpu1"), filled in
	// by the caller (package contention, ProbeRoundTrip); 0 and "" when not probed.
	CoreRoundTripNs float64 `json:"core_round_trip_ns,omitempty"`
	CoreRoundTrip   string  `json:"core_round_trip,omitempty"`
	// The options used.
	Duration       float64 `json:"duration_s"` // each timed FMA run
	Count          int     `json:"count"`
	BandwidthBytes int64   `json:"bandwidth_bytes"`
	// FMA loop shape: chains independent chains of lanes-wide FMAs.
	FMAChains int `json:"fma_chains"`
	FMALanes  int `json:"fma_lanes"`
}

// fmaX and fmaY are the loop's constants: acc = acc·0.5 + 1 converges to 2
// from any start, so long runs stay clear of overflow and subnormals, and
// the product is exact, so every path gives bit-identical results.
const fmaX, fmaY = 0.5, 1

// Measure times the FMA loop (one thread, then Threads together), the
// bf16 dot-product loop the same way on the AVX-512 path of a CPU with
// AVX512_BF16, the AMX-BF16 loop on one with AMX, and the bandwidth kernels (one thread, then Threads
// together). It takes about 2·(Count+2)·Duration per loop plus the
// bandwidth passes.
func Measure(opt Options) (Result, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return Result{}, err
	}
	k, ok := kernelFor(o.ISA)
	if !ok {
		return Result{}, fmt.Errorf("peak: ISA %q not supported on this machine/build (have %v)", o.ISA, Supported())
	}
	r := Result{
		CPU: cpuinfo.Model(), ISA: k.isa, Threads: o.Threads,
		Duration: o.Duration.Seconds(), Count: o.Count, BandwidthBytes: o.BandwidthBytes,
		FMAChains: k.chains, FMALanes: k.lanes,
	}
	r.FMAPerCore, r.FMAPerCoreMedian, r.FMATotal, r.FMATotalMedian = timeLoop(k, o)
	if d, ok := dotKernel(); ok && o.ISA == ISAAVX512 {
		r.BF16PerCore, r.BF16PerCoreMedian, r.BF16Total, r.BF16TotalMedian = timeLoop(d, o)
	}
	if a, ok := amxKernel(); ok && o.ISA == ISAAVX512 {
		r.AMXPerCore, r.AMXPerCoreMedian, r.AMXTotal, r.AMXTotalMedian = timeLoop(a, o)
	}

	bw := measureBandwidth(o.BandwidthBytes, o.Threads, o.Count)
	r.BandwidthKernels1T, r.BandwidthKernelsTotal = bw.one, bw.all
	for _, v := range bw.one {
		r.Bandwidth1T = max(r.Bandwidth1T, v)
	}
	for _, v := range bw.all {
		r.BandwidthTotal = max(r.BandwidthTotal, v)
	}
	return r, nil
}

// timeLoop times loop k, calibrated to o.Duration, o.Count times on one
// thread and o.Count times on o.Threads together, and returns the best and
// median GFLOP/s of each.
func timeLoop(k fmaKernel, o Options) (perCore, perCoreMedian, total, totalMedian float64) {
	n := calibrate(k, o.Duration)
	one := fmaRuns(k, n, 1, o.Count)
	all := one
	if o.Threads > 1 {
		all = fmaRuns(k, n, o.Threads, o.Count)
	}
	return slices.Max(one), median(one), slices.Max(all), median(all)
}

func (o Options) withDefaults() (Options, error) {
	if o.ISA == "" {
		o.ISA = Best()
	}
	if o.Threads == 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Count == 0 {
		o.Count = DefaultCount
	}
	if o.BandwidthBytes == 0 {
		o.BandwidthBytes = DefaultBandwidthBytes
	}
	switch {
	case o.Threads < 0:
		return o, fmt.Errorf("peak: threads %d < 0", o.Threads)
	case o.Duration < 0:
		return o, fmt.Errorf("peak: duration %v < 0", o.Duration)
	case o.Count < 0:
		return o, fmt.Errorf("peak: count %d < 0", o.Count)
	case o.BandwidthBytes < 24*64*int64(o.Threads):
		return o, fmt.Errorf("peak: bandwidth buffers of %d bytes are too small for %d threads", o.BandwidthBytes, o.Threads)
	}
	return o, nil
}

// calibrate returns the iteration count for which one run of k takes about
// d, doubling from a short run until a run takes d/16 (timer noise is then
// far below 1%).
func calibrate(k fmaKernel, d time.Duration) int {
	acc := initAcc(k)
	n := 1 << 10
	for {
		t := runTogether(1, func(int) { k.loop(n, fmaX, fmaY, acc) })
		if t >= d/16 || n >= 1<<40 {
			return max(1, int(float64(n)*d.Seconds()/t.Seconds()))
		}
		n *= 2
	}
}

// fmaRuns times count runs of n iterations on threads threads together,
// after one untimed warm-up run, and returns each run's GFLOP/s.
func fmaRuns(k fmaKernel, n, threads, count int) []float64 {
	accs := make([][]float32, threads)
	for t := range accs {
		accs[t] = initAcc(k)
	}
	run := func(t int) { k.loop(n, fmaX, fmaY, accs[t]) }
	runTogether(threads, run)
	out := make([]float64, count)
	for i := range out {
		d := runTogether(threads, run)
		out[i] = float64(threads) * k.flops(n) / d.Seconds() / 1e9
	}
	return out
}

// initAcc returns accumulators with a different start value in every lane
// of every chain.
func initAcc(k fmaKernel) []float32 {
	acc := make([]float32, k.lanes*k.chains)
	for i := range acc {
		acc[i] = float32(i) / 8
	}
	return acc
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 0 {
		return (s[m-1] + s[m]) / 2
	}
	return s[m]
}
