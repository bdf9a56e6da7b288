package cpu

import (
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// attentionCore computes softmax(scale·Q Kᵀ)·V for every (image, head)
// straight from the fused qkv tensor, with strided GEMMs on the head's
// columns. Work is split into tasks of (image, head, block of query rows):
// whole heads when there are enough of them for every worker, otherwise
// each head's queries are split too (T2T-ViT's one-head layers). Long
// sequences go fused (attentionFused; fusedAttention says when); the
// others through a score buffer for one block of rows per worker, with
// GEMM, softmax and GEMM. With Causal, the scores of keys after each query
// are −∞ before the softmax.
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
	blocks, rows := b.querySplit(pairs, n)
	if b.fusedAttention(rows, n) {
		b.attentionFused(a, qkv, ctx, blocks, rows)
		return nil
	}
	tasks := pairs * blocks
	threads := min(b.threads, tasks)
	scores, release := b.scratch(threads * rows * n)
	defer release()
	matmul := b.matmul()
	forQueryBlocks(threads, a.Batch, a.Heads, n, blocks, rows, func(w, img, h, r0, r1 int) {
		s := scores[w*rows*n : (w+1)*rows*n]
		base := qkv[img*n*3*e:]
		q, k, v := base[r0*3*e+h*a.HeadDim:], base[e+h*a.HeadDim:], base[2*e+h*a.HeadDim:]
		m := r1 - r0
		matmul(m, n, a.HeadDim, q, 3*e, k, 3*e, true, s, n)
		if a.Causal {
			maskAbove(s, m, n, r0)
		}
		kern.Softmax(m, n, s, n, s, n, float32(a.Scale))
		matmul(m, a.HeadDim, n, s, n, v, 3*e, false, ctx[(img*n+r0)*e+h*a.HeadDim:], e)
	})
	return nil
}

// querySplit cuts each of pairs (image, head) pairs of n queries into
// blocks of rows queries until the tasks divide evenly between the
// workers: DeiT-Ti's 3 heads on 2 workers would otherwise leave one idle
// for a third of the time.
func (b *Backend) querySplit(pairs, n int) (blocks, rows int) {
	blocks = 1
	for n >= 64 && blocks < b.threads && pairs*blocks%b.threads != 0 {
		blocks++
	}
	return blocks, (n + blocks - 1) / blocks
}

// forQueryBlocks runs body on every task of an attention split by
// querySplit: (image, head, query rows r0 … r1−1) for each of batch·heads
// pairs of n queries cut into blocks of rows, the tasks spread over at
// most threads workers in order, w the worker's index (for its scratch).
func forQueryBlocks(threads, batch, heads, n, blocks, rows int, body func(w, img, h, r0, r1 int)) {
	tasks := batch * heads * blocks
	parallelWorkers(min(threads, tasks), tasks, 1, func(w, lo, hi int) {
		for task := lo; task < hi; task++ {
			p, blk := task/blocks, task%blocks
			if r0, r1 := blk*rows, min((blk+1)*rows, n); r0 < r1 {
				body(w, p/heads, p%heads, r0, r1)
			}
		}
	})
}

// maskAbove sets the scores of rows r0 … r0+m−1 (s [m, n], row i is
// query r0+i) to −∞ at every key j > r0+i: the causal mask.
func maskAbove(s []float32, m, n, r0 int) {
	inf := float32(math.Inf(-1))
	for i := 0; i < m; i++ {
		row := s[i*n : (i+1)*n]
		for j := r0 + i + 1; j < n; j++ {
			row[j] = inf
		}
	}
}
