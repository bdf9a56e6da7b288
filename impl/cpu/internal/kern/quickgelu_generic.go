package kern

import "math"

// quickGELUGo is the Go path of QuickGELU, in the order of operations of
// the SIMD kernels, with expGo.
func quickGELUGo(x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		r := float32(v * 1.702)
		e := expGo(-float32(math.Abs(float64(r))))
		num := e
		if v >= 0 {
			num = 1
		}
		y[i] = float32(v*num) / (1 + e)
	}
}
