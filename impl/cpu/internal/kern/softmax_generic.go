package kern

import "math"

// softmaxRowGo is the Go path of one Softmax row: the SIMD kernels' three
// passes, with the sum in float64.
func softmaxRowGo(x, y []float32, scale float32) {
	inv := softmaxExpRowGo(x, y, scale)
	for i := range y[:len(x)] {
		y[i] *= inv
	}
}

// softmaxExpRowGo is softmaxRowGo's first two passes, softmaxExp's Go
// path: y = the exponentials, and 1/s returned.
func softmaxExpRowGo(x, y []float32, scale float32) float32 {
	y = y[:len(x)]
	m := negInf32
	for _, v := range x {
		// A NaN is skipped here; it makes its exp, hence s, NaN below.
		m = max(m, float32(scale*v))
	}
	s := 0.0
	for i, v := range x {
		e := expGo(float32(scale*v) - m)
		y[i] = e
		s += float64(e)
	}
	return float32(1 / s)
}

// expGo returns exp(x) rounded to float32 for x ≤ 0 (NaN for NaN); the
// same method as the SIMD kernels, evaluated in float64: with n =
// round(x·log2e) and r = x − n·ln2 in [−ln2/2, ln2/2] (Cody–Waite
// reduction), exp(x) = 2ⁿ·(1 + r·(1 + r·P(r))), P of degree 4 fitted by a
// weighted minimax (Lawson) iteration on Chebyshev nodes (max relative
// error 3.1e-9). Below −104 the result rounds to 0.
func expGo(x float32) float32 {
	if !(x > -104) {
		if x != x {
			return x
		}
		return 0
	}
	const round = 0x1.8p52 // adding and subtracting it rounds to an integer
	v := float64(x)
	n := (v*math.Log2E + round) - round
	r := v - n*math.Ln2
	p := float64(expCoef[len(expCoef)-1])
	for i := len(expCoef) - 2; i >= 0; i-- {
		p = p*r + float64(expCoef[i])
	}
	p = (p*r+1)*r + 1
	return float32(p * math.Float64frombits(uint64(int64(n)+1023)<<52))
}

// The exp polynomial's coefficients, lowest degree first (float32: the
// SIMD kernels use them in float32; asm/gen_vector.go holds the same).
var expCoef = [...]float32{0.499999935, 0.166665207, 0.0416683874, 0.00836870982, 0.00138146132}
