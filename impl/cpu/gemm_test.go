package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"vitbench/impl/cpu/internal/kern"
)

// BenchmarkGemmParallel shows how the GEMM scales from one worker to two
// on a ViT-B patch-embed shape (196×768×768).
func BenchmarkGemmParallel(b *testing.B) {
	m, n, k := 196, 768, 768
	rng := rand.New(rand.NewPCG(1, 1))
	a, w, c := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
	for i := range a {
		a[i] = rng.Float32()
	}
	for i := range w {
		w[i] = rng.Float32()
	}
	pb := kern.PackBT(n, k, w, k)
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			for b.Loop() {
				gemmParallel(threads, m, a, k, pb, c, n, kern.Epilogue{})
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
