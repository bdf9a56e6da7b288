package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// mhaCore runs ops.MHACore: q, k and v gathered from their column slices
// into heads [B·H, N, D] (heads_split_f32), then per chunk of (image, head)
// pairs S = Q·Kᵀ and O = softmax(scale·S)·V with strided-batched cuBLAS
// products and a softmax kernel between them (masked keys −∞ with the key
// padding mask), and the heads merged back to [B, Queries, H·D].
func (b *Backend) mhaCore(a ops.MHACore, in, out []*tensor) (func() error, error) {
	nq, nk, h, d := int64(a.Queries), int64(a.Keys), int64(a.Heads), int64(a.HeadDim)
	e := h * d
	for _, c := range []struct {
		name    string
		ld, off int
	}{{"q", a.QLd, a.QOff}, {"k", a.KLd, a.KOff}, {"v", a.VLd, a.VOff}} {
		if c.off < 0 || int64(c.off)+e > int64(c.ld) {
			return nil, fmt.Errorf("cuda: mha_core: %s columns [%d, %d) exceed its width %d", c.name, c.off, int64(c.off)+e, c.ld)
		}
	}
	bs := int64(a.Batch)
	want := []int64{bs * nq * int64(a.QLd), bs * nk * int64(a.KLd), bs * nk * int64(a.VLd)}
	if a.Masked {
		want = append(want, bs*nk)
	}
	if err := checkElems("mha_core", "input", in, want...); err != nil {
		return nil, err
	}
	if err := checkElems("mha_core", "output", out, bs*nq*e); err != nil {
		return nil, err
	}
	pairs := bs * h
	chunk := max(1, min(pairs, attentionBudget/(nq*nk*4)))
	perQ, perK := pairs*nq*d, pairs*nk*d
	return func() error {
		parts, release, err := b.scratchParts(perQ*4, perK*4, perK*4, perQ*4, chunk*nq*nk*4)
		if err != nil {
			return err
		}
		defer release()
		q, k, v, o, s := parts[0], parts[1], parts[2], parts[3], parts[4]
		for _, g := range []struct {
			src     *tensor
			dst     devicePtr
			n       int64
			ld, off int
		}{{in[0], q, nq, a.QLd, a.QOff}, {in[1], k, nk, a.KLd, a.KOff}, {in[2], v, nk, a.VLd, a.VOff}} {
			if err := b.launch1D("attention.cu", "heads_split_f32", pairs*g.n*d, g.src.ptr, g.dst, i32(a.Batch), int32(g.n),
				i32(a.Heads), i32(a.HeadDim), i32(g.ld), i32(g.off)); err != nil {
				return err
			}
		}
		for c0 := int64(0); c0 < pairs; c0 += chunk {
			cnt := min(chunk, pairs-c0)
			qo, ko := uint64(c0*nq*d)*4, uint64(c0*nk*d)*4
			if err := b.sgemm(false, true, int(nq), int(nk), int(d), q+qo, int(d), k+ko, int(d), s, int(nk), int(cnt),
				nq*d, nk*d, nq*nk); err != nil {
				return err
			}
			grid, block := dim3{uint32(cnt * nq), 1, 1}, dim3{128, 1, 1}
			if a.Masked {
				err = b.launch("attention.cu", "softmax_keymask_rows_f32", grid, block, 0, s, i32(a.Queries), i32(a.Keys),
					float32(a.Scale), in[3].ptr, i32(a.Heads), c0)
			} else {
				err = b.launch("norm.cu", "softmax_rows_f32", grid, block, 0, s, i32(a.Keys), float32(a.Scale))
			}
			if err != nil {
				return err
			}
			if err := b.sgemm(false, false, int(nq), int(d), int(nk), s, int(nk), v+ko, int(d), o+qo, int(d), int(cnt),
				nq*nk, nk*d, nq*d); err != nil {
				return err
			}
		}
		return b.launch1D("attention.cu", "heads_merge_f32", bs*nq*e, o, out[0].ptr, i32(a.Batch), i32(a.Queries), i32(a.Heads), i32(a.HeadDim))
	}, nil
}
