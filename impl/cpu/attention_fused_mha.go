package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// mhaFused is mhaCore's fused path (the rule is fusedAttention's): the
// same tasks of (image, head, block of query rows), each one call of
// kern.Attention on the head's column slices of q, k and v, with the
// padding mask as kern.AttentionMask.Keys. Per task it computes
//
//	for r0 ≤ i < r1, c < d:
//	  ctx[img, i, h·d+c] = Σ_{j unmasked} softmax_j(scale·q_i·k_j)·v[j, c]
func (b *Backend) mhaFused(a ops.MHACore, in []*tensor, ctx []float32, blocks, rows int) {
	e, nq, nk, hd := a.Heads*a.HeadDim, a.Queries, a.Keys, a.HeadDim
	qd, kd, vd := in[0].data, in[1].data, in[2].data
	forQueryBlocks(b.threads, a.Batch, a.Heads, nq, blocks, rows, func(_, img, h, r0, r1 int) {
		q := qd[(img*nq+r0)*a.QLd+a.QOff+h*hd:]
		k := kd[img*nk*a.KLd+a.KOff+h*hd:]
		v := vd[img*nk*a.VLd+a.VOff+h*hd:]
		var mask kern.AttentionMask
		if a.Masked {
			mask.Keys = in[3].data[img*nk : (img+1)*nk]
		}
		kern.Attention(r1-r0, nk, hd, q, a.QLd, k, a.KLd, v, a.VLd, ctx[(img*nq+r0)*e+h*hd:], e, float32(a.Scale), mask)
	})
}
