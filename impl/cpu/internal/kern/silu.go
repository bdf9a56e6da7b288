package kern

// SiLU sets y to the swish of x (VQGAN's nonlinearity):
//
//	for i < n: y[i] = x[i] * sigmoid(x[i])
//
// in float32, as x·(x ≥ 0 ? 1 : e)/(1 + e) with e = exp(−|x|), like
// QuickGELU: within a few ulp of PyTorch's x * torch.sigmoid(x). NaN gives
// NaN, +Inf gives +Inf and −Inf gives NaN (−Inf·0, as PyTorch). y may be x
// (in place); otherwise the slices must not overlap.
func SiLU(n int, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := siluFor(active); k != nil {
		k(n, &x[0], &y[0])
		return
	}
	siluGo(x[:n], y[:n])
}
