package kern

// QuickGELU sets y to CLIP's QuickGELU of x:
//
//	for i < n: y[i] = x[i] * sigmoid(1.702*x[i])
//
// in float32, as x·(x ≥ 0 ? 1 : e)/(1 + e) with e = exp(−|1.702·x|) (the
// softmax's exp, on a non-positive argument): within a few ulp of
// PyTorch's x * torch.sigmoid(1.702 * x). NaN gives NaN, +Inf gives +Inf
// and −Inf gives NaN (−Inf·0, as PyTorch). y may be x (in place);
// otherwise the slices must not overlap.
func QuickGELU(n int, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := quickGELUFor(active); k != nil {
		k(n, &x[0], &y[0])
		return
	}
	quickGELUGo(x[:n], y[:n])
}
