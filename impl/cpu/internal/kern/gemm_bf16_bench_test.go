package kern

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkGemmBF16 times the bf16 GEMM (weights packed once) against the
// float32 one on the same shapes, one thread, and the bf16 microkernel
// alone on panels that stay in L1.
func BenchmarkGemmBF16(b *testing.B) {
	for _, s := range [][3]int{{1024, 1024, 1024}, {197, 1152, 384}, {197, 384, 1536}} {
		m, n, k := s[0], s[1], s[2]
		rng := rand.New(rand.NewPCG(1, 2))
		a, _ := guarded(rng, m*k, true)
		w, _ := guarded(rng, n*k, true)
		c := make([]float32, m*n)
		for _, bf := range []bool{false, true} {
			b.Run(fmt.Sprintf("bf16=%v/m=%d/n=%d/k=%d", bf, m, n, k), func(b *testing.B) {
				pb := PackBT(n, k, w, k)
				if bf {
					pb = PackBTBF16(n, k, w, k)
				}
				for b.Loop() {
					SgemmPacked(m, a, k, pb, c, n, nil, 0, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
	// Attention's products of one head (ViT-S/16): QKᵀ and P·V, B packed
	// per call.
	for _, s := range []struct {
		m, n, k int
		transB  bool
	}{{197, 197, 64, true}, {197, 64, 197, false}} {
		rng := rand.New(rand.NewPCG(1, 2))
		a, _ := guarded(rng, s.m*s.k, true)
		w, _ := guarded(rng, s.n*s.k, true)
		c := make([]float32, s.m*s.n)
		ldb := s.k
		if !s.transB {
			ldb = s.n
		}
		for _, bf := range []bool{false, true} {
			b.Run(fmt.Sprintf("bf16=%v/sgemm/m=%d/n=%d/k=%d/transB=%v", bf, s.m, s.n, s.k, s.transB), func(b *testing.B) {
				for b.Loop() {
					if bf {
						SgemmBF16(s.m, s.n, s.k, a, s.k, w, ldb, s.transB, c, s.n)
					} else {
						Sgemm(s.m, s.n, s.k, a, s.k, w, ldb, s.transB, c, s.n)
					}
				}
				b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
	kp := 128
	a := make([]uint32, bf16MR*kp)
	bb := make([]uint32, bf16NR*kp)
	c := make([]float32, bf16MR*bf16NR)
	tile := bf16Tile()
	b.Run(fmt.Sprintf("micro-%s-12x32/kp=%d", BF16Kernel(), kp), func(b *testing.B) {
		for b.Loop() {
			tile(bf16MR, kp, a, kp, bb, c, bf16NR, 0, nil, nil, 0, nil)
		}
		b.ReportMetric(4*float64(bf16MR*bf16NR*kp)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkBF16GELUShare measures what the GELU after a bf16 MLP's first
// product costs (ViT-S/16's fc1, 197×1536×384, and ViT-B/16's): the same
// GEMM with and without the GELU epilogue, run back to back in pairs
// (which goes first alternating); the
// median paired ratio minus one is the share an epilogue in registers
// could at most save.
func BenchmarkBF16GELUShare(b *testing.B) {
	for _, s := range [][3]int{{197, 1536, 384}, {197, 3072, 768}} {
		m, n, k := s[0], s[1], s[2]
		rng := rand.New(rand.NewPCG(1, 2))
		a, _ := guarded(rng, m*k, true)
		w, _ := guarded(rng, n*k, true)
		bias, _ := guarded(rng, n, true)
		c := make([]float32, m*n)
		pb := PackBTBF16(n, k, w, k)
		b.Run(fmt.Sprintf("m=%d/n=%d/k=%d", m, n, k), func(b *testing.B) {
			ratio := pairedRatio(b,
				func() { SgemmPackedEpi(m, a, k, pb, c, n, Epilogue{Bias: bias, Act: ActGELU}, 0, n) },
				func() { SgemmPackedEpi(m, a, k, pb, c, n, Epilogue{Bias: bias}, 0, n) })
			b.ReportMetric(100*(ratio-1), "gelu-%")
		})
	}
}

// pairedRatio runs f and g back to back once per benchmark iteration,
// which goes first alternating, and returns the median over the pairs of
// f's time over g's: a ratio both sides of which see the same load.
func pairedRatio(b *testing.B, f, g func()) float64 {
	var ratios []float64
	for it := 0; b.Loop(); it++ {
		var d [2]time.Duration
		for j := range 2 {
			i := (j + it) % 2
			t0 := time.Now()
			[]func(){f, g}[i]()
			d[i] = time.Since(t0)
		}
		ratios = append(ratios, d[0].Seconds()/d[1].Seconds())
	}
	return median(ratios)
}

// median is the middle value of x (the upper one of an even count).
func median(x []float64) float64 { s := slices.Sorted(slices.Values(x)); return s[len(s)/2] }
