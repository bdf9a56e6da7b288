package kern

import "math"

// siluGo is the Go path of SiLU, in the order of operations of the SIMD
// kernels, with expGo.
func siluGo(x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		e := expGo(-float32(math.Abs(float64(v))))
		num := e
		if v >= 0 {
			num = 1
		}
		y[i] = float32(v*num) / (1 + e)
	}
}
