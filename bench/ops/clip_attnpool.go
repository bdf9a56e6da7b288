package ops

import "vitbench/bench"

// AttnPool is the attention of CLIP's AttentionPool2d, from its tokens to
// the context before the output projection: the query is the projected
// first token (the mean), the keys and values are all Tokens tokens
// projected, with Heads heads of d = Chans/Heads values. From tokens x
// [B, Tokens, Chans] and the three projections' weights W [Chans, Chans]
// and biases [Chans] (inputs x, Wq, bq, Wk, bk, Wv, bv), per image b and
// head h:
//
//	q = x[b, 0]·Wqᵀ + bq,  k[j] = x[b, j]·Wkᵀ + bk,  v[j] = x[b, j]·Wvᵀ + bv
//	S[j] = Scale · Σ_{c in head h} q[c]·k[j, c]
//	P = softmax(S) over the Tokens keys
//	out[b, 0, c] = Σ_j P[j]·v[j, c]          for c in head h
//
// so out is [B, 1, Chans]. As a Composite its parts are exactly those
// nodes (take_token, three gemms, mha_core with one query); a backend may
// compute it another way to the same tolerance (the cpu backend folds the
// query into the key weights and the probabilities into the value weights,
// docs/cpu-vs-ort.md).
type AttnPool struct {
	Batch, Tokens, Chans, Heads int
	Scale                       float64
}

// OpName implements bench.Node.
func (AttnPool) OpName() string { return "attn_pool" }

// HeadDim is the width of one head.
func (a AttnPool) HeadDim() int { return a.Chans / a.Heads }

// core is the mha_core of the parts: one query against every token.
func (a AttnPool) core() MHACore {
	c := a.Chans
	return MHACore{Batch: a.Batch, Queries: 1, Keys: a.Tokens, Heads: a.Heads, HeadDim: a.HeadDim(), Scale: a.Scale,
		QLd: c, KLd: c, VLd: c}
}

// MACs counts the three projections and the attention products as the
// parts compute them.
func (a AttnPool) MACs() int64 {
	b, n, c := int64(a.Batch), int64(a.Tokens), int64(a.Chans)
	return b*c*c*(1+2*n) + a.core().MACs()
}

// Parts implements bench.Composite: in = x, Wq, bq, Wk, bk, Wv, bv; out =
// the context.
func (a AttnPool) Parts(in, out []string, prefix string) ([]bench.ArraySpec, []bench.Step) {
	b, n, c := a.Batch, a.Tokens, a.Chans
	mean, q, k, v := prefix+".mean", prefix+".q", prefix+".k", prefix+".v"
	temps := []bench.ArraySpec{
		{Name: mean, Shape: bench.Shape{b, 1, c}},
		{Name: q, Shape: bench.Shape{b, 1, c}},
		{Name: k, Shape: bench.Shape{b, n, c}},
		{Name: v, Shape: bench.Shape{b, n, c}},
	}
	lin := func(x, w, bias, y string, m int) bench.Step {
		return bench.Step{Node: Gemm{Batch: b, M: m, N: c, K: c, TransB: true, Bias: true}, In: []string{x, w, bias}, Out: []string{y}}
	}
	return temps, []bench.Step{
		{Node: TakeToken{Batch: b, Tokens: n, Dim: c, Index: 0}, In: []string{in[0]}, Out: []string{mean}},
		lin(mean, in[1], in[2], q, 1),
		lin(in[0], in[3], in[4], k, n),
		lin(in[0], in[5], in[6], v, n),
		{Node: a.core(), In: []string{q, k, v}, Out: out},
	}
}

// ScratchBytes implements bench.ScratchNode: the parts' intermediates and
// their attention's scores, plus what a folded kernel holds (per image the
// query, one folded key row and one weighted token row per head, the
// scores; per worker a block of score rows): enough either way.
func (a AttnPool) ScratchBytes(workers int) int64 {
	b, n, c, h := int64(a.Batch), int64(a.Tokens), int64(a.Chans), int64(a.Heads)
	parts := bench.AddSat(bench.MulSat(b, 2, c, 4), bench.MulSat(b, n, c, 8), a.core().ScratchBytes(workers))
	folded := bench.AddSat(bench.MulSat(b, c, bench.AddSat(bench.MulSat(2, h), 1), 4), bench.MulSat(b, n, h, 4),
		bench.MulSat(int64(max(workers, 1)), h, n+16, 4))
	return bench.AddSat(parts, folded)
}
