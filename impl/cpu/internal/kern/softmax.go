package kern

import "math"

// Softmax sets each of rows rows of y (row stride ldy) to the softmax of
// scale times the same row of x (row stride ldx), over n values, with the
// maximum subtracted for stability:
//
//	for r < rows:
//	  v[j] = scale * x[r·ldx+j] (float32)        for j < n
//	  m = max_j v[j]
//	  s = Σ_j exp(v[j] − m)
//	  y[r·ldy+j] = exp(v[j] − m) · (1/s)         for j < n
//
// exp is a float32 approximation within about 1 ulp for arguments ≤ 0 (see
// expGo); multiplying by 1/s, as PyTorch's CPU kernel does, costs at most
// an ulp against dividing. A row holding a NaN or +Inf, or only −Inf, gives
// NaN everywhere in that row, as PyTorch does (−Inf − −Inf and Inf − Inf
// are NaN). x and y may be the same slice with ldx = ldy (in place);
// otherwise they must not overlap.
func Softmax(rows, n int, x []float32, ldx int, y []float32, ldy int, scale float32) {
	softmaxRows(rows, n, x, ldx, y, ldy, scale, nil)
}

// softmaxExp is Softmax without its last multiplication: it sets each row
// of y to the exponentials exp(v[j] − m) and inv[r] to that row's 1/s, so
// that y[r·ldy+j]·inv[r], rounded to float32, is Softmax's output bit for
// bit on every path. For a consumer that scales the row as it reads it
// (AttentionBF16 rounds it to bf16 pairs), which saves Softmax's third
// pass over the row.
//
//	for r < rows, j < n: y[r·ldy+j] = exp(v[j] − m);  inv[r] = 1/s   (v, m, s as Softmax's)
func softmaxExp(rows, n int, x []float32, ldx int, y []float32, ldy int, scale float32, inv []float32) {
	if rows > 0 {
		_ = inv[rows-1]
	}
	softmaxRows(rows, n, x, ldx, y, ldy, scale, inv)
}

// softmaxRows is Softmax (inv nil) and softmaxExp (inv not nil): the
// rows two at a time on the SIMD paths, their passes interleaved (the
// same arithmetic per row as one at a time), an odd last row alone.
func softmaxRows(rows, n int, x []float32, ldx int, y []float32, ldy int, scale float32, inv []float32) {
	if rows == 0 || n == 0 {
		return
	}
	_ = x[(rows-1)*ldx+n-1]
	_ = y[(rows-1)*ldy+n-1]
	k := softmaxFor(active)
	r := 0
	if k != nil {
		for ; r+1 < rows; r += 2 {
			x0, y0, x1, y1 := &x[r*ldx], &y[r*ldy], &x[(r+1)*ldx], &y[(r+1)*ldy]
			if inv == nil {
				k.rows2(n, x0, y0, x1, y1, scale)
			} else {
				k.expRows2(n, x0, y0, x1, y1, scale, &inv[r])
			}
		}
	}
	for ; r < rows; r++ {
		xr, yr := x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n]
		switch {
		case k != nil && inv == nil:
			k.row(n, &xr[0], &yr[0], scale)
		case k != nil:
			k.expRow(n, &xr[0], &yr[0], scale, &inv[r])
		case inv == nil:
			softmaxRowGo(xr, yr, scale)
		default:
			inv[r] = softmaxExpRowGo(xr, yr, scale)
		}
	}
}

// Exp sets y[i] = exp(x[i]) for i < n and x[i] ≤ 0 (in place allowed),
// with the exp of the active path's softmax (≤ 1 ulp on every path; see
// the accuracy tests). Arguments must not be positive.
//
//	for i < n: y[i] = exp(x[i])
func Exp(n int, x, y []float32) { expVec(n, x, y) }

// expVec sets y[i] = exp(x[i]) for i < n and x[i] ≤ 0 with the exp of the
// active path's softmax: the accuracy tests measure it alone.
func expVec(n int, x, y []float32) {
	if n == 0 {
		return
	}
	_, _ = x[n-1], y[n-1]
	if k := softmaxFor(active); k != nil {
		k.exp(n, &x[0], &y[0])
		return
	}
	for i, v := range x[:n] {
		y[i] = expGo(v)
	}
}

// softmaxKernels are the SIMD softmax row kernels of one path (one row,
// and two rows at once), the same without the last pass (softmaxExp),
// and its exp alone.
type softmaxKernels struct {
	row      func(n int, x, y *float32, scale float32)
	rows2    func(n int, x0, y0, x1, y1 *float32, scale float32)
	expRow   func(n int, x, y *float32, scale float32, inv *float32)
	expRows2 func(n int, x0, y0, x1, y1 *float32, scale float32, inv *float32)
	exp      func(n int, x, y *float32)
}

var negInf32 = float32(math.Inf(-1))
