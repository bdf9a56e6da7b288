package cpu

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/cases"
	"vitbench/bench/runner"
	"vitbench/impl/cpu/internal/kern"
)

// BenchmarkBF16AB times built-in cases on cpu and cpu-bf16 in pairs, one
// run of each back to back (which goes first alternates), so that the two
// sides of each ratio see the same load; it reports the median of the paired speed-ups and each
// side's median time; for a gemm case also the median share of the bf16
// dot-product peak (all threads) measured right after each pair.
// VITBENCH_AB_CASES names the cases (comma-separated;
// default gemm/1024, vit_s16, deit_ti), VITBENCH_AB_BATCH the batch
// (default 1), VITBENCH_AB_THREADS the threads of both backends and of
// the peak (default all). VITBENCH_AB_BLOCK=k times each side as k runs
// back to back, its time the median of the last k−1 (the first warms
// the caches with that side's weights, which the other side's run
// evicted; DeiT-Ti's fp32 and bf16 weights together fill a 32 MiB L3):
// the steady state a benchmark of one backend sees, still paired in
// time. The default, 1, alternates single runs. VITBENCH_AB_BASE=nchw
// makes the first side cpu-bf16 with every activation in NCHW (nchwOnly:
// no blocked convolution), so the ratio is the blocked layout's speed-up
// on cpu-bf16 (its times reported as nchw-ms):
//
//	go test ./impl/cpu -run '^$' -bench BF16AB -benchtime 20x
func BenchmarkBF16AB(b *testing.B) {
	if !kern.HasBF16() {
		b.Skip("no AVX512_BF16")
	}
	names := []string{"gemm/1024", "vit_s16", "deit_ti"}
	if v := os.Getenv("VITBENCH_AB_CASES"); v != "" {
		names = strings.Split(v, ",")
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			c, ok := cases.Lookup(name)
			if !ok {
				b.Fatalf("no case %s", name)
			}
			batch, _ := strconv.Atoi(os.Getenv("VITBENCH_AB_BATCH"))
			s, err := c.Spec(max(batch, 1))
			if err != nil {
				b.Fatal(err)
			}
			threads, _ := strconv.Atoi(os.Getenv("VITBENCH_AB_THREADS"))
			var progs [2]*runner.Program
			bes, base := []*Backend{New(threads), NewBF16(threads)}, "fp32"
			if os.Getenv("VITBENCH_AB_BASE") == "nchw" {
				bes[0], base = NewBF16(threads), "nchw"
				bes[0].nchwOnly = true
			}
			for i, be := range bes {
				p, err := runner.Prepare(be, s, bench.Float32, runner.SynthData(s, 1))
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				for range 2 { // warm-up: weights packed, caches filled
					if err := p.Run(); err != nil {
						b.Fatal(err)
					}
				}
				progs[i] = p
			}
			block := 1
			if v, err := strconv.Atoi(os.Getenv("VITBENCH_AB_BLOCK")); err == nil && v > 1 {
				block = v
			}
			var fp32, bf16, ratio, ofPeak []float64
			for it := 0; b.Loop(); it++ {
				var d [2]time.Duration
				for j := range progs {
					i := (j + it) % 2 // each backend goes first in every other pair
					var runs []float64
					for r := range block {
						t0 := time.Now()
						if err := progs[i].Run(); err != nil {
							b.Fatal(err)
						}
						if r > 0 || block == 1 {
							runs = append(runs, time.Since(t0).Seconds())
						}
					}
					d[i] = time.Duration(median(runs) * 1e9)
				}
				fp32 = append(fp32, d[0].Seconds())
				bf16 = append(bf16, d[1].Seconds())
				ratio = append(ratio, d[0].Seconds()/d[1].Seconds())
				if strings.HasPrefix(name, "gemm/") {
					pk, err := MeasurePeak(PeakOptions{Threads: bes[1].Threads(), Duration: 20 * time.Millisecond, Count: 1, BandwidthBytes: 3 << 20})
					if err != nil {
						b.Fatal(err)
					}
					ofPeak = append(ofPeak, 2*float64(s.MACs())/d[1].Seconds()/1e9/pk.BF16Total)
				}
			}
			b.ReportMetric(median(ratio), "x-speedup")
			b.ReportMetric(median(fp32)*1e3, base+"-ms")
			b.ReportMetric(median(bf16)*1e3, "bf16-ms")
			b.ReportMetric(2*float64(s.MACs())/median(bf16)/1e9, "bf16-GFLOP/s")
			if ofPeak != nil {
				b.ReportMetric(100*median(ofPeak), "bf16-%peak")
			}
		})
	}
}

// BenchmarkBF16GemmShare measures cpu-bf16's gemm/1024 (batch 1) as a
// share of the bf16 dot-product peak in steady state, the way a GEMM
// benchmark of another library is timed: per iteration, five runs back to
// back on a warm program (weights packed, operands in cache, the workers
// awake), then the peak probe on the same threads; it reports the median
// over iterations of the median run's GFLOP/s over that probe's peak.
// BenchmarkBF16AB's bf16-%peak times single runs between fp32 runs and
// probes instead, which is colder. VITBENCH_AB_THREADS sets the threads
// (default all):
//
//	go test ./impl/cpu -run '^$' -bench BF16GemmShare -benchtime 20x
func BenchmarkBF16GemmShare(b *testing.B) {
	if !kern.HasBF16() {
		b.Skip("no AVX512_BF16")
	}
	c, ok := cases.Lookup("gemm/1024")
	if !ok {
		b.Fatal("no case gemm/1024")
	}
	s, err := c.Spec(1)
	if err != nil {
		b.Fatal(err)
	}
	threads, _ := strconv.Atoi(os.Getenv("VITBENCH_AB_THREADS"))
	be := NewBF16(threads)
	p, err := runner.Prepare(be, s, bench.Float32, runner.SynthData(s, 1))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	flops := 2 * float64(s.MACs())
	var share, rate []float64
	for b.Loop() {
		var runs []float64
		for range 5 {
			t0 := time.Now()
			if err := p.Run(); err != nil {
				b.Fatal(err)
			}
			runs = append(runs, time.Since(t0).Seconds())
		}
		pk, err := MeasurePeak(PeakOptions{Threads: be.Threads(), Duration: 20 * time.Millisecond, Count: 1, BandwidthBytes: 3 << 20})
		if err != nil {
			b.Fatal(err)
		}
		g := flops / median(runs) / 1e9
		rate = append(rate, g)
		share = append(share, g/pk.BF16Total)
	}
	b.ReportMetric(100*median(share), "bf16-%peak")
	b.ReportMetric(median(rate), "bf16-GFLOP/s")
}

// median is the middle value of x (the upper one of an even count).
func median(x []float64) float64 { s := slices.Sorted(slices.Values(x)); return s[len(s)/2] }
