package kern

import "math"

// siluRef is SiLU in float64, rounded once: the oracle.
func siluRef(n int, x, y []float32) {
	for i := 0; i < n; i++ {
		v := float64(x[i])
		y[i] = float32(v / (1 + math.Exp(-v)))
	}
}
