package kern

import "math"

// softmaxRef is Softmax with v = scale·x rounded to float32 (as in the
// doc's loop) and everything after in float64, rounded once: the oracle.
func softmaxRef(rows, n int, x []float32, ldx int, y []float32, ldy int, scale float32) {
	v := make([]float64, n)
	for r := 0; r < rows; r++ {
		m := math.Inf(-1)
		for j := 0; j < n; j++ {
			v[j] = float64(float32(scale * x[r*ldx+j]))
			m = math.Max(m, v[j]) // NaN wins
		}
		s := 0.0
		for j := range v {
			v[j] = math.Exp(v[j] - m)
			s += v[j]
		}
		for j := range v {
			y[r*ldy+j] = float32(v[j] / s)
		}
	}
}
