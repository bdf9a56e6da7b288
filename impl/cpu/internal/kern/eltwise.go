package kern

// Add sets out = x + y elementwise over n values:
//
//	for i < n: out[i] = x[i] + y[i]
//
// out may be x or y (in place); otherwise the slices must not overlap.
func Add(n int, x, y, out []float32) {
	if n == 0 {
		return
	}
	_, _, _ = x[n-1], y[n-1], out[n-1]
	if k := eltwiseFor(active); k != nil {
		k.add(n, &x[0], &y[0], &out[0])
		return
	}
	addGo(x[:n], y[:n], out[:n])
}

// ReLU sets out = max(x, 0) elementwise over n values, NaN staying NaN:
//
//	for i < n: out[i] = max(x[i], 0)
//
// out may be x (in place); otherwise the slices must not overlap.
func ReLU(n int, x, out []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], out[n-1]
	if k := eltwiseFor(active); k != nil {
		k.relu(n, &x[0], &out[0])
		return
	}
	reluGo(x[:n], out[:n])
}

// Scale sets out = alpha·x elementwise over n values:
//
//	for i < n: out[i] = alpha * x[i]
//
// out may be x (in place); otherwise the slices must not overlap.
func Scale(n int, alpha float32, x, out []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], out[n-1]
	if k := eltwiseFor(active); k != nil {
		k.scale(n, alpha, &x[0], &out[0])
		return
	}
	scaleGo(alpha, x[:n], out[:n])
}

// AddScaled sets out = x + alpha·y elementwise over n values:
//
//	for i < n: out[i] = x[i] + alpha*y[i]
//
// The SIMD paths compute each element with one fused multiply-add (a
// single rounding, as the Go spec allows for this expression); the Go path
// may round alpha·y first. out may be x or y (in place); otherwise the
// slices must not overlap.
func AddScaled(n int, alpha float32, x, y, out []float32) {
	if n == 0 {
		return
	}
	_, _, _ = x[n-1], y[n-1], out[n-1]
	if k := eltwiseFor(active); k != nil {
		k.addScaled(n, alpha, &x[0], &y[0], &out[0])
		return
	}
	addScaledGo(alpha, x[:n], y[:n], out[:n])
}

// Max sets out to the larger of x and y elementwise, NaN when either is:
//
//	for i < n: out[i] = y[i] if y[i] > x[i] || y[i] != y[i], else x[i]
//
// (x on ties, so −0 and +0 keep x's sign). out may be x or y (in place);
// otherwise the slices must not overlap.
func Max(n int, x, y, out []float32) {
	if n == 0 {
		return
	}
	_, _, _ = x[n-1], y[n-1], out[n-1]
	if k := eltwiseFor(active); k != nil {
		k.max(n, &x[0], &y[0], &out[0])
		return
	}
	maxGo(x[:n], y[:n], out[:n])
}

// BiasResidual finishes n outputs of a convolution in one pass: the bias
// b, then the residual r when it is not nil, then the ReLU when relu (NaN
// staying NaN, as ReLU's):
//
//	for i < n: v = (x[i] + b) + r[i]; out[i] = relu ? max(v, 0) : v
//
// Without r, v = x[i] + b. out may be x or r (in place); otherwise the
// slices must not overlap.
func BiasResidual(n int, b float32, x, r, out []float32, relu bool) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], out[n-1]
	if r != nil {
		_ = r[n-1]
	}
	k := eltwiseFor(active)
	switch {
	case k == nil:
		biasResidualGo(b, x[:n], r, out[:n], relu)
	case r != nil:
		k.biasResidual[b2i(relu)](n, b, &x[0], &r[0], &out[0])
	default:
		k.biasAdd[b2i(relu)](n, b, &x[0], &out[0])
	}
}

// b2i is 1 for true, 0 for false: the index of a kernel pair.
func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// eltwiseKernels are the SIMD elementwise kernels of one path.
type eltwiseKernels struct {
	add       func(n int, x, y, out *float32)
	relu      func(n int, x, out *float32)
	scale     func(n int, alpha float32, x, out *float32)
	addScaled func(n int, alpha float32, x, y, out *float32)
	max       func(n int, x, y, out *float32)
	// BiasResidual's kernels, without and with the ReLU.
	biasAdd      [2]func(n int, b float32, x, out *float32)
	biasResidual [2]func(n int, b float32, x, r, out *float32)
}
