package kern

import "math"

// layerNormRowGo is the Go path of one LayerNorm row: mean and variance in
// float64 (two passes), the output in float32 like the SIMD kernels.
func layerNormRowGo(x, gamma, beta, y []float32, eps float32) {
	gamma, beta, y = gamma[:len(x)], beta[:len(x)], y[:len(x)]
	s := 0.0
	for _, v := range x {
		s += float64(v)
	}
	mean := s / float64(len(x))
	q := 0.0
	for _, v := range x {
		d := float64(v) - mean
		q += d * d
	}
	// mean as float32 hi + lo, so that (v − hi) − lo keeps its precision
	// when |mean| ≫ the spread.
	hi := float32(mean)
	lo := float32(mean - float64(hi))
	r := float32(1 / math.Sqrt(q/float64(len(x))+float64(eps)))
	for i, v := range x {
		y[i] = float32(((v-hi)-lo)*r)*gamma[i] + beta[i]
	}
}
