package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// attentionCore computes softmax(scale·Q Kᵀ)·V for every (image, head)
// straight from the fused qkv tensor, with strided GEMMs on the head's
// columns; workers take whole (image, head) pairs, each with its own N×N
// score buffer.
func (b *Backend) attentionCore(a ops.AttentionCore, in, out []*tensor) error {
	e := a.Heads * a.HeadDim
	n := a.Tokens
	if err := checkShapes("attention_core", in, []bench.Shape{{a.Batch, n, 3 * e}}); err != nil {
		return err
	}
	if err := checkShapes("attention_core", out, []bench.Shape{{a.Batch, n, e}}); err != nil {
		return err
	}
	qkv, ctx := in[0].data, out[0].data
	pairs := a.Batch * a.Heads
	threads := min(b.threads, pairs)
	scores, release := b.scratch(threads * n * n)
	defer release()
	parallelChunks(threads, pairs, 1, func(w, lo, hi int) {
		s := scores[w*n*n : (w+1)*n*n]
		for p := lo; p < hi; p++ {
			img, h := p/a.Heads, p%a.Heads
			base := qkv[img*n*3*e:]
			q, k, v := base[h*a.HeadDim:], base[e+h*a.HeadDim:], base[2*e+h*a.HeadDim:]
			kern.Sgemm(n, n, a.HeadDim, q, 3*e, k, 3*e, true, s, n)
			kern.Softmax(n, n, s, n, s, n, float32(a.Scale))
			kern.Sgemm(n, a.HeadDim, n, s, n, v, 3*e, false, ctx[img*n*e+h*a.HeadDim:], e)
		}
	})
	return nil
}
