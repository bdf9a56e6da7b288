package kern

// GELU sets y to the exact (erf) GELU of x, PyTorch's default nn.GELU:
//
//	for i < n: y[i] = (x[i]*0.5) * (1 + erf(x[i]*(1/√2)))
//
// in float32, the order of operations of PyTorch's CPU kernel; erf is a
// float32 approximation with max relative error about 1e-7 (see erfGo).
// Like PyTorch, for x below about −5.5 the sum 1 + erf rounds to 0 and y
// is 0. Special values: NaN gives NaN, +Inf gives +Inf and −Inf gives 0
// (the limit; PyTorch 1.13's CPU kernel returns NaN there); zero results
// are +0, as PyTorch 1.13 returns for negative x and −0. y may be x (in
// place); otherwise the slices must not overlap.
func GELU(n int, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := geluFor(active); k != nil {
		k.gelu(n, &x[0], &y[0])
		return
	}
	geluGo(x[:n], y[:n])
}

// erfVec sets y[i] = erf(x[i]) for i < n with the erf of the active
// path's GELU: the accuracy tests measure it alone.
func erfVec(n int, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := geluFor(active); k != nil {
		k.erf(n, &x[0], &y[0])
		return
	}
	for i, v := range x[:n] {
		y[i] = erfGo(v)
	}
}

// geluKernels are the SIMD GELU kernel of one path and its erf alone.
type geluKernels struct {
	gelu, erf func(n int, x, y *float32)
}
