//go:build mutation

package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
)

// Mutations of CLIP's nodes: the activation and the text tower's pooling
// (ln_pre left out is a graph mutation, bench/ops).

func init() {
	addMutation("quick_gelu_as_erf", "the exact erf GELU where CLIP has QuickGELU x·sigmoid(1.702·x)",
		func(g ops.Gemm) bool { return g.Act == "quick_gelu" },
		func(b *Backend, g ops.Gemm, in, out []*tensor) error { g.Act = "gelu"; return b.gemm(g, in, out) })
	addMutation("causal_mask_dropped", "the text tower's attention without its causal mask (every token sees the whole context)",
		func(a ops.AttentionCore) bool { return a.Causal },
		func(b *Backend, a ops.AttentionCore, in, out []*tensor) error {
			a.Causal = false
			return b.attentionCore(a, in, out)
		})
	addMutation("eot_pool_last_position", "the text features taken at the last position instead of the end-of-text token", nil,
		func(b *Backend, n ops.EOTPool, in, out []*tensor) error {
			last := zeroTensor(bench.Shape{n.Batch, n.Context})
			for s := 0; s < n.Batch; s++ {
				last.data[s*n.Context+n.Context-1] = 1 // the argmax is then the last position
			}
			return b.eotPool(n, replaced(in, 1, last), out)
		})
}

// Mutations of the attention pool as attnPool computes it: the value
// projection's bias is added once after the probabilities are folded into
// the weight, so leaving it out is the folding's own mistake (leaving out
// the key bias is not one: the softmax cancels it).
func init() {
	addMutation("attn_pool_value_bias_dropped", "the attention pool's value bias left out when the probabilities are folded into Wv", nil,
		func(b *Backend, a ops.AttnPool, in, out []*tensor) error {
			return b.attnPool(a, replaced(in, 6, zeroTensor(bench.Shape{a.Chans})), out)
		})
	addMutation("attn_pool_unscaled", "the attention pool's scores without the 1/√d scale", nil,
		func(b *Backend, a ops.AttnPool, in, out []*tensor) error {
			a.Scale = 1
			return b.attnPool(a, in, out)
		})
}
