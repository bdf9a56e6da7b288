package cpu

import (
	"fmt"
	"math"
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

// TestGemmParallelMatchesOneWorker: however the rows and columns are
// split between workers (row tiles, the uneven remainder by columns, or
// columns only, for a few rows or a large B), every output equals the one-worker result, the
// epilogue's residual rows included: bit for bit on the SIMD paths, whose
// tiles sum in one order wherever they start; to rounding on the Go path,
// whose 4×4 blocks regroup the columns with the split.
func TestGemmParallelMatchesOneWorker(t *testing.T) {
	exact := kern.Active() != kern.ISAGo
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = rng.Float32()*2 - 1
		}
		return s
	}
	// The last shape's B is past colSplitB: up to colSplitRows rows
	// split by columns, then by rows.
	for _, nk := range [][2]int{{45, 70}, {200, 70}, {800, 700}, {-45, 70}, {-200, 70}} {
		n, k := nk[0], nk[1]
		pack := kern.PackBT
		if n < 0 { // the bf16 GEMM, whose workers split the rows in halves
			n, pack = -n, kern.PackBTBF16
		}
		w, bias := fill(n*k), fill(n)
		pb := pack(n, k, w, k)
		for _, m := range []int{1, 5, 24, 25, 47, 48, 49, 100, 197, 200, 400} {
			a, res := fill(m*k), fill(m*(n+1))
			epi := kern.Epilogue{Bias: bias, Act: kern.ActGELU, Residual: res, LdR: n + 1}
			want := make([]float32, m*n)
			gemmParallel(1, m, a, k, pb, want, n, epi)
			for _, threads := range []int{2, 3, 4} {
				got := make([]float32, m*n)
				gemmParallel(threads, m, a, k, pb, got, n, epi)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d != 0 && (exact || d > 1e-5*(1+math.Abs(float64(want[i])))) {
						t.Fatalf("m %d n %d threads %d: C[%d, %d] = %v, one worker gives %v", m, n, threads, i/n, i%n, got[i], want[i])
					}
				}
			}
		}
	}
}
