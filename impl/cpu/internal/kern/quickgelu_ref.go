package kern

import "math"

// quickGELURef is QuickGELU in float64 from the float32 product
// 1.702·x (as PyTorch rounds it), rounded once: the oracle.
func quickGELURef(n int, x, y []float32) {
	for i := 0; i < n; i++ {
		v := float64(x[i])
		z := float64(float32(x[i] * 1.702))
		y[i] = float32(v / (1 + math.Exp(-z)))
	}
}
