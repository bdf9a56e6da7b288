package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// siluTol bounds |SiLU − oracle| relative to |y|, as quickGELUTol does
// (exp's error and three roundings; no rounding of the argument).
const siluTol = 6e-7

// TestSiLUMatchesOracle runs SiLU on every path and size, out of place and
// in place, on values in [−16, 16] inside guard regions, against the
// float64 oracle and the Go path.
func TestSiLUMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range vecSizes {
		x, _ := guarded(rng, n, true)
		for i := range x {
			x[i] *= 16
		}
		want := make([]float32, n)
		siluRef(n, x, want)
		goPath := make([]float32, n)
		siluGo(x, goPath)
		forEachISA(t, func(t *testing.T) {
			for _, inPlace := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/inplace=%v", n, inPlace)
				in, inf := guarded(rng, n, false)
				copy(in, x)
				out, of := guarded(rng, n, false)
				if inPlace {
					out, of = in, inf
				}
				SiLU(n, in, out)
				checkGuards(t, name+" x", inf)
				checkGuards(t, name+" y", of)
				for i := range want {
					if !close32(out[i], want[i], siluTol, 1e-30) {
						t.Fatalf("%s: silu(%g) = %g, oracle %g", name, x[i], out[i], want[i])
					}
					if !close32(out[i], goPath[i], siluTol, 1e-30) {
						t.Fatalf("%s: silu(%g) = %g, Go path %g", name, x[i], out[i], goPath[i])
					}
				}
			}
		})
	}
}

// TestSiLUMatchesPyTorch compares with x * torch.sigmoid(x) (taming's
// nonlinearity; torch 1.13, CPU, fp32), values printed by
//
//	/usr/bin/python3 -c 'import torch; x = torch.tensor([-100., -10., -5., -3., -1., -0.5, -0.03125, -0., 0., 0.03125, 0.5, 1., 3., 5., 10., 100., float("inf"), float("-inf")]); print([repr(v) for v in (x*torch.sigmoid(x)).tolist()])'
//
// with the signs of zeros and the special values too.
func TestSiLUMatchesPyTorch(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	x := []float32{-100, -10, -5, -3, -1, -0.5, -0.03125, negZero, 0, 0.03125, 0.5, 1, 3, 5, 10, 100, inf, -inf}
	torch := []float32{negZero, -0.0004539787187241018, -0.033464252948760986, -0.14227762818336487, -0.2689414322376251,
		-0.1887703388929367, -0.015380878001451492, negZero, 0, 0.01586912013590336, 0.3112296760082245, 0.7310585975646973,
		2.857722282409668, 4.966536045074463, 9.99954605102539, 100, inf, float32(math.NaN())}
	forEachISA(t, func(t *testing.T) {
		for _, n := range []int{len(x), 3 * len(x)} { // full vectors and the tail
			in := make([]float32, n)
			for i := range in {
				in[i] = x[i%len(x)]
			}
			y := make([]float32, n)
			SiLU(n, in, y)
			for i, g := range y {
				w := torch[i%len(x)]
				// Below the normal range torch flushes sigmoid(−100) to 0; a subnormal product is as good.
				same := close32(g, w, siluTol, 1e-37) && math.Signbit(float64(g)) == math.Signbit(float64(w))
				if math.IsNaN(float64(w)) {
					same = math.IsNaN(float64(g))
				}
				if !same {
					t.Fatalf("silu(%g) = %g, torch %g", in[i], g, w)
				}
			}
		}
	})
}
