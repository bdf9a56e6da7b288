package peak

import (
	"math"
	"testing"
	"time"
)

// fmaRef is the plain loop every FMA path must match bit for bit.
func fmaRef(n int, x, y float32, acc []float32) {
	for ; n > 0; n-- {
		for i := range acc {
			// Explicit float32 rounding of the product: with fmaX a power
			// of two it is exact, so fused and unfused agree.
			acc[i] = float32(acc[i]*x) + y
		}
	}
}

// TestFMAKernels checks every path this machine runs does exactly n
// multiply-adds on every lane of every chain, and writes nothing outside
// its accumulators (NaN guards on both sides).
func TestFMAKernels(t *testing.T) {
	const guard = 64
	for _, p := range Supported() {
		k, ok := kernelFor(p)
		if !ok {
			t.Fatalf("%s: supported but no kernel", p)
		}
		for _, n := range []int{0, 1, 2, 5, 13} {
			buf := make([]float32, guard+k.lanes*k.chains+guard)
			for i := range buf {
				buf[i] = float32(math.NaN())
			}
			acc := buf[guard : len(buf)-guard]
			copy(acc, initAcc(k))
			want := initAcc(k)
			fmaRef(n, fmaX, fmaY, want)

			k.loop(n, fmaX, fmaY, acc)
			for i := range acc {
				if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s n=%d: acc[%d] = %v, want %v", p, n, i, acc[i], want[i])
				}
			}
			for i := range guard {
				if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[len(buf)-1-i])) {
					t.Fatalf("%s n=%d: write outside the accumulators", p, n)
				}
			}
		}
	}
}

func TestMeasure(t *testing.T) {
	for _, p := range Supported() {
		r, err := Measure(Options{ISA: p, Duration: 2 * time.Millisecond, Count: 2, BandwidthBytes: 3 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if r.ISA != p || r.Threads < 1 || r.Count != 2 || r.CPU == "" {
			t.Errorf("%s: result %+v", p, r)
		}
		for name, v := range map[string]float64{
			"fma per core": r.FMAPerCore, "fma total": r.FMATotal,
			"fma per core median": r.FMAPerCoreMedian, "fma total median": r.FMATotalMedian,
			"bandwidth 1t": r.Bandwidth1T, "bandwidth total": r.BandwidthTotal,
			"triad 1t": r.BandwidthKernels1T["triad"], "copy total": r.BandwidthKernelsTotal["copy"],
		} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("%s: %s = %v, want positive and finite", p, name, v)
			}
		}
		if r.FMAPerCoreMedian > r.FMAPerCore || r.FMATotalMedian > r.FMATotal {
			t.Errorf("%s: median above best: %+v", p, r)
		}
	}
}

func TestMeasureRejects(t *testing.T) {
	for _, o := range []Options{
		{ISA: "sse1"},
		{Threads: -1},
		{Count: -2},
		{Duration: -time.Second},
		{Threads: 4, BandwidthBytes: 1000},
	} {
		if _, err := Measure(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestSpan checks the thread ranges tile [0, n) in order.
func TestSpan(t *testing.T) {
	for _, n := range []int{0, 1, 7, 64, 1000, 1 << 20} {
		for threads := 1; threads <= 5; threads++ {
			next := 0
			for th := range threads {
				lo, hi := span(n, th, threads)
				if lo != next || hi < lo {
					t.Fatalf("n=%d threads=%d: thread %d has [%d,%d), want start %d", n, threads, th, lo, hi, next)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("n=%d threads=%d: ranges end at %d", n, threads, next)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median odd = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median even = %v", m)
	}
}

// TestDotKernel: where the CPU has AVX512_BF16, the bf16 dot-product loop
// does exactly n VDPBF16PS on every lane of every chain (dotRef), writes
// nothing outside its accumulators, and counts 4 flops per lane and
// instruction; Measure then reports its peak, elsewhere none.
func TestDotKernel(t *testing.T) {
	k, ok := dotKernel()
	if !ok {
		r, err := Measure(Options{Duration: time.Millisecond, Count: 1, BandwidthBytes: 3 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if r.BF16PerCore != 0 || r.BF16Total != 0 {
			t.Errorf("a bf16 peak without the bf16 loop: %+v", r)
		}
		return
	}
	const guard = 64
	for _, n := range []int{0, 1, 2, 5, 13} {
		buf := make([]float32, guard+k.lanes*k.chains+guard)
		for i := range buf {
			buf[i] = float32(math.NaN())
		}
		acc := buf[guard : len(buf)-guard]
		copy(acc, initAcc(k))
		want := initAcc(k)
		dotRef(n, want)
		k.loop(n, 0, 0, acc)
		for i := range acc {
			if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: acc[%d] = %v, want %v", n, i, acc[i], want[i])
			}
		}
		for i := range guard {
			if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[len(buf)-1-i])) {
				t.Fatalf("n=%d: write outside the accumulators", n)
			}
		}
	}
	if got := k.flops(1); got != 4*16*24 {
		t.Errorf("flops of one iteration %v, want %v", got, 4*16*24)
	}
	r, err := Measure(Options{ISA: ISAAVX512, Duration: 2 * time.Millisecond, Count: 2, BandwidthBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !(r.BF16PerCore > 0) || !(r.BF16Total > 0) || r.BF16PerCoreMedian > r.BF16PerCore {
		t.Errorf("bf16 peak %+v", r)
	}
}

// TestAMXKernel: where the CPU has AMX-BF16, the AMX loop runs exactly n
// TDPBF16PS on every lane of its six tiles (each adds 16 pairs of
// 0.5·1 + 0.25·1: 12 per iteration, exact), writes nothing outside them,
// and counts 64 flops per lane and instruction; Measure then reports its
// peak, elsewhere none.
func TestAMXKernel(t *testing.T) {
	k, ok := amxKernel()
	if !ok {
		r, err := Measure(Options{Duration: time.Millisecond, Count: 1, BandwidthBytes: 3 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if r.AMXPerCore != 0 || r.AMXTotal != 0 {
			t.Errorf("an AMX peak without the AMX loop: %+v", r)
		}
		return
	}
	const guard = 64
	for _, n := range []int{1, 2, 5, 13} {
		buf := make([]float32, guard+k.lanes*k.chains+guard)
		for i := range buf {
			buf[i] = float32(math.NaN())
		}
		acc := buf[guard : len(buf)-guard]
		k.loop(n, 0, 0, acc)
		for i := range acc {
			if acc[i] != float32(12*n) {
				t.Fatalf("n=%d: acc[%d] = %v, want %v", n, i, acc[i], 12*n)
			}
		}
		for i := range guard {
			if !math.IsNaN(float64(buf[i])) || !math.IsNaN(float64(buf[len(buf)-1-i])) {
				t.Fatalf("n=%d: write outside the accumulators", n)
			}
		}
	}
	if got := k.flops(1); got != 6*16*16*16*2*2 {
		t.Errorf("flops of one iteration %v, want %v", got, 6*16*16*16*2*2)
	}
	r, err := Measure(Options{ISA: ISAAVX512, Duration: 2 * time.Millisecond, Count: 2, BandwidthBytes: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !(r.AMXPerCore > 0) || !(r.AMXTotal > 0) || r.AMXPerCoreMedian > r.AMXPerCore {
		t.Errorf("AMX peak %+v", r)
	}
}
