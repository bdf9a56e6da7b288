package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// quickGELUTol bounds |QuickGELU − oracle| relative to |y|: exp's error
// (≤ 2 ulp, times |1.702·x|·e/(1+e) ≤ 1 for the rounding of the argument
// as PyTorch rounds it too) and three roundings (x·n, 1 + e, the division).
const quickGELUTol = 6e-7

// TestQuickGELUMatchesOracle runs QuickGELU on every path and size, out of
// place and in place, on values in [−16, 16] inside guard regions, against
// the float64 oracle and the Go path.
func TestQuickGELUMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range vecSizes {
		x, _ := guarded(rng, n, true)
		for i := range x {
			x[i] *= 16
		}
		want := make([]float32, n)
		quickGELURef(n, x, want)
		goPath := make([]float32, n)
		quickGELUGo(x, goPath)
		forEachISA(t, func(t *testing.T) {
			for _, inPlace := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/inplace=%v", n, inPlace)
				in, inf := guarded(rng, n, false)
				copy(in, x)
				out, of := guarded(rng, n, false)
				if inPlace {
					out, of = in, inf
				}
				QuickGELU(n, in, out)
				checkGuards(t, name+" x", inf)
				checkGuards(t, name+" y", of)
				for i := range want {
					if !close32(out[i], want[i], quickGELUTol, 1e-30) {
						t.Fatalf("%s: quick_gelu(%g) = %g, oracle %g", name, x[i], out[i], want[i])
					}
					if !close32(out[i], goPath[i], quickGELUTol, 1e-30) {
						t.Fatalf("%s: quick_gelu(%g) = %g, Go path %g", name, x[i], out[i], goPath[i])
					}
				}
			}
		})
	}
}

// TestQuickGELUMatchesPyTorch compares with x * torch.sigmoid(1.702 * x)
// (torch 1.13, CPU, fp32), values printed by
//
//	/usr/bin/python3 -c 'import torch; x = torch.tensor([-100., -10., -5., -3., -1., -0.5, -0.03125, -0., 0., 0.03125, 0.5, 1., 3., 5., 10., 100., float("inf"), float("-inf")]); print([repr(v) for v in (x*torch.sigmoid(1.702*x)).tolist()])'
//
// with the signs of zeros and the special values too.
func TestQuickGELUMatchesPyTorch(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	x := []float32{-100, -10, -5, -3, -1, -0.5, -0.03125, negZero, 0, 0.03125, 0.5, 1, 3, 5, 10, 100, inf, -inf}
	torch := []float32{negZero, -4.0579593019174354e-07, -0.0010070160496979952, -0.018071310594677925, -0.15420423448085785,
		-0.14961156249046326, -0.015209570527076721, negZero, 0, 0.01604042947292328, 0.35038843750953674, 0.8457958102226257,
		2.981928825378418, 4.998992919921875, 10, 100, inf, float32(math.NaN())}
	forEachISA(t, func(t *testing.T) {
		for _, n := range []int{len(x), 3 * len(x)} { // full vectors and the tail
			in := make([]float32, n)
			for i := range in {
				in[i] = x[i%len(x)]
			}
			y := make([]float32, n)
			QuickGELU(n, in, y)
			for i, g := range y {
				w := torch[i%len(x)]
				same := close32(g, w, quickGELUTol, 0) && math.Signbit(float64(g)) == math.Signbit(float64(w))
				if math.IsNaN(float64(w)) {
					same = math.IsNaN(float64(g))
				}
				if !same {
					t.Fatalf("quick_gelu(%g) = %g, torch %g", in[i], g, w)
				}
			}
		}
	})
}

func BenchmarkQuickGELU(b *testing.B) {
	n := benchRows * benchCols
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := guarded(rng, n, true)
	for i := range x {
		x[i] *= 4
	}
	y := make([]float32, n)
	benchVec(b, 8*n, func() { QuickGELU(n, x, y) })
}
