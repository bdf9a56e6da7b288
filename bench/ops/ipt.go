package ops

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/internal/mutation"
)

// ipt is a resolved IPT configuration (huawei-noah/Pretrained-IPT's
// model/ipt.py; docs/reference-notes.md, "IPT"): one head, tail and query
// row per task, a shared transformer body over Patch × Patch feature maps
// cut into PatchDim × PatchDim patches, on a batch of Batch tiles.
type ipt struct {
	batch, feats, patch, patchDim, heads, layers, queries, task int
	scales                                                      []int
}

// IPTParams is the JSON form of an ipt case (option.py's names).
type IPTParams struct {
	NFeats     int   `json:"n_feats,omitempty"`     // default 64
	PatchSize  int   `json:"patch_size,omitempty"`  // default 48: the only input size the body takes
	PatchDim   int   `json:"patch_dim,omitempty"`   // default 3
	NumHeads   int   `json:"num_heads,omitempty"`   // default 12
	NumLayers  int   `json:"num_layers,omitempty"`  // default 12, for the encoder and for the decoder
	NumQueries int   `json:"num_queries,omitempty"` // default 1
	Scale      []int `json:"scale,omitempty"`       // default [4]: one head and tail per entry, 1 = denoise / derain
	Task       int   `json:"task,omitempty"`        // default 0: the head, query row and tail the forward uses
}

// resolve fills the defaults and checks p for batch, naming op in errors.
func (p IPTParams) resolve(op string, batch int) (*ipt, error) {
	c := &ipt{batch: batch, feats: orInt(p.NFeats, 64), patch: orInt(p.PatchSize, 48), patchDim: orInt(p.PatchDim, 3),
		heads: orInt(p.NumHeads, 12), layers: orInt(p.NumLayers, 12), queries: orInt(p.NumQueries, 1),
		task: p.Task, scales: p.Scale}
	if len(c.scales) == 0 {
		c.scales = []int{4}
	}
	if err := positive(op, "batch", batch, "n_feats", c.feats, "patch_size", c.patch, "patch_dim", c.patchDim,
		"num_heads", c.heads, "num_layers", c.layers, "num_queries", c.queries); err != nil {
		return nil, err
	}
	if err := checkDims(op, "batch", batch, "n_feats", c.feats, "patch_size", c.patch); err != nil {
		return nil, err
	}
	if c.patch%c.patchDim != 0 {
		return nil, errorf("%s params: patch_size %d is not a multiple of patch_dim %d", op, c.patch, c.patchDim)
	}
	if d := c.dim(); d%c.heads != 0 {
		return nil, errorf("%s params: the embedding n_feats·patch_dim² = %d is not a multiple of num_heads %d", op, d, c.heads)
	}
	if c.layers > 64 || len(c.scales) > 16 {
		return nil, errorf("%s params: at most 64 layers and 16 tasks", op)
	}
	for _, s := range c.scales {
		if s != 1 && s != 2 && s != 3 && s != 4 && s != 8 {
			return nil, errorf("%s params: scale %d: the Upsampler takes 1, 2, 3, 4 or 8", op, s)
		}
	}
	if c.task < 0 || c.task >= len(c.scales) || c.task >= c.queries {
		return nil, errorf("%s params: task %d must index scale (%d entries) and the query rows (num_queries %d)",
			op, c.task, len(c.scales), c.queries)
	}
	return c, nil
}

func (c *ipt) dim() int    { return c.feats * c.patchDim * c.patchDim }
func (c *ipt) tokens() int { return (c.patch / c.patchDim) * (c.patch / c.patchDim) }
func (c *ipt) scale() int  { return c.scales[c.task] }

// conv3 is the original's default_conv: k × k, padding k/2, with bias.
func conv3(b, cin, cout, h, w, k int) Conv2d {
	return Conv2d{Unfold: Unfold{Batch: b, InChans: cin, Height: h, Width: w, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1,
		PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: cout, Bias: true}
}

func convWeights(name string, cout, cin, k int) []bench.ArraySpec {
	return []bench.ArraySpec{{Name: name + ".weight", Shape: bench.Shape{cout, cin, k, k}}, {Name: name + ".bias", Shape: bench.Shape{cout}}}
}

// headWeights are one head's entries under prefix ("head.0."): the 3×3
// conv, then two ResBlocks of two 5×5 convs (body.0 and body.2).
func (c *ipt) headWeights(prefix string) []bench.ArraySpec {
	w := convWeights(prefix+"0", c.feats, 3, 3)
	for r := 1; r <= 2; r++ {
		for _, j := range []int{0, 2} {
			w = append(w, convWeights(fmt.Sprintf("%s%d.body.%d", prefix, r, j), c.feats, c.feats, 5)...)
		}
	}
	return w
}

// upsampleSteps is the Upsampler of a scale: log2(s) × (conv to 4F, shuffle
// 2) for a power of two, (conv to 9F, shuffle 3) for 3, nothing for 1.
func upsampleSteps(s int) (convs, r int) {
	switch s {
	case 1:
		return 0, 0
	case 3:
		return 1, 3
	}
	return int(math.Round(math.Log2(float64(s)))), 2
}

// tailWeights are one tail's entries under prefix ("tail.0."): the
// Upsampler's convs (0.0, 0.2, ...) and the last conv (1).
func (c *ipt) tailWeights(prefix string, s int) []bench.ArraySpec {
	var w []bench.ArraySpec
	n, r := upsampleSteps(s)
	for i := 0; i < n; i++ {
		w = append(w, convWeights(fmt.Sprintf("%s0.%d", prefix, 2*i), c.feats*r*r, c.feats, 3)...)
	}
	return append(w, convWeights(prefix+"1", 3, c.feats, 3)...)
}

// encoderWeights are one encoder layer's entries under prefix: the
// bias-free nn.MultiheadAttention, the feed-forward layer and two norms.
func (c *ipt) encoderWeights(prefix string) []bench.ArraySpec {
	d := c.dim()
	w := mhaNoBias(prefix+"self_attn.", d)
	w = append(w, linear(prefix+"linear1", 4*d, d)...)
	w = append(w, linear(prefix+"linear2", d, 4*d)...)
	return append(append(w, norm(prefix+"norm1", d)...), norm(prefix+"norm2", d)...)
}

// decoderWeights are one decoder layer's entries under prefix.
func (c *ipt) decoderWeights(prefix string) []bench.ArraySpec {
	d := c.dim()
	w := append(mhaNoBias(prefix+"self_attn.", d), mhaNoBias(prefix+"multihead_attn.", d)...)
	w = append(w, linear(prefix+"linear1", 4*d, d)...)
	w = append(w, linear(prefix+"linear2", d, 4*d)...)
	for _, n := range []string{"norm1", "norm2", "norm3"} {
		w = append(w, norm(prefix+n, d)...)
	}
	return w
}

// mhaNoBias lists nn.MultiheadAttention(bias=False)'s weights under prefix.
func mhaNoBias(prefix string, d int) []bench.ArraySpec {
	return []bench.ArraySpec{{Name: prefix + "in_proj_weight", Shape: bench.Shape{3 * d, d}},
		{Name: prefix + "out_proj.weight", Shape: bench.Shape{d, d}}}
}

// bodyWeights are the VisionTransformer's entries (body.*), in module order.
func (c *ipt) bodyWeights() []bench.ArraySpec {
	d := c.dim()
	w := linear("body.linear_encoding", d, d)
	w = append(w, linear("body.mlp_head.0", 4*d, d)...)
	w = append(w, linear("body.mlp_head.3", d, 4*d)...)
	w = append(w, bench.ArraySpec{Name: "body.query_embed.weight", Shape: bench.Shape{c.queries, c.tokens() * d}})
	for i := 0; i < c.layers; i++ {
		w = append(w, c.encoderWeights(fmt.Sprintf("body.encoder.layers.%d.", i))...)
	}
	for i := 0; i < c.layers; i++ {
		w = append(w, c.decoderWeights(fmt.Sprintf("body.decoder.layers.%d.", i))...)
	}
	return append(w, bench.ArraySpec{Name: "body.position_encoding.pe.weight", Shape: bench.Shape{c.tokens(), d}})
}

// weights is the whole model's state_dict (without the integer
// position_ids buffer), in module order.
func (c *ipt) weights() []bench.ArraySpec {
	w := []bench.ArraySpec{{Name: "sub_mean.weight", Shape: bench.Shape{3, 3, 1, 1}}, {Name: "sub_mean.bias", Shape: bench.Shape{3}},
		{Name: "add_mean.weight", Shape: bench.Shape{3, 3, 1, 1}}, {Name: "add_mean.bias", Shape: bench.Shape{3}}}
	for i := range c.scales {
		w = append(w, c.headWeights(fmt.Sprintf("head.%d.", i))...)
	}
	w = append(w, c.bodyWeights()...)
	for i, s := range c.scales {
		w = append(w, c.tailWeights(fmt.Sprintf("tail.%d.", i), s)...)
	}
	return w
}

// IPTAttnBias, IPTFinalNorm and IPTZeroTgt name the mutations
// (internal/mutation, builds with the "mutation" tag only) of IPT's body:
// nn.MultiheadAttention with biases (a port that keeps PyTorch's default
// bias=True; the biases it reads here are the first values of each
// projection's own weight, standing in for nonzero learned ones), a
// LayerNorm after the decoder (DETR's final norm; here with the last
// decoder layer's norm3 parameters), and a decoder that starts from zeros
// (DETR's tgt) instead of the encoder's output.
const (
	IPTAttnBias  = "ipt_attention_bias"
	IPTFinalNorm = "ipt_body_final_norm"
	IPTZeroTgt   = "ipt_decoder_zero_input"
)

// headSteps appends head k reading x [B, 3, H, W] into out [B, F, H, W];
// the weights are read under prefix.
func (c *ipt) headSteps(g *bench.Graph, prefix, x, out string, h, w int) {
	b, f := c.batch, c.feats
	fm := bench.Shape{b, f, h, w}
	g.Temp("ipt.h0", fm)
	g.Temp("ipt.h1", fm)
	g.Temp("ipt.h2", fm)
	step := func(cv Conv2d, name, in, o string, res ...string) {
		ins := append([]string{in, name + ".weight", name + ".bias"}, res...)
		g.Steps = append(g.Steps, bench.Step{Node: cv, In: ins, Out: []string{o}})
	}
	step(conv3(b, 3, f, h, w, 3), prefix+"0", x, "ipt.h0")
	cur := "ipt.h0"
	for r := 1; r <= 2; r++ {
		relu := conv3(b, f, f, h, w, 5)
		relu.ReLU = true
		res := conv3(b, f, f, h, w, 5)
		res.Residual = true
		o := "ipt.h2"
		if r == 2 {
			o = out
		}
		step(relu, fmt.Sprintf("%s%d.body.0", prefix, r), cur, "ipt.h1")
		step(res, fmt.Sprintf("%s%d.body.2", prefix, r), "ipt.h1", o, cur)
		cur = o
	}
}

// tailSteps appends tail k (scale s) reading x [B, F, H, W] into out
// [B, 3, H·s, W·s].
func (c *ipt) tailSteps(g *bench.Graph, prefix string, s int, x, out string, h, w int) {
	b, f := c.batch, c.feats
	n, r := upsampleSteps(s)
	cur := x
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s0.%d", prefix, 2*i)
		conv := fmt.Sprintf("ipt.up%d.conv", i)
		sh := fmt.Sprintf("ipt.up%d", i)
		g.Temp(conv, bench.Shape{b, f * r * r, h, w})
		g.Temp(sh, bench.Shape{b, f, h * r, w * r})
		g.Steps = append(g.Steps,
			bench.Step{Node: conv3(b, f, f*r*r, h, w, 3), In: []string{cur, name + ".weight", name + ".bias"}, Out: []string{conv}},
			bench.Step{Node: PixelShuffle{Batch: b, Chans: f, Height: h, Width: w, R: r}, In: []string{conv}, Out: []string{sh}})
		cur, h, w = sh, h*r, w*r
	}
	g.Steps = append(g.Steps, bench.Step{Node: conv3(b, f, 3, h, w, 3), In: []string{cur, prefix + "1.weight", prefix + "1.bias"}, Out: []string{out}})
}

// gemm is a bias-free or biased Linear over the body's B·S tokens.
func (c *ipt) gemm(n, k int, bias bool, act string, res bool) Gemm {
	return Gemm{Batch: c.batch, M: c.tokens(), N: n, K: k, TransB: true, Bias: bias, Act: act, Residual: res}
}

// projection appends out = x·Wᵀ (+ res) for one bias-free attention
// projection with n output columns.
func (c *ipt) projection(g *bench.Graph, x, weight, out string, n int, res ...string) {
	gm := c.gemm(n, c.dim(), false, "", len(res) > 0)
	ins := []string{x, weight}
	if mutation.On(IPTAttnBias) {
		// The first n values of the weight, as a bias [n].
		d := c.dim()
		wide, row, bias := fmt.Sprintf("ipt.mw%d", n), fmt.Sprintf("ipt.mrow%d", n), fmt.Sprintf("ipt.mbias%d", n)
		g.Temp(wide, bench.Shape{1, d, n})
		g.Temp(row, bench.Shape{1, 1, n})
		g.Temp(bias, bench.Shape{n})
		g.Steps = append(g.Steps,
			bench.Step{Node: Reshape{From: bench.Shape{n, d}, To: bench.Shape{1, d, n}}, In: []string{weight}, Out: []string{wide}},
			bench.Step{Node: TakeToken{Batch: 1, Tokens: d, Dim: n}, In: []string{wide}, Out: []string{row}},
			bench.Step{Node: Reshape{From: bench.Shape{1, 1, n}, To: bench.Shape{n}}, In: []string{row}, Out: []string{bias}})
		gm.Bias = true
		ins = append(ins, bias)
	}
	g.Steps = append(g.Steps, bench.Step{Node: gm, In: append(ins, res...), Out: []string{out}})
}

// encoderLayerSteps appends one pre-norm encoder layer reading x and
// writing out (different values):
//
//	h = norm1(x);  x1 = x + out_proj(MHA(q = k = v = h));  out = x1 + linear2(relu(linear1(norm2(x1))))
func (c *ipt) encoderLayerSteps(g *bench.Graph, p, x, out string) {
	b, s, d := c.batch, c.tokens(), c.dim()
	tok := bench.Shape{b, s, d}
	for _, n := range []string{"ipt.h", "ipt.ctx", "ipt.x1"} {
		g.Temp(n, tok)
	}
	g.Temp("ipt.qkv", bench.Shape{b, s, 3 * d})
	g.Temp("ipt.hidden", bench.Shape{b, s, 4 * d})
	ln := LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}
	hd := d / c.heads
	attn := MHACore{Batch: b, Queries: s, Keys: s, Heads: c.heads, HeadDim: hd, Scale: 1 / math.Sqrt(float64(hd)),
		QLd: 3 * d, KLd: 3 * d, KOff: d, VLd: 3 * d, VOff: 2 * d}
	g.Steps = append(g.Steps, bench.Step{Node: ln, In: []string{x, p + "norm1.weight", p + "norm1.bias"}, Out: []string{"ipt.h"}})
	c.projection(g, "ipt.h", p+"self_attn.in_proj_weight", "ipt.qkv", 3*d)
	g.Steps = append(g.Steps, bench.Step{Node: attn, In: []string{"ipt.qkv", "ipt.qkv", "ipt.qkv"}, Out: []string{"ipt.ctx"}})
	c.projection(g, "ipt.ctx", p+"self_attn.out_proj.weight", "ipt.x1", d, x)
	c.ffnSteps(g, p, "norm2", "ipt.x1", out)
}

// ffnSteps appends out = x + linear2(relu(linear1(normName(x)))).
func (c *ipt) ffnSteps(g *bench.Graph, p, normName, x, out string) {
	b, s, d := c.batch, c.tokens(), c.dim()
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{x, p + normName + ".weight", p + normName + ".bias"}, Out: []string{"ipt.h"}},
		bench.Step{Node: c.gemm(4*d, d, true, "relu", false), In: []string{"ipt.h", p + "linear1.weight", p + "linear1.bias"}, Out: []string{"ipt.hidden"}},
		bench.Step{Node: c.gemm(d, 4*d, true, "", true), In: []string{"ipt.hidden", p + "linear2.weight", p + "linear2.bias", x}, Out: []string{out}})
}

// decoderLayerSteps appends one pre-norm decoder layer reading t, the
// encoder output memory and the task's query [1, 1, S·D] and writing out:
//
//	h = norm1(t);  t1 = t + MHA(q = k = h + query, v = h)
//	t2 = t1 + MHA(q = norm2(t1) + query, k = v = memory)
//	out = t2 + linear2(relu(linear1(norm3(t2))))
//
// Each input goes only through the in_proj rows it needs (RowSlice cuts
// the q and k, v, q, and k and v row blocks), as PyTorch's
// multi_head_attention_forward does.
func (c *ipt) decoderLayerSteps(g *bench.Graph, p, t, memory, query, out string) {
	b, s, d := c.batch, c.tokens(), c.dim()
	tok := bench.Shape{b, s, d}
	for _, n := range []string{"ipt.h", "ipt.hq", "ipt.ctx", "ipt.t1", "ipt.t2", "ipt.q1"} {
		g.Temp(n, tok)
	}
	g.Temp("ipt.qk2", bench.Shape{b, s, 2 * d})
	g.Temp("ipt.w1", bench.Shape{d, d})
	g.Temp("ipt.w2", bench.Shape{2 * d, d})
	g.Temp("ipt.hidden", bench.Shape{b, s, 4 * d})
	hd := d / c.heads
	core := MHACore{Batch: b, Queries: s, Keys: s, Heads: c.heads, HeadDim: hd, Scale: 1 / math.Sqrt(float64(hd))}
	self, cross := core, core
	self.QLd, self.KLd, self.KOff, self.VLd = 2*d, 2*d, d, d     // q, k from [q k], v alone
	cross.QLd, cross.KLd, cross.VLd, cross.VOff = d, 2*d, 2*d, d // q alone, k, v from [k v]
	ln := LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}
	addQuery := bench.Step{Node: AddBroadcast{Batch: b, Elems: s * d}, In: []string{"ipt.h", query}, Out: []string{"ipt.hq"}}
	rows := func(w string, n, off int, o string) bench.Step {
		return bench.Step{Node: RowSlice{Rows: n, Cols: d, Off: off}, In: []string{w}, Out: []string{o}}
	}
	sa, ca := p+"self_attn.in_proj_weight", p+"multihead_attn.in_proj_weight"
	g.Steps = append(g.Steps, bench.Step{Node: ln, In: []string{t, p + "norm1.weight", p + "norm1.bias"}, Out: []string{"ipt.h"}}, addQuery,
		rows(sa, 2*d, 0, "ipt.w2"))
	c.projection(g, "ipt.hq", "ipt.w2", "ipt.qk2", 2*d)
	g.Steps = append(g.Steps, rows(sa, d, 2*d, "ipt.w1"))
	c.projection(g, "ipt.h", "ipt.w1", "ipt.q1", d)
	g.Steps = append(g.Steps, bench.Step{Node: self, In: []string{"ipt.qk2", "ipt.qk2", "ipt.q1"}, Out: []string{"ipt.ctx"}})
	c.projection(g, "ipt.ctx", p+"self_attn.out_proj.weight", "ipt.t1", d, t)
	g.Steps = append(g.Steps, bench.Step{Node: ln, In: []string{"ipt.t1", p + "norm2.weight", p + "norm2.bias"}, Out: []string{"ipt.h"}}, addQuery,
		rows(ca, d, 0, "ipt.w1"))
	c.projection(g, "ipt.hq", "ipt.w1", "ipt.q1", d)
	g.Steps = append(g.Steps, rows(ca, 2*d, d, "ipt.w2"))
	c.projection(g, memory, "ipt.w2", "ipt.qk2", 2*d)
	g.Steps = append(g.Steps, bench.Step{Node: cross, In: []string{"ipt.q1", "ipt.qk2", "ipt.qk2"}, Out: []string{"ipt.ctx"}})
	c.projection(g, "ipt.ctx", p+"multihead_attn.out_proj.weight", "ipt.t2", d, "ipt.t1")
	c.ffnSteps(g, p, "norm3", "ipt.t2", out)
}

// bodySteps appends the VisionTransformer reading f [B, F, P, P] and
// writing res = body(f) + f:
//
//	x = unfold(f, PatchDim, stride PatchDim) (tokens [B, S, D]);  x = x + linear_encoding(x)
//	memory = encoder(x + pos);  y = decoder(tgt = memory, memory, query = query_embed[task])
//	y = y + mlp_head(y);  res = fold(y) + f
func (c *ipt) bodySteps(g *bench.Graph, f, res string) {
	b, s, d, pd := c.batch, c.tokens(), c.dim(), c.patchDim
	tok := bench.Shape{b, s, d}
	for _, n := range []string{"ipt.tok", "ipt.xa", "ipt.xb", "ipt.mem", "ipt.zero"} {
		g.Temp(n, tok)
	}
	g.Temp("ipt.queries", bench.Shape{1, c.queries, s * d})
	g.Temp("ipt.query", bench.Shape{1, 1, s * d})
	g.Temp("ipt.fold", bench.Shape{b, c.feats, c.patch, c.patch})
	u := Unfold{Batch: b, InChans: c.feats, Height: c.patch, Width: c.patch, KernelH: pd, KernelW: pd, StrideH: pd, StrideW: pd,
		DilationH: 1, DilationW: 1}
	g.Steps = append(g.Steps,
		bench.Step{Node: u, In: []string{f}, Out: []string{"ipt.tok"}},
		bench.Step{Node: c.gemm(d, d, true, "", true), In: []string{"ipt.tok", "body.linear_encoding.weight", "body.linear_encoding.bias", "ipt.tok"}, Out: []string{"ipt.xa"}},
		bench.Step{Node: AddBroadcast{Batch: b, Elems: s * d}, In: []string{"ipt.xa", "body.position_encoding.pe.weight"}, Out: []string{"ipt.xb"}},
		bench.Step{Node: Reshape{From: bench.Shape{c.queries, s * d}, To: bench.Shape{1, c.queries, s * d}}, In: []string{"body.query_embed.weight"}, Out: []string{"ipt.queries"}},
		bench.Step{Node: TakeToken{Batch: 1, Tokens: c.queries, Dim: s * d, Index: c.task}, In: []string{"ipt.queries"}, Out: []string{"ipt.query"}})
	x := "ipt.xb"
	for i := 0; i < c.layers; i++ {
		out := "ipt.xa"
		if x == out {
			out = "ipt.xb"
		}
		if i == c.layers-1 {
			out = "ipt.mem"
		}
		c.encoderLayerSteps(g, fmt.Sprintf("body.encoder.layers.%d.", i), x, out)
		x = out
	}
	tgt := "ipt.mem"
	if mutation.On(IPTZeroTgt) {
		g.Steps = append(g.Steps, bench.Step{Node: DETRQueries{Batch: b, Queries: s, Dim: d}, In: []string{"body.position_encoding.pe.weight"},
			Out: []string{"ipt.tok", "ipt.zero"}})
		tgt = "ipt.zero"
	}
	x = tgt
	for i := 0; i < c.layers; i++ {
		out := "ipt.xa"
		if x == out {
			out = "ipt.xb"
		}
		c.decoderLayerSteps(g, fmt.Sprintf("body.decoder.layers.%d.", i), x, "ipt.mem", "ipt.query", out)
		x = out
	}
	if mutation.On(IPTFinalNorm) {
		p := fmt.Sprintf("body.decoder.layers.%d.", c.layers-1)
		g.Steps = append(g.Steps, bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5},
			In: []string{x, p + "norm3.weight", p + "norm3.bias"}, Out: []string{"ipt.tok"}})
		x = "ipt.tok"
	}
	g.Temp("ipt.mlp", bench.Shape{b, s, 4 * d})
	g.Temp("ipt.y", tok)
	g.Steps = append(g.Steps,
		bench.Step{Node: c.gemm(4*d, d, true, "relu", false), In: []string{x, "body.mlp_head.0.weight", "body.mlp_head.0.bias"}, Out: []string{"ipt.mlp"}},
		bench.Step{Node: c.gemm(d, 4*d, true, "", true), In: []string{"ipt.mlp", "body.mlp_head.3.weight", "body.mlp_head.3.bias", x}, Out: []string{"ipt.y"}},
		bench.Step{Node: Fold{u}, In: []string{"ipt.y"}, Out: []string{"ipt.fold"}},
		bench.Step{Node: Add{Elems: b * c.feats * c.patch * c.patch}, In: []string{"ipt.fold", f}, Out: []string{res}})
}

// steps appends the whole model for the task reading x [B, 3, P, P] and
// writing out [B, 3, P·s, P·s]: sub_mean, head, body + residual, tail,
// add_mean.
func (c *ipt) steps(g *bench.Graph, x, out string) {
	b, p, f, s := c.batch, c.patch, c.feats, c.scale()
	g.Temp("ipt.in", bench.Shape{b, 3, p, p})
	g.Temp("ipt.f", bench.Shape{b, f, p, p})
	g.Temp("ipt.res", bench.Shape{b, f, p, p})
	g.Temp("ipt.tail", bench.Shape{b, 3, p * s, p * s})
	g.Steps = append(g.Steps, bench.Step{Node: MeanShift{Batch: b, Chans: 3, Pixels: p * p}, In: []string{x, "sub_mean.weight", "sub_mean.bias"}, Out: []string{"ipt.in"}})
	c.headSteps(g, fmt.Sprintf("head.%d.", c.task), "ipt.in", "ipt.f", p, p)
	c.bodySteps(g, "ipt.f", "ipt.res")
	c.tailSteps(g, fmt.Sprintf("tail.%d.", c.task), s, "ipt.res", "ipt.tail", p, p)
	g.Steps = append(g.Steps, bench.Step{Node: MeanShift{Batch: b, Chans: 3, Pixels: p * s * p * s}, In: []string{"ipt.tail", "add_mean.weight", "add_mean.bias"}, Out: []string{out}})
}

// macs counts the model's multiply-accumulates for the task: the convs,
// every Linear (each attention input through the in_proj rows it needs)
// and the attention products.
func (c *ipt) macs() int64 {
	b, s, d := int64(c.batch), int64(c.tokens()), int64(c.dim())
	head := conv3(c.batch, 3, c.feats, c.patch, c.patch, 3).macsOf() + 4*conv3(c.batch, c.feats, c.feats, c.patch, c.patch, 5).macsOf()
	tail := int64(0)
	n, r := upsampleSteps(c.scale())
	h := c.patch
	for i := 0; i < n; i++ {
		tail += conv3(c.batch, c.feats, c.feats*r*r, h, h, 3).macsOf()
		h *= r
	}
	tail += conv3(c.batch, c.feats, 3, h, h, 3).macsOf()
	attn := 2 * b * s * s * d
	enc := b*s*d*3*d + attn + b*s*d*d + 8*b*s*d*d
	dec := 2*(b*s*d*3*d+attn+b*s*d*d) + 8*b*s*d*d
	body := b*s*d*d + int64(c.layers)*(enc+dec) + 8*b*s*d*d
	return head + body + tail
}
