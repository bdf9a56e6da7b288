package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// unaryKernel is an elementwise activation under test: the dispatched
// kernel, its pure-Go twin, its float64 oracle, the range of the random
// inputs ([−scale, scale]) and the tolerance of one value against the oracle.
type unaryKernel struct {
	name   string
	kernel func(n int, x, y []float32)
	twin   func(x, y []float32)
	oracle func(n int, x, y []float32)
	scale  float32
	tol    func(x, want float32) (rtol, atol float64)
}

// checkUnaryOracle runs k on every path and size, out of place and in
// place, inside guard regions, against the oracle and the Go twin.
func checkUnaryOracle(t *testing.T, rng *rand.Rand, k unaryKernel) {
	t.Helper()
	for _, n := range vecSizes {
		x, _ := guarded(rng, n, true)
		for i := range x {
			x[i] *= k.scale
		}
		want := make([]float32, n)
		k.oracle(n, x, want)
		goPath := make([]float32, n)
		k.twin(x, goPath)
		forEachISA(t, func(t *testing.T) {
			for _, inPlace := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/inplace=%v", n, inPlace)
				in, inf := guarded(rng, n, false)
				copy(in, x)
				out, of := guarded(rng, n, false)
				if inPlace {
					out, of = in, inf
				}
				k.kernel(n, in, out)
				checkGuards(t, name+" x", inf)
				checkGuards(t, name+" y", of)
				for i := range want {
					rtol, atol := k.tol(x[i], want[i])
					if !close32(out[i], want[i], rtol, atol) {
						t.Fatalf("%s: %s(%g) = %g, oracle %g", name, k.name, x[i], out[i], want[i])
					}
					if !close32(out[i], goPath[i], rtol, atol) {
						t.Fatalf("%s: %s(%g) = %g, Go path %g", name, k.name, x[i], out[i], goPath[i])
					}
				}
			}
		})
	}
}

// torchProbe holds the inputs the activations' PyTorch comparisons print
// values for: both signs of zero, tiny, moderate and saturating values, ±Inf.
func torchProbe() []float32 {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	return []float32{-100, -10, -5, -3, -1, -0.5, -0.03125, negZero, 0, 0.03125, 0.5, 1, 3, 5, 10, 100, inf, -inf}
}

// checkUnaryTorch runs kernel on every path over x (a full vector and with
// a tail) and compares with PyTorch's values torch: within rtol/atol with
// the same sign, and NaN where PyTorch gives NaN.
func checkUnaryTorch(t *testing.T, name string, kernel func(n int, x, y []float32), x, torch []float32, rtol, atol float64) {
	t.Helper()
	forEachISA(t, func(t *testing.T) {
		for _, n := range []int{len(x), 3 * len(x)} { // full vectors and the tail
			in := make([]float32, n)
			for i := range in {
				in[i] = x[i%len(x)]
			}
			y := make([]float32, n)
			kernel(n, in, y)
			for i, g := range y {
				w := torch[i%len(x)]
				same := close32(g, w, rtol, atol) && math.Signbit(float64(g)) == math.Signbit(float64(w))
				if math.IsNaN(float64(w)) {
					same = math.IsNaN(float64(g))
				}
				if !same {
					t.Fatalf("%s(%g) = %g, torch %g", name, in[i], g, w)
				}
			}
		}
	})
}
