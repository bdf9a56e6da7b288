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

// WeightedRowsHeads is WeightedRows for every head of one pixel of an
// outlook attention: the heads' rows are d values wide and side by side
// in src and out, and head h's weights are gathered from attn,
//
//	for h < heads, c < d: out[h·d + c] = Σ_{t < len(offs)} attn[where[t] + h·headStride] · src[offs[t] + h·d + c]
//
// each head's sum over t in order, exactly as WeightedRows(d, src[h·d:],
// offs, w, out[h·d:]) with w[t] = attn[where[t] + h·headStride] (the SIMD
// paths fuse each product; d a multiple of their vector of at most four
// vectors, else each head goes through WeightedRows). It panics unless
// every row and weight it reads lies inside src and attn.
func WeightedRowsHeads(d, heads int, src []float32, offs, where []int32, attn []float32, headStride int, out []float32) {
	if d <= 0 || heads <= 0 || len(offs) == 0 {
		clear(out[:max(0, d*heads)])
		return
	}
	where = where[:len(offs)]
	out = out[:heads*d]
	limit, wlimit := len(src)-heads*d, len(attn)-1-(heads-1)*headStride
	for t, o := range offs {
		if o < 0 || int(o) > limit || where[t] < 0 || int(where[t]) > wlimit {
			panic(fmt.Sprintf("kern.WeightedRowsHeads: term %d at row %d, weight %d, outside a source of %d or weights of %d",
				t, o, where[t], len(src), len(attn)))
		}
	}
	if k := gatherHeadsFor(active, d); k != nil {
		k(heads, &src[0], &offs[0], &where[0], len(offs), &attn[0], headStride, &out[0])
		return
	}
	weightedRowsHeadsGo(d, heads, src, offs, where, attn, headStride, out)
}

// weightedRowsHeadsGo is WeightedRowsHeads head by head through
// weightedRowsGo, its Go twin.
func weightedRowsHeadsGo(d, heads int, src []float32, offs, where []int32, attn []float32, headStride int, out []float32) {
	var buf [64]float32
	w := buf[:0]
	if len(offs) > len(buf) {
		w = make([]float32, 0, len(offs))
	}
	w = w[:len(offs)]
	for h := range heads {
		for t, at := range where {
			w[t] = attn[int(at)+h*headStride]
		}
		WeightedRows(d, src[h*d:], offs, w, out[h*d:])
	}
}

// weightedRowsHeadsKernel is the SIMD signature of WeightedRowsHeads (d
// fixed by the kernel).
type weightedRowsHeadsKernel func(heads int, src *float32, offs, where *int32, taps int, attn *float32, headStride int, out *float32)
