package kern

import "math"

// geluRef is GELU in float64 with math.Erf, rounded once: the exact GELU
// of each float32 input (the oracle; it does not reproduce float32's
// cancellation in 1 + erf for negative x).
func geluRef(n int, x, y []float32) {
	for i := 0; i < n; i++ {
		v := float64(x[i])
		if math.IsInf(v, -1) {
			y[i] = 0
			continue
		}
		y[i] = float32(0.5 * v * (1 + math.Erf(v/math.Sqrt2)))
	}
}
