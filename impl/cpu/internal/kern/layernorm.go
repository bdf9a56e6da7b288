package kern

// LayerNorm normalizes each of rows rows of x (row stride ldx) over its n
// values and writes rows of y (row stride ldy):
//
//	for r < rows:
//	  mean = Σ_j x[r·ldx+j] / n
//	  var  = Σ_j (x[r·ldx+j] − mean)² / n          (biased, as PyTorch)
//	  y[r·ldy+j] = (x[r·ldx+j] − mean) / sqrt(var + eps) · gamma[j] + beta[j]
//
// Two passes over the row give mean and variance (no cancellation for
// rows with a large mean); the SIMD paths sum in float32 over 16 (AVX2) or
// 64 (AVX-512) partial sums and correct the float32 mean with the mean of
// x − mean (corrected two-pass), the Go path sums in float64, and all
// subtract the mean as float32 hi + lo parts and multiply by
// 1/sqrt(var + eps); the error does not grow with |mean|/std. eps is 1e-6 for timm ViT and 1e-5 for nn.LayerNorm's
// default. x and y may be the same slice with ldx = ldy (in place);
// otherwise they must not overlap.
func LayerNorm(rows, n int, x []float32, ldx int, gamma, beta []float32, eps float32, y []float32, ldy int) {
	if rows == 0 || n == 0 {
		return
	}
	_ = x[(rows-1)*ldx+n-1]
	_ = y[(rows-1)*ldy+n-1]
	gamma, beta = gamma[:n], beta[:n]
	row := layerNormFor(active)
	for r := 0; r < rows; r++ {
		xr, yr := x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n]
		if row != nil {
			row(n, &xr[0], &gamma[0], &beta[0], &yr[0], eps)
			continue
		}
		layerNormRowGo(xr, gamma, beta, yr, eps)
	}
}
