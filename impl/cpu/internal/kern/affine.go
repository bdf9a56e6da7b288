package kern

// Affine sets y to a·x + b elementwise (GroupNorm's normalize, scale and
// shift of one channel, a = gamma/σ and b = beta − mean·a):
//
//	for i < n: y[i] = a·x[i] + b
//
// The SIMD paths round once (fused multiply-add); the Go path may round
// a·x first. y may be x (in place); otherwise the slices must not overlap.
func Affine(n int, a, b float32, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := affineFor(active); k != nil {
		k.affine(n, a, b, &x[0], &y[0])
		return
	}
	affineGo(a, b, x[:n], y[:n])
}

// AffineSiLU sets y to the swish of a·x + b (GroupNorm followed by VQGAN's
// nonlinearity, in one pass):
//
//	for i < n: v = a·x[i] + b; y[i] = v·sigmoid(v)
//
// with v as Affine computes it and the swish as SiLU computes it. y may
// be x (in place); otherwise the slices must not overlap.
func AffineSiLU(n int, a, b float32, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := affineFor(active); k != nil {
		k.affineSiLU(n, a, b, &x[0], &y[0])
		return
	}
	affineGo(a, b, x[:n], y[:n])
	siluGo(y[:n], y[:n])
}

// affineKernels are the SIMD kernels of Affine and AffineSiLU of one path.
type affineKernels struct {
	affine, affineSiLU func(n int, a, b float32, x, y *float32)
}

// affineGo is Affine's pure-Go twin.
func affineGo(a, b float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = a*v + b
	}
}
