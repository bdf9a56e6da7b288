package kern

// The elementwise oracles are the plain loops of the API doc comments, in
// float32, except addScaledRef, which forms x + alpha·y in float64 (exact
// product, then one sum) before rounding: the fused result the SIMD paths
// compute, up to a rare double rounding.

func addRef(n int, x, y, out []float32) {
	for i := 0; i < n; i++ {
		out[i] = x[i] + y[i]
	}
}

func scaleRef(n int, alpha float32, x, out []float32) {
	for i := 0; i < n; i++ {
		out[i] = alpha * x[i]
	}
}

func addScaledRef(n int, alpha float32, x, y, out []float32) {
	for i := 0; i < n; i++ {
		out[i] = float32(float64(x[i]) + float64(alpha)*float64(y[i]))
	}
}

func reluRef(n int, x, out []float32) {
	for i := 0; i < n; i++ {
		if x[i] > 0 || x[i] != x[i] {
			out[i] = x[i]
		} else {
			out[i] = 0
		}
	}
}

func maxRef(n int, x, y, out []float32) {
	for i := 0; i < n; i++ {
		out[i] = x[i]
		if y[i] > x[i] || y[i] != y[i] {
			out[i] = y[i]
		}
	}
}

func biasResidualRef(n int, b float32, x, r, out []float32, relu bool) {
	for i := 0; i < n; i++ {
		v := x[i] + b
		if r != nil {
			v += r[i]
		}
		out[i] = v
		if relu {
			reluRef(1, out[i:], out[i:])
		}
	}
}
