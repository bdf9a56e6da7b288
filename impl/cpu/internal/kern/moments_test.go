package kern

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// momentsRef is the oracle of Moments: the mean and the biased variance
// of x in 256-bit arithmetic, the variance two-pass about the exact mean,
// rounded once to float64.
func momentsRef(x []float32) (mean, variance float64) {
	if len(x) == 0 {
		return 0, 0
	}
	f := func() *big.Float { return new(big.Float).SetPrec(256) }
	sum := f()
	for _, v := range x {
		sum.Add(sum, f().SetFloat64(float64(v)))
	}
	n := f().SetInt64(int64(len(x)))
	m := f().Quo(sum, n)
	q := f()
	for _, v := range x {
		d := f().Sub(f().SetFloat64(float64(v)), m)
		q.Add(q, d.Mul(d, d))
	}
	mean, _ = m.Float64()
	variance, _ = q.Quo(q, n).Float64()
	return mean, variance
}

// TestMomentsMatchesOracle runs Moments on every path over sizes around
// the vector widths and GroupNorm's group sizes, inside NaN guards (a read
// past the end would make the sums NaN), on centred data and on data
// whose mean is 10⁴ times its spread (where Σx² − n·mean² in float64
// would keep about 8 digits of the variance), against the 256-bit oracle
// and the Go twin.
func TestMomentsMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	sizes := append([]int{8, 24, 32, 40, 256, 4096, 16387, 65536 + 5}, vecSizes...)
	for _, offset := range []float32{0, 3e2, -1e4} {
		for _, n := range sizes {
			x, full := guarded(rng, n, true)
			for i := range x {
				x[i] += offset
			}
			wantMean, wantVar := momentsRef(x)
			name := fmt.Sprintf("offset=%g/n=%d", offset, n)
			t.Run(name, func(t *testing.T) {
				forEachISA(t, func(t *testing.T) {
					mean, variance := Moments(x)
					checkGuards(t, name, full)
					// The mean is exact to a few ulp of its magnitude plus
					// the spread; the variance to ~1e-12 relative (the shift
					// is x[0], within the spread of the data).
					if math.Abs(mean-wantMean) > 1e-14*(math.Abs(wantMean)+1) {
						t.Fatalf("%s: mean %.17g, oracle %.17g", name, mean, wantMean)
					}
					if math.Abs(variance-wantVar) > 1e-12*wantVar+1e-300 {
						t.Fatalf("%s: variance %.17g, oracle %.17g (rel err %.2g)", name, variance, wantVar,
							math.Abs(variance-wantVar)/wantVar)
					}
				})
			})
			if n > 0 {
				s1, s2 := momentsGo(x, x[0])
				m := s1 / float64(n)
				if v := s2/float64(n) - m*m; math.Abs(v-wantVar) > 1e-12*wantVar+1e-300 {
					t.Fatalf("offset=%g/n=%d: Go twin variance %.17g, oracle %.17g", offset, n, v, wantVar)
				}
			}
		}
	}
}

// TestMomentsConstant: a constant group (the shift is its value) has its
// value as mean and variance exactly 0, on every path.
func TestMomentsConstant(t *testing.T) {
	const c = float32(1e30)
	x := make([]float32, 100)
	for i := range x {
		x[i] = c
	}
	forEachISA(t, func(t *testing.T) {
		if m, v := Moments(x); m != float64(c) || v != 0 {
			t.Fatalf("Moments(constant %g) = %g, %g, want %g, 0", c, m, v, c)
		}
	})
}
