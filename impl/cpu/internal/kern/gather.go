package kern

import "fmt"

// WeightedRows sets out to a weighted sum of rows of src:
//
//	for d < n: out[d] = Σ_{j < len(offs)} w[j] · src[offs[j] + d]
//
// the inner step of bilinear sampling, where the rows are the (up to four
// per point) corner pixels' channel vectors and w their bilinear weights
// times the point's attention weight or mask. The sum runs over j in
// order; the SIMD paths fuse each product into the sum (one rounding). It
// panics unless every row offs[j] .. offs[j]+n lies inside src, so hostile
// offsets cannot read out of bounds; out must not overlap src.
func WeightedRows(n int, src []float32, offs []int32, w []float32, out []float32) {
	if n == 0 {
		return
	}
	w = w[:len(offs)]
	out = out[:n]
	limit := len(src) - n
	for j, o := range offs {
		if o < 0 || int(o) > limit {
			panic(fmt.Sprintf("kern.WeightedRows: row %d at offset %d (+%d values) outside a source of %d", j, o, n, len(src)))
		}
	}
	if k := gatherFor(active); k != nil {
		var po *int32
		var pw *float32
		if len(offs) > 0 {
			po, pw = &offs[0], &w[0]
		}
		k(n, &src[0], po, pw, len(offs), &out[0])
		return
	}
	weightedRowsGo(n, src, offs, w, out)
}

// weightedRowsKernel is the SIMD signature of WeightedRows.
type weightedRowsKernel func(n int, src *float32, offs *int32, w *float32, taps int, out *float32)
