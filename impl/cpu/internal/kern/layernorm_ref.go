package kern

import "math"

// layerNormRef is LayerNorm's loop in float64 (two passes), rounded once:
// the oracle. PyTorch's fp32 CPU kernel accumulates in float32, within a
// few ulp of this.
func layerNormRef(rows, n int, x []float32, ldx int, gamma, beta []float32, eps float32, y []float32, ldy int) {
	for r := 0; r < rows; r++ {
		xr := x[r*ldx : r*ldx+n]
		mean := 0.0
		for _, v := range xr {
			mean += float64(v)
		}
		mean /= float64(n)
		vr := 0.0
		for _, v := range xr {
			vr += (float64(v) - mean) * (float64(v) - mean)
		}
		vr /= float64(n)
		rs := 1 / math.Sqrt(vr+float64(eps))
		for j, v := range xr {
			y[r*ldy+j] = float32((float64(v)-mean)*rs*float64(gamma[j]) + float64(beta[j]))
		}
	}
}
