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

// erfGo returns erf(u) rounded to float32 (max relative error about 7e-8
// against math.Erf, see TestErfAccuracy). The approximation, shared with
// the SIMD kernels (asm/gen_vector.go holds the same coefficients and says
// how they were fitted), cuts 0 ≤ a = |u| < 4 into eight pieces
// [i/2, i/2 + ½) and evaluates on piece i, at t = a − i/2,
//
//	erf(a) = Σ_j erfPieces[j][i]·t^j + erfHead[i]·t
//
// a degree-7 polynomial whose t¹ coefficient is split in two so that piece
// 0, where erf(a) ≈ 2a/√π, keeps its relative accuracy for tiny a. From
// a = 3.92 on (±Inf too) erf rounds to 1 and is 1. Here the polynomial is
// evaluated in float64.
func erfGo(u float32) float32 {
	if u != u {
		return u
	}
	a := float32(math.Abs(float64(u)))
	if a >= 3.92 {
		return float32(math.Copysign(1, float64(u)))
	}
	i := int(2 * a)                // a's piece: ⌊2a⌋
	t := float64(a - float32(i)/2) // exact
	p := float64(erfPieces[len(erfPieces)-1][i])
	for j := len(erfPieces) - 2; j >= 0; j-- {
		p = p*t + float64(erfPieces[j][i])
	}
	p += float64(erfHead[i]) * t
	return float32(math.Copysign(p, float64(u)))
}

// The erf coefficients (float32: the SIMD kernels use them in float32):
// erfPieces[j][i] multiplies t^j on piece i, erfHead[i] is the part of
// t's coefficient the kernels add last (piece 0's 2/√π in hi + lo parts).
var (
	erfPieces = [8][8]float32{
		{0, 0.520499885, 0.842700779, 0.966105163, 0.995322287, 0.999593019, 0.999977887, 0.999999285},
		{-5.0058425e-08, 0.87878108, 0.415110111, 0.118927039, 0.0206626989, 0.00218383316, 0.00014369686, -2.25435297e-08},
		{-1.62325023e-06, -0.439341962, -0.415189832, -0.178291351, -0.0411974005, -0.00562302349, -0.000559731503, 0.000154379886},
		{-0.376076341, -0.147058383, 0.139331549, 0.137502253, 0.0465917066, 0.0104763741, 0.00249118754, -0.00203592191},
		{-0.000574071135, 0.186387271, 0.063924253, -0.0374525636, -0.025182303, -0.020767238, -0.010762684, 0.0118046841},
		{0.115914613, -0.0015379549, -0.0549729057, -0.0358751453, -0.0138002634, 0.0417329557, 0.0294947028, -0.034740109},
		{-0.00807165354, -0.0406056829, -0.0124666896, 0.0501927733, 0.0387318879, -0.0546128303, -0.0420864709, 0.050577689},
		{-0.0179325696, 0.00786751788, 0.0189146437, -0.0235209204, -0.0237129293, 0.0302507207, 0.0238896925, -0.0289103258},
	}
	erfHead = [8]float32{1.12837923, 0, 0, 0, 0, 0, 0, 0}
)
