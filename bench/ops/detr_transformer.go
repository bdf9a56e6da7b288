package ops

import (
	"encoding/json"
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/internal/mutation"
)

// DETRTransformerParams is the JSON form of a detr_transformer case: the
// original DETR's Transformer (post-norm, nn.MultiheadAttention,
// return_intermediate) on one feature map of FeatureSize (H, W), with its
// sine position embedding computed from the padding mask and the
// detector's learned queries.
type DETRTransformerParams struct {
	FeatureSize Pair `json:"feature_size"`
	DModel      int  `json:"d_model,omitempty"`    // default 256 (the sine embedding's 2·128 features)
	Heads       int  `json:"heads,omitempty"`      // default 8
	EncLayers   int  `json:"enc_layers,omitempty"` // default 6
	DecLayers   int  `json:"dec_layers,omitempty"` // default 6
	FFNDim      int  `json:"ffn_dim,omitempty"`    // default 2048
	Queries     int  `json:"queries,omitempty"`    // default 100
	PaddingMask bool `json:"padding_mask,omitempty"`
}

// detrTransformer is a resolved detr_transformer case.
type detrTransformer struct {
	batch, h, w, d, heads, encLayers, decLayers, ffn, queries int
	masked                                                    bool
}

type detrTransformerKind struct{}

func (detrTransformerKind) Name() string { return "detr_transformer" }
func (detrTransformerKind) Summary() string {
	return "DETR transformer: sine positions (no offset), post-norm nn.MultiheadAttention encoder and decoder, learned queries, every decoder layer's output"
}

func (detrTransformerKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	const op = "detr_transformer"
	var p DETRTransformerParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	t := &detrTransformer{batch: batch, h: p.FeatureSize[0], w: p.FeatureSize[1], d: orInt(p.DModel, 256),
		heads: orInt(p.Heads, 8), encLayers: orInt(p.EncLayers, 6), decLayers: orInt(p.DecLayers, 6),
		ffn: orInt(p.FFNDim, 2048), queries: orInt(p.Queries, 100), masked: p.PaddingMask}
	if err := t.check(op); err != nil {
		return nil, err
	}
	return t, nil
}

// check validates a resolved configuration, naming op in its errors.
func (t *detrTransformer) check(op string) error {
	if err := positive(op, "batch", t.batch, "feature_size", Pair{t.h, t.w}, "d_model", t.d, "heads", t.heads,
		"enc_layers", t.encLayers, "dec_layers", t.decLayers, "ffn_dim", t.ffn, "queries", t.queries); err != nil {
		return err
	}
	if err := checkDims(op, "batch", t.batch, "feature_size", Pair{t.h, t.w}, "ffn_dim", t.ffn, "queries", t.queries); err != nil {
		return err
	}
	if t.d != 2*sineFeatsPerAxis {
		return errorf("%s params: d_model must be %d, the sine embedding's 2·%d features, got %d", op, 2*sineFeatsPerAxis, sineFeatsPerAxis, t.d)
	}
	if t.d%t.heads != 0 {
		return errorf("%s params: d_model %d is not a multiple of heads %d", op, t.d, t.heads)
	}
	if t.encLayers > 64 || t.decLayers > 64 {
		return errorf("%s params: at most 64 encoder and 64 decoder layers", op)
	}
	return nil
}

// sineFeatsPerAxis is PositionSine's feature count for each of y and x.
const sineFeatsPerAxis = 128

func (t *detrTransformer) tokens() int { return t.h * t.w }

func (t *detrTransformer) Op() string { return "detr_transformer" }

func (t *detrTransformer) Inputs() []bench.ArraySpec {
	s := t.tokens()
	in := []bench.ArraySpec{{Name: "src", Shape: bench.Shape{t.batch, s, t.d}}}
	if t.masked {
		in = append(in, bench.ArraySpec{Name: "padding_mask", Shape: bench.Shape{t.batch, s}})
	}
	return in
}

// mha lists one nn.MultiheadAttention's weights under prefix.
func mhaWeights(prefix string, d int) []bench.ArraySpec {
	return append([]bench.ArraySpec{{Name: prefix + "in_proj_weight", Shape: bench.Shape{3 * d, d}},
		{Name: prefix + "in_proj_bias", Shape: bench.Shape{3 * d}}}, linear(prefix+"out_proj", d, d)...)
}

// Weights are named and ordered as in the DETR detector's state_dict.
func (t *detrTransformer) Weights() []bench.ArraySpec {
	return append(t.transformerWeights(), bench.ArraySpec{Name: "query_embed.weight", Shape: bench.Shape{t.queries, t.d}})
}

// transformerWeights are the transformer.* entries of the state_dict.
func (t *detrTransformer) transformerWeights() []bench.ArraySpec {
	d := t.d
	var w []bench.ArraySpec
	for i := 0; i < t.encLayers; i++ {
		p := fmt.Sprintf("transformer.encoder.layers.%d.", i)
		w = append(w, mhaWeights(p+"self_attn.", d)...)
		w = append(w, linear(p+"linear1", t.ffn, d)...)
		w = append(w, linear(p+"linear2", d, t.ffn)...)
		w = append(w, norm(p+"norm1", d)...)
		w = append(w, norm(p+"norm2", d)...)
	}
	for i := 0; i < t.decLayers; i++ {
		p := fmt.Sprintf("transformer.decoder.layers.%d.", i)
		w = append(w, mhaWeights(p+"self_attn.", d)...)
		w = append(w, mhaWeights(p+"multihead_attn.", d)...)
		w = append(w, linear(p+"linear1", t.ffn, d)...)
		w = append(w, linear(p+"linear2", d, t.ffn)...)
		w = append(w, norm(p+"norm1", d)...)
		w = append(w, norm(p+"norm2", d)...)
		w = append(w, norm(p+"norm3", d)...)
	}
	return append(w, norm("transformer.decoder.norm", d)...)
}

// Outputs: memory in the token layout [N, H·W, D] (the original returns it
// as [N, D, H, W]) and hs [dec_layers, N, Q, D], every decoder layer's
// output through the decoder's final LayerNorm.
func (t *detrTransformer) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "memory", Shape: bench.Shape{t.batch, t.tokens(), t.d}},
		{Name: "hs", Shape: bench.Shape{t.decLayers, t.batch, t.queries, t.d}}}
}

// MACs counts the q, k and v projections (D columns each), the attention
// products, the output projections and the feed-forward layers.
func (t *detrTransformer) MACs() int64 {
	b, s, q, d, f := int64(t.batch), int64(t.tokens()), int64(t.queries), int64(t.d), int64(t.ffn)
	enc := 3*b*s*d*d + 2*b*s*s*d + b*s*d*d + 2*b*s*d*f
	dec := 3*b*q*d*d + 2*b*q*q*d + b*q*d*d + // self-attention
		b*q*d*d + 2*b*s*d*d + 2*b*q*s*d + b*q*d*d + // cross-attention
		2*b*q*d*f
	return int64(t.encLayers)*enc + int64(t.decLayers)*dec
}

func (t *detrTransformer) Bytes() int64 { return bench.BytesOf(t.Inputs(), t.Weights(), t.Outputs()) }

func (t *detrTransformer) Params() int64 { return bench.BytesOf(t.Weights()) / 4 }

// Graph: the sine positions of the mask, then the encoder over the H·W
// tokens and the decoder over the queries, both post-norm:
//
//	encoder layer: x = norm1(x + MHA(q = k = x + pos, v = x, key mask));  x = norm2(x + FFN(x))
//	decoder layer: y = norm1(y + MHA(q = k = y + qpos, v = y))
//	               y = norm2(y + MHA(q = y + qpos, k = memory + pos, v = memory, key mask))
//	               y = norm3(y + FFN(y));  hs[i] = norm(y)
//
// with y starting at zero and qpos = query_embed.weight.
func (t *detrTransformer) Graph() *bench.Graph {
	g := &bench.Graph{}
	mask := ""
	if t.masked {
		mask = "padding_mask"
	}
	t.steps(g, "src", mask, "memory", "hs")
	return g
}

// DETROffset, DETRPosValues and DETRNoDecoderNorm name the mutations
// (internal/mutation, builds with the "mutation" tag only) of DETR's
// transformer: Deformable DETR's −0.5 in the sine positions, positions
// added to the attention values too, and hs without the decoder's final
// LayerNorm.
const (
	DETROffset        = "detr_sine_offset"
	DETRPosValues     = "detr_pos_in_values"
	DETRNoDecoderNorm = "detr_no_decoder_norm"
)

// steps appends the transformer's sub-graph reading src [N, S, D] and the
// padding mask (none when "") and writing memory and hs.
func (t *detrTransformer) steps(g *bench.Graph, src, mask, memory, hs string) {
	b, s, q, d, hd := t.batch, t.tokens(), t.queries, t.d, t.d/t.heads
	tok, qs := bench.Shape{b, s, d}, bench.Shape{b, q, d}
	for _, name := range []string{"detr.pos", "enc.x", "enc.q", "enc.sum", "enc.ctx", "dec.kin"} {
		g.Temp(name, tok)
	}
	g.Temp("enc.qk", bench.Shape{b, s, 2 * d})
	g.Temp("enc.v", tok)
	g.Temp("enc.hidden", bench.Shape{b, s, t.ffn})
	var posIn []string
	if mask != "" {
		posIn = []string{mask}
	}
	g.Steps = append(g.Steps, bench.Step{Node: PositionSine{Batch: b, Levels: LevelsOf([2]int{t.h, t.w}),
		Masked: mask != "", NoOffset: !mutation.On(DETROffset)}, In: posIn, Out: []string{"detr.pos"}})
	gemm := func(m, n, k int, act string, res bool) Gemm {
		return Gemm{Batch: b, M: m, N: n, K: k, TransB: true, Bias: true, Act: act, Residual: res}
	}
	// slice appends the steps cutting rows [off, off+rows) of the packed
	// in_proj of the attention under prefix p and returns the weight and
	// bias it writes (temps named after tag, shared by every layer).
	slice := func(p, tag string, off, rows int) (string, string) {
		w, bias := "mha.w_"+tag, "mha.b_"+tag
		g.Temp(w, bench.Shape{rows, d})
		g.Temp(bias, bench.Shape{rows})
		g.Steps = append(g.Steps,
			bench.Step{Node: RowSlice{Rows: rows, Cols: d, Off: off}, In: []string{p + "in_proj_weight"}, Out: []string{w}},
			bench.Step{Node: RowSlice{Rows: rows, Cols: 1, Off: off}, In: []string{p + "in_proj_bias"}, Out: []string{bias}})
		return w, bias
	}
	// vIn is the input nn.MultiheadAttention takes its values from: x, or
	// by mistake x with the positions added.
	vIn := func(x, withPos string) string {
		if mutation.On(DETRPosValues) {
			return withPos
		}
		return x
	}
	x := src
	for i := 0; i < t.encLayers; i++ {
		p := fmt.Sprintf("transformer.encoder.layers.%d.", i)
		out := "enc.x"
		if i == t.encLayers-1 {
			out = memory
		}
		attn := MHACore{Batch: b, Queries: s, Keys: s, Heads: t.heads, HeadDim: hd, Scale: 1 / math.Sqrt(float64(hd)),
			QLd: 2 * d, KLd: 2 * d, KOff: d, VLd: d, Masked: mask != ""}
		attnIn := []string{"enc.qk", "enc.qk", "enc.v"}
		if mask != "" {
			attnIn = append(attnIn, mask)
		}
		wqk, bqk := slice(p+"self_attn.", "qk", 0, 2*d)
		wv, bv := slice(p+"self_attn.", "v", 2*d, d)
		g.Steps = append(g.Steps,
			bench.Step{Node: Add{Elems: b * s * d}, In: []string{x, "detr.pos"}, Out: []string{"enc.q"}},
			bench.Step{Node: gemm(s, 2*d, d, "", false), In: []string{"enc.q", wqk, bqk}, Out: []string{"enc.qk"}},
			bench.Step{Node: gemm(s, d, d, "", false), In: []string{vIn(x, "enc.q"), wv, bv}, Out: []string{"enc.v"}},
			bench.Step{Node: attn, In: attnIn, Out: []string{"enc.ctx"}},
			bench.Step{Node: gemm(s, d, d, "", true), In: []string{"enc.ctx", p + "self_attn.out_proj.weight", p + "self_attn.out_proj.bias", x}, Out: []string{"enc.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{"enc.sum", p + "norm1.weight", p + "norm1.bias"}, Out: []string{"enc.x"}},
			bench.Step{Node: gemm(s, t.ffn, d, "relu", false), In: []string{"enc.x", p + "linear1.weight", p + "linear1.bias"}, Out: []string{"enc.hidden"}},
			bench.Step{Node: gemm(s, d, t.ffn, "", true), In: []string{"enc.hidden", p + "linear2.weight", p + "linear2.bias", "enc.x"}, Out: []string{"enc.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{"enc.sum", p + "norm2.weight", p + "norm2.bias"}, Out: []string{out}})
		x = out
	}
	// The decoder: its input starts at zero, the queries are the positions.
	for _, name := range []string{"dec.qpos", "dec.y", "dec.q", "dec.sum", "dec.ctx"} {
		g.Temp(name, qs)
	}
	g.Temp("dec.qk", bench.Shape{b, q, 2 * d})
	for _, name := range []string{"dec.sv", "dec.cq"} {
		g.Temp(name, qs)
	}
	for _, name := range []string{"dec.k", "dec.v"} {
		g.Temp(name, tok)
	}
	g.Temp("dec.hidden", bench.Shape{b, q, t.ffn})
	outs := make([]string, t.decLayers)
	for i := range outs {
		outs[i] = fmt.Sprintf("dec.out%d", i)
		g.Temp(outs[i], qs)
	}
	g.Temp("dec.zero", bench.Shape{b, q, d})
	g.Steps = append(g.Steps,
		bench.Step{Node: DETRQueries{Batch: b, Queries: q, Dim: d}, In: []string{"query_embed.weight"}, Out: []string{"dec.qpos", "dec.zero"}},
		bench.Step{Node: Add{Elems: b * s * d}, In: []string{memory, "detr.pos"}, Out: []string{"dec.kin"}})
	y := "dec.zero"
	for i := 0; i < t.decLayers; i++ {
		p := fmt.Sprintf("transformer.decoder.layers.%d.", i)
		self := MHACore{Batch: b, Queries: q, Keys: q, Heads: t.heads, HeadDim: hd, Scale: 1 / math.Sqrt(float64(hd)),
			QLd: 2 * d, KLd: 2 * d, KOff: d, VLd: d}
		cross := MHACore{Batch: b, Queries: q, Keys: s, Heads: t.heads, HeadDim: hd, Scale: 1 / math.Sqrt(float64(hd)),
			QLd: d, KLd: d, VLd: d, Masked: mask != ""}
		crossIn := []string{"dec.cq", "dec.k", "dec.v"}
		if mask != "" {
			crossIn = append(crossIn, mask)
		}
		wqk, bqk := slice(p+"self_attn.", "qk", 0, 2*d)
		wv, bv := slice(p+"self_attn.", "v", 2*d, d)
		g.Steps = append(g.Steps,
			bench.Step{Node: Add{Elems: b * q * d}, In: []string{y, "dec.qpos"}, Out: []string{"dec.q"}},
			bench.Step{Node: gemm(q, 2*d, d, "", false), In: []string{"dec.q", wqk, bqk}, Out: []string{"dec.qk"}},
			bench.Step{Node: gemm(q, d, d, "", false), In: []string{vIn(y, "dec.q"), wv, bv}, Out: []string{"dec.sv"}},
			bench.Step{Node: self, In: []string{"dec.qk", "dec.qk", "dec.sv"}, Out: []string{"dec.ctx"}},
			bench.Step{Node: gemm(q, d, d, "", true), In: []string{"dec.ctx", p + "self_attn.out_proj.weight", p + "self_attn.out_proj.bias", y}, Out: []string{"dec.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5}, In: []string{"dec.sum", p + "norm1.weight", p + "norm1.bias"}, Out: []string{"dec.y"}},
			bench.Step{Node: Add{Elems: b * q * d}, In: []string{"dec.y", "dec.qpos"}, Out: []string{"dec.q"}})
		wq, bq := slice(p+"multihead_attn.", "q", 0, d)
		wk, bk := slice(p+"multihead_attn.", "k", d, d)
		wv, bv = slice(p+"multihead_attn.", "v", 2*d, d)
		g.Steps = append(g.Steps,
			bench.Step{Node: gemm(q, d, d, "", false), In: []string{"dec.q", wq, bq}, Out: []string{"dec.cq"}},
			bench.Step{Node: gemm(s, d, d, "", false), In: []string{"dec.kin", wk, bk}, Out: []string{"dec.k"}},
			bench.Step{Node: gemm(s, d, d, "", false), In: []string{vIn(memory, "dec.kin"), wv, bv}, Out: []string{"dec.v"}},
			bench.Step{Node: cross, In: crossIn, Out: []string{"dec.ctx"}},
			bench.Step{Node: gemm(q, d, d, "", true), In: []string{"dec.ctx", p + "multihead_attn.out_proj.weight", p + "multihead_attn.out_proj.bias", "dec.y"}, Out: []string{"dec.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5}, In: []string{"dec.sum", p + "norm2.weight", p + "norm2.bias"}, Out: []string{"dec.y"}},
			bench.Step{Node: gemm(q, t.ffn, d, "relu", false), In: []string{"dec.y", p + "linear1.weight", p + "linear1.bias"}, Out: []string{"dec.hidden"}},
			bench.Step{Node: gemm(q, d, t.ffn, "", true), In: []string{"dec.hidden", p + "linear2.weight", p + "linear2.bias", "dec.y"}, Out: []string{"dec.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5}, In: []string{"dec.sum", p + "norm3.weight", p + "norm3.bias"}, Out: []string{"dec.y"}})
		if mutation.On(DETRNoDecoderNorm) {
			g.Steps = append(g.Steps, bench.Step{Node: Reshape{From: qs, To: qs}, In: []string{"dec.y"}, Out: []string{outs[i]}})
		} else {
			g.Steps = append(g.Steps, bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5},
				In: []string{"dec.y", "transformer.decoder.norm.weight", "transformer.decoder.norm.bias"}, Out: []string{outs[i]}})
		}
		y = "dec.y"
	}
	g.Steps = append(g.Steps, bench.Step{Node: Concat{Parts: t.decLayers, Elems: b * q * d}, In: outs, Out: []string{hs}})
}

func init() { bench.RegisterOpKind(detrTransformerKind{}) }
