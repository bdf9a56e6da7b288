package ops

import (
	"fmt"

	"vitbench/bench"
)

// clipTransformer is CLIP's Transformer: layers ResidualAttentionBlocks of
// width channels over tokens positions, each
//
//	x = x + out_proj(MHA(ln_1(x)))      (nn.MultiheadAttention: packed in_proj, head_dim^-0.5)
//	x = x + c_proj(QuickGELU(c_fc(ln_2(x))))
//
// with LayerNorm eps 1e-5 and QuickGELU(z) = z·sigmoid(1.702·z); the text
// tower adds the causal mask (0 on and below the diagonal, −∞ above).
type clipTransformer struct {
	batch, tokens, width, heads, layers int
	causal                              bool
}

const clipEps = 1e-5

func newCLIPTransformer(op string, batch, tokens, width, heads, layers int, causal bool) (clipTransformer, error) {
	if err := positive(op, "batch", batch, "tokens", tokens, "width", width, "heads", heads, "layers", layers); err != nil {
		return clipTransformer{}, err
	}
	if err := checkDims(op, "batch", batch, "tokens", tokens, "width", 4*width, "heads", heads); err != nil {
		return clipTransformer{}, err
	}
	if width%heads != 0 || layers > 1024 {
		return clipTransformer{}, fmt.Errorf("%s params: width %d must be a multiple of heads %d, and layers at most 1024", op, width, heads)
	}
	return clipTransformer{batch: batch, tokens: tokens, width: width, heads: heads, layers: layers, causal: causal}, nil
}

// weights lists the blocks' arrays under prefix ("visual.transformer.",
// "transformer."), in the released checkpoints' state_dict order.
func (c clipTransformer) weights(prefix string) []bench.ArraySpec {
	w, h := c.width, 4*c.width
	var out []bench.ArraySpec
	for i := 0; i < c.layers; i++ {
		p := fmt.Sprintf("%sresblocks.%d.", prefix, i)
		out = append(out,
			bench.ArraySpec{Name: p + "attn.in_proj_weight", Shape: bench.Shape{3 * w, w}},
			bench.ArraySpec{Name: p + "attn.in_proj_bias", Shape: bench.Shape{3 * w}},
			bench.ArraySpec{Name: p + "attn.out_proj.weight", Shape: bench.Shape{w, w}},
			bench.ArraySpec{Name: p + "attn.out_proj.bias", Shape: bench.Shape{w}},
			bench.ArraySpec{Name: p + "ln_1.weight", Shape: bench.Shape{w}},
			bench.ArraySpec{Name: p + "ln_1.bias", Shape: bench.Shape{w}},
			bench.ArraySpec{Name: p + "mlp.c_fc.weight", Shape: bench.Shape{h, w}},
			bench.ArraySpec{Name: p + "mlp.c_fc.bias", Shape: bench.Shape{h}},
			bench.ArraySpec{Name: p + "mlp.c_proj.weight", Shape: bench.Shape{w, h}},
			bench.ArraySpec{Name: p + "mlp.c_proj.bias", Shape: bench.Shape{w}},
			bench.ArraySpec{Name: p + "ln_2.weight", Shape: bench.Shape{w}},
			bench.ArraySpec{Name: p + "ln_2.bias", Shape: bench.Shape{w}})
	}
	return out
}

// macs counts the projections and both attention products of every
// block (the causal mask does not change what PyTorch multiplies).
func (c clipTransformer) macs() int64 {
	rows, w := int64(c.batch)*int64(c.tokens), int64(c.width)
	attn := AttentionCore{Batch: c.batch, Tokens: c.tokens, Heads: c.heads, HeadDim: c.width / c.heads}.MACs()
	return int64(c.layers) * (rows*w*12*w + attn)
}

// steps appends the blocks reading in and writing out; tmp prefixes the
// intermediates ("visual.", "text."), so that both towers fit one graph.
func (c clipTransformer) steps(g *bench.Graph, prefix, tmp, in, out string) {
	b, n, w := c.batch, c.tokens, c.width
	tok := bench.Shape{b, n, w}
	h1, y, qkv, ctx, h2, hid := tmp+"h1", tmp+"y", tmp+"qkv", tmp+"ctx", tmp+"h2", tmp+"hidden"
	for _, t := range []string{h1, y, ctx, h2} {
		g.Temp(t, tok)
	}
	g.Temp(qkv, bench.Shape{b, n, 3 * w})
	g.Temp(hid, bench.Shape{b, n, 4 * w})
	cur := in
	for i := 0; i < c.layers; i++ {
		p := fmt.Sprintf("%sresblocks.%d.", prefix, i)
		next := out
		if i < c.layers-1 {
			next = tmp + "tokens.a"
			if cur == next {
				next = tmp + "tokens.b"
			}
			g.Temp(next, tok)
		}
		ln := LayerNorm{Batch: b, Tokens: n, Dim: w, Eps: clipEps}
		g.Steps = append(g.Steps,
			bench.Step{Node: ln, In: []string{cur, p + "ln_1.weight", p + "ln_1.bias"}, Out: []string{h1}},
			bench.Step{Node: Gemm{Batch: b, M: n, N: 3 * w, K: w, TransB: true, Bias: true},
				In: []string{h1, p + "attn.in_proj_weight", p + "attn.in_proj_bias"}, Out: []string{qkv}},
			bench.Step{Node: AttentionCore{Batch: b, Tokens: n, Heads: c.heads, HeadDim: w / c.heads,
				Scale: 1 / sqrtInt(w/c.heads), Causal: c.causal}, In: []string{qkv}, Out: []string{ctx}},
			bench.Step{Node: Gemm{Batch: b, M: n, N: w, K: w, TransB: true, Bias: true, Residual: true},
				In: []string{ctx, p + "attn.out_proj.weight", p + "attn.out_proj.bias", cur}, Out: []string{y}},
			bench.Step{Node: ln, In: []string{y, p + "ln_2.weight", p + "ln_2.bias"}, Out: []string{h2}},
			bench.Step{Node: Gemm{Batch: b, M: n, N: 4 * w, K: w, TransB: true, Bias: true, Act: "quick_gelu"},
				In: []string{h2, p + "mlp.c_fc.weight", p + "mlp.c_fc.bias"}, Out: []string{hid}},
			bench.Step{Node: Gemm{Batch: b, M: n, N: w, K: 4 * w, TransB: true, Bias: true, Residual: true},
				In: []string{hid, p + "mlp.c_proj.weight", p + "mlp.c_proj.bias", y}, Out: []string{next}})
		cur = next
	}
}
