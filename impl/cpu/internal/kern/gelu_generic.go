package kern

import "math"

// geluGo is the Go path of GELU, elementwise with erfGo, in the order of
// operations of the SIMD kernels.
func geluGo(x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		e := erfGo(float32(v * (1 / math.Sqrt2)))
		// max keeps −Inf·0 from giving NaN; + 0 turns −0 into +0.
		h := float32(max(v, -math.MaxFloat32) * 0.5)
		y[i] = float32(h*(1+e)) + 0
	}
}

// erfGo returns erf(u) rounded to float32 (max relative error about 1e-7
// against math.Erf, see TestErfAccuracy). The approximation, shared with
// the SIMD kernels (asm/gen_vector.go holds the same coefficients), has two
// pieces, each fitted by a weighted minimax (Lawson) iteration on
// Chebyshev nodes: erf(a) = a·(2/√π + a²·P(a²)) for a = |u| < 1, and
// erf(a) = 1 − Q(a − 2.5) for 1 ≤ a < 3.92; from 3.92 on, erfc(a) < 2.9e-8
// and erf rounds to 1. Here the polynomials are evaluated in float64.
func erfGo(u float32) float32 {
	a := math.Abs(float64(u))
	var e float64
	switch {
	case a < 1:
		z := a * a
		p := float64(erfSmall[len(erfSmall)-1])
		for i := len(erfSmall) - 2; i >= 0; i-- {
			p = p*z + float64(erfSmall[i])
		}
		e = a * (2/math.SqrtPi + z*p)
	case a >= 3.92:
		e = 1
	default: // 1 ≤ a < 3.92, or NaN
		t := a - 2.5
		q := float64(erfLarge[len(erfLarge)-1])
		for i := len(erfLarge) - 2; i >= 0; i-- {
			q = q*t + float64(erfLarge[i])
		}
		e = 1 - q
	}
	return float32(math.Copysign(e, float64(u)))
}

// The erf coefficients, lowest degree first (float32: the SIMD kernels
// use them in float32).
var (
	erfSmall = [...]float32{-0.376126298, 0.112836174, -0.0268549161, 0.00519016249, -0.000802481863, 7.89869489e-05}
	erfLarge = [...]float32{0.000406931624, -0.00217808027, 0.00544665254, -0.0083532362, 0.00861531835, -0.00610324622,
		0.00281817449, -0.00057037058, -0.000286506678, 0.000278900414, -6.18875451e-05, -2.1040617e-05, 9.12466094e-06}
)
