package kern

// The Go path of the elementwise kernels: plain loops over equal-length
// slices (the compiler drops the bounds checks).

func addGo(x, y, out []float32) {
	y, out = y[:len(x)], out[:len(x)]
	for i, v := range x {
		out[i] = v + y[i]
	}
}

func scaleGo(alpha float32, x, out []float32) {
	out = out[:len(x)]
	for i, v := range x {
		out[i] = alpha * v
	}
}

func addScaledGo(alpha float32, x, y, out []float32) {
	y, out = y[:len(x)], out[:len(x)]
	for i, v := range x {
		out[i] = v + alpha*y[i]
	}
}

func reluGo(x, out []float32) {
	out = out[:len(x)]
	for i, v := range x {
		out[i] = max(v, 0)
	}
}

func maxGo(x, y, out []float32) {
	y, out = y[:len(x)], out[:len(x)]
	for i, v := range x {
		if w := y[i]; w > v || w != w {
			v = w
		}
		out[i] = v
	}
}

func biasResidualGo(b float32, x, r, out []float32, relu bool) {
	out = out[:len(x)]
	if r != nil {
		r = r[:len(x)]
	}
	for i, v := range x {
		v += b
		if r != nil {
			v += r[i]
		}
		if relu {
			v = max(v, 0)
		}
		out[i] = v
	}
}
