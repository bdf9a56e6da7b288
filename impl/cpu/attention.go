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
// GEMM, softmax and GEMM (scoredAttention). With Causal, the scores of
// keys after each query are −∞ before the softmax.
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
	var mask func(s []float32, m, ld, img, r0 int)
	if a.Causal {
		mask = func(s []float32, m, ld, _, r0 int) { maskAbove(s, m, n, ld, r0) }
	}
	b.scoredAttention(a.Batch, a.Heads, n, n, a.HeadDim, float32(a.Scale), blocks, rows,
		func(img, h, r0 int) scoreOperands {
			base := qkv[img*n*3*e:]
			return scoreOperands{
				q: base[r0*3*e+h*a.HeadDim:], k: base[e+h*a.HeadDim:], v: base[2*e+h*a.HeadDim:],
				ctx: ctx[(img*n+r0)*e+h*a.HeadDim:], qld: 3 * e, kld: 3 * e, vld: 3 * e, ctxld: e,
			}
		},
		mask)
	return nil
}

// scoreOperands is where one task of the unfused attention path reads
// and writes: its first query row at q, head h's keys and values from
// their first row at k and v, its first context row at ctx, each with its
// row stride.
type scoreOperands struct {
	q, k, v, ctx         []float32
	qld, kld, vld, ctxld int
}

// scoredAttention is the unfused attention path of attention_core and
// mha_core: for every task (image, head, query rows r0 … r1−1) of
// forQueryBlocks over batch·heads pairs of nq queries and nk keys, with
// its operands from at,
//
//	S = Q·Kᵀ          (the task's m = r1−r0 rows, in the worker's score block)
//	mask(S, m, ld, img, r0)
//	S = softmax(scale·S) per row
//	ctx = S·V
//
// Q [m, hd], K and V [nk, hd]; S has row stride ld = scoreStride(nk), one
// block of rows·ld floats per worker; the products are the backend's
// (bf16 on cpu-bf16). mask, unless nil, sets the masked scores to −∞ of
// the m rows at s (row stride ld) whose first is query r0 of image img.
// On cpu-bf16 a task runs kern.AttentionBF16 instead, which computes the
// same bits a few query rows at a time.
func (b *Backend) scoredAttention(batch, heads, nq, nk, hd int, scale float32, blocks, rows int,
	at func(img, h, r0 int) scoreOperands, mask func(s []float32, m, ld, img, r0 int)) {
	threads := min(b.threads, batch*heads*blocks)
	if b.bf16 && bf16BlockedScores && kern.AttentionBF16Fits(nk, hd) {
		// cpu-bf16: each task's scores a few rows at a time, in cache
		// (kern.AttentionBF16, the same bits).
		// A worker's consecutive tasks of one head (DeiT-Ti's 3 heads on 2
		// workers: blocks of query rows) pack its K and V once.
		for len(b.packedKV) < threads {
			b.packedKV = append(b.packedKV, &kern.PackedKV{})
		}
		for _, kv := range b.packedKV {
			kv.Forget()
		}
		forQueryBlocks(threads, batch, heads, nq, blocks, rows, func(w, img, h, r0, r1 int) {
			o := at(img, h, r0)
			var taskMask func(s []float32, m, ld, i0 int)
			if mask != nil {
				taskMask = func(s []float32, m, ld, i0 int) { mask(s, m, ld, img, r0+i0) }
			}
			kern.AttentionBF16Reusing(r1-r0, nk, hd, o.q, o.qld, o.k, o.kld, o.v, o.vld, o.ctx, o.ctxld, scale, taskMask,
				b.packedKV[w], img*heads+h)
		})
		// The workers' K and V buffers count in Memory's peak as scratch
		// in use during the call does.
		var kvBytes int64
		for _, kv := range b.packedKV {
			kvBytes += kv.Bytes()
		}
		b.account(kvBytes)
		b.account(-kvBytes)
		return
	}
	ld := scoreStride(nk)
	scores, release := b.scratch(threads * rows * ld)
	defer release()
	matmul := b.matmul()
	forQueryBlocks(threads, batch, heads, nq, blocks, rows, func(w, img, h, r0, r1 int) {
		s := scores[w*rows*ld : (w+1)*rows*ld]
		o := at(img, h, r0)
		m := r1 - r0
		matmul(m, nk, hd, o.q, o.qld, o.k, o.kld, true, s, ld)
		if mask != nil {
			mask(s, m, ld, img, r0)
		}
		kern.Softmax(m, nk, s, ld, s, ld, scale)
		matmul(m, hd, nk, s, ld, o.v, o.vld, false, o.ctx, o.ctxld)
	})
}

// bf16BlockedScores turns kern.AttentionBF16 on for cpu-bf16's unfused
// attention; the test and the benchmark that compare it with the
// unfused GEMMs turn it off.
var bf16BlockedScores = true

// scoreStride is the row stride of a score buffer of n keys: n rounded up
// to a whole number of 64-byte lines (16 floats), so that, the buffer
// being line-aligned, every row starts on a line and no vector load or
// store of the softmax or of the products straddles two. With 197 keys
// (a stride of 788 bytes) nearly every one did: the softmax ran 1.5×
// slower per value on such rows than on aligned ones (0.40 against 0.26
// ns, one thread; 77 keys: 0.66 against 0.41).
func scoreStride(n int) int { return (n + 15) &^ 15 }

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

// maskAbove sets the scores of rows r0 … r0+m−1 (s [m, n], row stride
// ld, row i is query r0+i) to −∞ at every key j > r0+i: the causal mask.
func maskAbove(s []float32, m, n, ld, r0 int) {
	inf := float32(math.Inf(-1))
	for i := 0; i < m; i++ {
		row := s[i*ld : i*ld+n]
		for j := r0 + i + 1; j < n; j++ {
			row[j] = inf
		}
	}
}
