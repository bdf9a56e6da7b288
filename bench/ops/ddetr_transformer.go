package ops

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"vitbench/bench"
	"vitbench/internal/mutation"
)

// DDETRConfig is the JSON form of the transformer's configuration, shared
// by ddetr_transformer and deformable_detr cases.
type DDETRConfig struct {
	DModel      int  `json:"d_model,omitempty"`    // default 256
	Heads       int  `json:"heads,omitempty"`      // default 8
	EncLayers   int  `json:"enc_layers,omitempty"` // default 6
	DecLayers   int  `json:"dec_layers,omitempty"` // default 6
	FFNDim      int  `json:"ffn_dim,omitempty"`    // default 1024
	EncPoints   int  `json:"enc_points,omitempty"` // default 4
	DecPoints   int  `json:"dec_points,omitempty"` // default 4
	Queries     int  `json:"queries,omitempty"`    // default 300
	PaddingMask bool `json:"padding_mask,omitempty"`
	BoxRefine   bool `json:"box_refine,omitempty"`
	// TwoStage selects the queries from the encoder's box proposals; it
	// needs BoxRefine and d_model 256 (the proposal embedding has 4·128
	// features).
	TwoStage bool `json:"two_stage,omitempty"`
	Probe    bool `json:"probe,omitempty"`
}

// DDETRTransformerParams is the JSON form of a ddetr_transformer case:
// Deformable DETR's DeformableTransformer with the detector's learned
// queries (or, two-stage, its proposal selection).
type DDETRTransformerParams struct {
	SpatialShapes   [][2]int `json:"spatial_shapes"`
	LevelStartIndex []int    `json:"level_start_index,omitempty"`
	DDETRConfig
	// NumClasses sizes the two-stage class head (default 91); only with two_stage.
	NumClasses int `json:"num_classes,omitempty"`
}

// ddetrTransformer is a resolved ddetr_transformer case.
type ddetrTransformer struct {
	batch, d, heads, encLayers, decLayers, ffn, encPoints, decPoints, queries int
	levels                                                                    []Level
	masked, probe, refine, twoStage                                           bool
	classes                                                                   int // the two-stage class head's
	// bboxPrefix names the refinement MLPs: the decoder's own
	// ("transformer.decoder.bbox_embed.") or, in the whole detector, the
	// shared top-level "bbox_embed." that loading a state_dict fills last.
	bboxPrefix string
	// classPrefix names the class heads the two-stage encoder scores its
	// proposals with, as bboxPrefix.
	classPrefix string
}

type ddetrTransformerKind struct{}

func (ddetrTransformerKind) Name() string { return "ddetr_transformer" }
func (ddetrTransformerKind) Summary() string {
	return "Deformable DETR transformer: deformable encoder (post-norm) and decoder with learned queries, 2-d references"
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (ddetrTransformerKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	const op = "ddetr_transformer"
	var p DDETRTransformerParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	t := &ddetrTransformer{batch: batch, d: orInt(p.DModel, 256), heads: orInt(p.Heads, 8),
		encLayers: orInt(p.EncLayers, 6), decLayers: orInt(p.DecLayers, 6), ffn: orInt(p.FFNDim, 1024),
		encPoints: orInt(p.EncPoints, 4), decPoints: orInt(p.DecPoints, 4), queries: orInt(p.Queries, 300),
		masked: p.PaddingMask, probe: p.Probe, refine: p.BoxRefine, bboxPrefix: "transformer.decoder.bbox_embed.",
		twoStage: p.TwoStage, classes: orInt(p.NumClasses, 91), classPrefix: "transformer.decoder.class_embed."}
	if err := positive(op, "batch", batch, "d_model", t.d, "heads", t.heads, "enc_layers", t.encLayers,
		"dec_layers", t.decLayers, "ffn_dim", t.ffn, "enc_points", t.encPoints, "dec_points", t.decPoints,
		"queries", t.queries); err != nil {
		return nil, err
	}
	if err := checkDims(op, "batch", batch, "d_model", t.d, "ffn_dim", t.ffn, "queries", t.queries); err != nil {
		return nil, err
	}
	if t.encLayers > 64 || t.decLayers > 64 {
		return nil, errorf("%s params: at most 64 encoder and 64 decoder layers", op)
	}
	if t.d%t.heads != 0 {
		return nil, errorf("%s params: d_model %d is not a multiple of heads %d", op, t.d, t.heads)
	}
	switch {
	case t.twoStage && !t.refine:
		return nil, errorf("%s params: two_stage needs box_refine (the released two-stage model refines its boxes)", op)
	case t.twoStage && t.d != 256:
		return nil, errorf("%s params: two_stage needs d_model 256: the proposal embedding has 4·128 features, got d_model %d", op, t.d)
	case p.NumClasses != 0 && !t.twoStage:
		return nil, errorf("%s params: num_classes sizes the two-stage class head; it needs two_stage", op)
	case t.classes <= 0 || t.classes > maxDim:
		return nil, errorf("%s params: num_classes must be in 1..%d", op, maxDim)
	}
	levels, err := parseLevels(op, p.SpatialShapes, p.LevelStartIndex)
	if err != nil {
		return nil, err
	}
	t.levels = levels
	return t, nil
}

func (t *ddetrTransformer) values() int { return MSDeformCore{Levels: t.levels}.Values() }

// sampler is the MSDeformAttn of the encoder (queries = every value row)
// or of the decoder.
func (t *ddetrTransformer) sampler(decoder bool) MSDeformSample {
	c := MSDeformCore{Batch: t.batch, Queries: t.values(), Heads: t.heads, HeadDim: t.d / t.heads, Points: t.encPoints, Levels: t.levels}
	if decoder {
		c.Queries, c.Points = t.queries, t.decPoints
	}
	return MSDeformSample{MSDeformCore: c, RefDims: 2, Masked: t.masked}
}

func (t *ddetrTransformer) Op() string { return "ddetr_transformer" }

func (t *ddetrTransformer) Inputs() []bench.ArraySpec {
	s := t.values()
	in := []bench.ArraySpec{{Name: "src", Shape: bench.Shape{t.batch, s, t.d}}, {Name: "pos", Shape: bench.Shape{t.batch, s, t.d}}}
	if t.masked {
		in = append(in, bench.ArraySpec{Name: "padding_mask", Shape: bench.Shape{t.batch, s}})
	}
	return in
}

func linear(name string, out, in int) []bench.ArraySpec {
	return []bench.ArraySpec{{Name: name + ".weight", Shape: bench.Shape{out, in}}, {Name: name + ".bias", Shape: bench.Shape{out}}}
}

func norm(name string, d int) []bench.ArraySpec {
	return []bench.ArraySpec{{Name: name + ".weight", Shape: bench.Shape{d}}, {Name: name + ".bias", Shape: bench.Shape{d}}}
}

func (t *ddetrTransformer) encPrefix(i int) string {
	return fmt.Sprintf("transformer.encoder.layers.%d.", i)
}
func (t *ddetrTransformer) decPrefix(i int) string {
	return fmt.Sprintf("transformer.decoder.layers.%d.", i)
}

// Weights are named as in the Deformable DETR detector's state_dict, so a
// converted checkpoint loads unchanged.
func (t *ddetrTransformer) Weights() []bench.ArraySpec {
	d, l := t.d, len(t.levels)
	w := []bench.ArraySpec{{Name: "transformer.level_embed", Shape: bench.Shape{l, d}}}
	for i := 0; i < t.encLayers; i++ {
		p := t.encPrefix(i)
		w = append(w, msdaWeights(p+"self_attn.", d, t.heads*l*t.encPoints)...)
		w = append(w, norm(p+"norm1", d)...)
		w = append(w, linear(p+"linear1", t.ffn, d)...)
		w = append(w, linear(p+"linear2", d, t.ffn)...)
		w = append(w, norm(p+"norm2", d)...)
	}
	for i := 0; i < t.decLayers; i++ {
		p := t.decPrefix(i)
		w = append(w, msdaWeights(p+"cross_attn.", d, t.heads*l*t.decPoints)...)
		w = append(w, norm(p+"norm1", d)...)
		w = append(w, bench.ArraySpec{Name: p + "self_attn.in_proj_weight", Shape: bench.Shape{3 * d, d}},
			bench.ArraySpec{Name: p + "self_attn.in_proj_bias", Shape: bench.Shape{3 * d}})
		w = append(w, linear(p+"self_attn.out_proj", d, d)...)
		w = append(w, norm(p+"norm2", d)...)
		w = append(w, linear(p+"linear1", t.ffn, d)...)
		w = append(w, linear(p+"linear2", d, t.ffn)...)
		w = append(w, norm(p+"norm3", d)...)
	}
	if t.twoStage {
		w = append(w, linear("transformer.enc_output", d, d)...)
		w = append(w, norm("transformer.enc_output_norm", d)...)
		w = append(w, linear("transformer.pos_trans", 2*d, 2*d)...)
		w = append(w, norm("transformer.pos_trans_norm", 2*d)...)
		w = append(w, t.classWeights("transformer.decoder.class_embed.")...)
		return append(w, t.bboxWeights("transformer.decoder.bbox_embed.")...)
	}
	w = append(w, linear("transformer.reference_points", 2, d)...)
	if t.refine {
		w = append(w, t.bboxWeights("transformer.decoder.bbox_embed.")...)
	}
	return append(w, bench.ArraySpec{Name: "query_embed.weight", Shape: bench.Shape{t.queries, 2 * d}})
}

// boxHeads is the number of class and box heads: one per decoder layer, and
// one more for the two-stage encoder.
func (t *ddetrTransformer) boxHeads() int {
	if t.twoStage {
		return t.decLayers + 1
	}
	return t.decLayers
}

// classWeights lists the two-stage class heads (Linear(d, classes)) under prefix.
func (t *ddetrTransformer) classWeights(prefix string) []bench.ArraySpec {
	var w []bench.ArraySpec
	for i := 0; i < t.boxHeads(); i++ {
		w = append(w, linear(fmt.Sprintf("%s%d", prefix, i), t.classes, t.d)...)
	}
	return w
}

// bboxWeights lists one box MLP (d → d → d → 4) per decoder layer under prefix.
func (t *ddetrTransformer) bboxWeights(prefix string) []bench.ArraySpec {
	var w []bench.ArraySpec
	for i := 0; i < t.boxHeads(); i++ {
		p := fmt.Sprintf("%s%d.layers.", prefix, i)
		w = append(w, linear(p+"0", t.d, t.d)...)
		w = append(w, linear(p+"1", t.d, t.d)...)
		w = append(w, linear(p+"2", 4, t.d)...)
	}
	return w
}

// bboxMLPParams is the parameter count of one box MLP.
func (t *ddetrTransformer) bboxMLPParams() int64 {
	d := int64(t.d)
	return 2*(d*d+d) + 4*d + 4
}

func (t *ddetrTransformer) Outputs() []bench.ArraySpec {
	s := t.values()
	out := []bench.ArraySpec{
		{Name: "memory", Shape: bench.Shape{t.batch, s, t.d}},
		{Name: "hs", Shape: bench.Shape{t.batch, t.queries, t.d}},
		{Name: "reference_points", Shape: bench.Shape{t.batch, t.queries, t.initRefDims()}},
	}
	if t.refine {
		out = append(out, bench.ArraySpec{Name: "last_reference", Shape: bench.Shape{t.batch, t.queries, 4}})
	}
	if t.twoStage {
		out = append(out, t.proposalLogitsSpec())
	}
	if t.probe {
		for _, i := range probeLayers(t.encLayers) {
			out = append(out, bench.ArraySpec{Name: fmt.Sprintf("stages.enc%d", i), Shape: bench.Shape{t.batch, s, t.d}})
		}
		for _, i := range probeLayers(t.decLayers) {
			out = append(out, bench.ArraySpec{Name: fmt.Sprintf("stages.dec%d", i), Shape: bench.Shape{t.batch, t.queries, t.d}})
		}
	}
	return out
}

// probeLayers are the layers of an n-layer stack whose outputs a probed
// transformer reports as stages.enc{i} / stages.dec{i}: every layer but
// the last (whose output is memory or hs), or layer 0 of a one-layer stack.
func probeLayers(n int) []int {
	out := []int{0}
	for i := 1; i < n-1; i++ {
		out = append(out, i)
	}
	return out
}

// proposalLogitsSpec is the two-stage output proposal_logits [N, queries,
// classes]: the encoder class head's logits of the selected proposals, in
// query order. Column 0 is the score that ranked them; the checker reads it
// to tell which query rows two correct implementations may order either
// way (bench/runner/queries.go).
func (t *ddetrTransformer) proposalLogitsSpec() bench.ArraySpec {
	return bench.ArraySpec{Name: "proposal_logits", Shape: bench.Shape{t.batch, t.queries, t.classes}}
}

// initRefDims is 4 when the queries start from two-stage boxes, else 2.
func (t *ddetrTransformer) initRefDims() int {
	if t.twoStage {
		return 4
	}
	return 2
}

// MACs counts every projection, the deformable sampling, the decoder's
// self-attention (both inputs through the whole packed in_proj, as the
// graph computes it) and the feed-forward layers.
func (t *ddetrTransformer) MACs() int64 {
	b, s, q, d, f := int64(t.batch), int64(t.values()), int64(t.queries), int64(t.d), int64(t.ffn)
	enc := msdaMACs(t.sampler(false).MSDeformCore, t.d) + 2*b*s*d*f
	dec := msdaMACs(t.sampler(true).MSDeformCore, t.d) + 2*b*q*d*3*d + b*q*d*d + 2*b*q*q*d + 2*b*q*d*f
	if t.refine {
		dec += b * q * (2*d*d + 4*d)
	}
	total := int64(t.encLayers)*enc + int64(t.decLayers)*dec
	if t.twoStage {
		// enc_output, the class and box heads on every memory row, pos_trans.
		return total + b*s*d*d + b*s*d*int64(t.classes) + b*s*(2*d*d+4*d) + b*q*4*d*d
	}
	return total + b*q*d*2
}

func (t *ddetrTransformer) Bytes() int64 { return bench.BytesOf(t.Inputs(), t.Weights(), t.Outputs()) }

func (t *ddetrTransformer) Params() int64 { return bench.BytesOf(t.Weights()) / 4 }

// Graph is the encoder over every value row, then the decoder over the
// queries, both post-norm:
//
//	encoder layer: x = norm1(x + MSDeformAttn(x + pos_l, refs, value x));  x = norm2(x + FFN(x))
//	decoder layer: y = norm2(y + MHA(y + qpos, y + qpos, y));  y = norm1(y + MSDeformAttn(y + qpos, refs, memory))
//	               y = norm3(y + FFN(y))
func (t *ddetrTransformer) Graph() *bench.Graph {
	g := &bench.Graph{}
	names := transformerNames{src: "src", pos: "pos", memory: "memory", hs: "hs", refs: "reference_points"}
	if t.twoStage {
		names.proposalLogits = "proposal_logits"
	}
	if t.masked {
		names.mask = "padding_mask"
	}
	names.probe = t.probe
	if t.refine {
		names.lastRef = "last_reference"
	}
	t.steps(g, names)
	return g
}

// transformerNames are the values the transformer's sub-graph reads
// (src, pos and, unless "", mask) and writes (memory, hs, refs, with box
// refinement lastRef, with two-stage queries proposalLogits, and with
// probe the outputs stages.enc{i} and stages.dec{i} of probeLayers).
type transformerNames struct {
	src, pos, mask, memory, hs, refs, lastRef, proposalLogits string
	probe                                                     bool
}

// steps appends the transformer's sub-graph.
func (t *ddetrTransformer) steps(g *bench.Graph, nm transformerNames) {
	b, s, q, d, l := t.batch, t.values(), t.queries, t.d, len(t.levels)
	tok := bench.Shape{b, s, d}
	qs := bench.Shape{b, q, d}
	mask := nm.mask
	var vrIn []string
	if mask != "" {
		vrIn = []string{mask}
	}
	for _, name := range []string{"enc.lvl_pos", "enc.x", "enc.q", "enc.sum"} {
		g.Temp(name, tok)
	}
	g.Temp("enc.hidden", bench.Shape{b, s, t.ffn})
	g.Temp("valid_ratios", bench.Shape{b, l, 2})
	g.Temp("enc.refs", bench.Shape{b, s, l, 2})
	g.Steps = append(g.Steps,
		bench.Step{Node: LevelEmbed{Batch: b, Dim: d, Levels: t.levels}, In: []string{nm.pos, "transformer.level_embed"}, Out: []string{"enc.lvl_pos"}},
		bench.Step{Node: ValidRatios{Batch: b, Levels: t.levels, Masked: mask != ""}, In: vrIn, Out: []string{"valid_ratios"}},
		bench.Step{Node: EncoderRefPoints{Batch: b, Levels: t.levels}, In: []string{"valid_ratios"}, Out: []string{"enc.refs"}})
	x := nm.src
	enc := t.sampler(false)
	for i := 0; i < t.encLayers; i++ {
		p := t.encPrefix(i)
		out := "enc.x"
		if i == t.encLayers-1 {
			out = nm.memory
		}
		if mutation.On(EncoderPreNorm) {
			t.preNormEncoderLayer(g, enc, p, x, out, mask)
		} else {
			t.encoderLayer(g, enc, p, x, out, mask)
		}
		if nm.probe && slices.Contains(probeLayers(t.encLayers), i) {
			g.Steps = append(g.Steps, bench.Step{Node: Reshape{From: tok, To: tok}, In: []string{out}, Out: []string{fmt.Sprintf("stages.enc%d", i)}})
		}
		x = out
	}
	// The decoder.
	for _, name := range []string{"dec.qpos", "dec.y", "dec.q", "dec.sum", "dec.ctx"} {
		g.Temp(name, qs)
	}
	g.Temp("dec.qkv_a", bench.Shape{b, q, 3 * d})
	g.Temp("dec.qkv_b", bench.Shape{b, q, 3 * d})
	g.Temp("dec.qkv", bench.Shape{b, q, 3 * d})
	g.Temp("dec.hidden", bench.Shape{b, q, t.ffn})
	if t.twoStage {
		t.twoStageQueries(g, nm)
	} else {
		g.Temp("dec.ref_logits", bench.Shape{b, q, 2})
		g.Temp("dec.refs", bench.Shape{b, q, l, 2})
		g.Steps = append(g.Steps,
			bench.Step{Node: QueryEmbed{Batch: b, Queries: q, Dim: d}, In: []string{"query_embed.weight"}, Out: []string{"dec.qpos", "dec.y"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: 2, K: d, TransB: true, Bias: true},
				In: []string{"dec.qpos", "transformer.reference_points.weight", "transformer.reference_points.bias"}, Out: []string{"dec.ref_logits"}},
			bench.Step{Node: Sigmoid{Elems: b * q * 2}, In: []string{"dec.ref_logits"}, Out: []string{nm.refs}},
			bench.Step{Node: ScaleRefs{Batch: b, Queries: q, Levels: l, RefDims: 2}, In: []string{nm.refs, "valid_ratios"}, Out: []string{"dec.refs"}})
	}
	dec := t.sampler(true)
	y := "dec.y"
	refs := "dec.refs" // this layer's references on every level
	if t.twoStage {
		refs = "dec.refs4"
	}
	if t.refine {
		for _, name := range []string{"dec.box1", "dec.box2"} {
			g.Temp(name, qs)
		}
		g.Temp("dec.box3", bench.Shape{b, q, 4})
		g.Temp("dec.ref4", bench.Shape{b, q, 4})
		g.Temp("dec.refs4", bench.Shape{b, q, l, 4})
	}
	for i := 0; i < t.decLayers; i++ {
		p := t.decPrefix(i)
		out := "dec.y"
		if i == t.decLayers-1 {
			out = nm.hs
		}
		g.Steps = append(g.Steps,
			bench.Step{Node: Add{Elems: b * q * d}, In: []string{y, "dec.qpos"}, Out: []string{"dec.q"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: 3 * d, K: d, TransB: true, Bias: true},
				In: []string{"dec.q", p + "self_attn.in_proj_weight", p + "self_attn.in_proj_bias"}, Out: []string{"dec.qkv_a"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: 3 * d, K: d, TransB: true, Bias: true},
				In: []string{y, p + "self_attn.in_proj_weight", p + "self_attn.in_proj_bias"}, Out: []string{"dec.qkv_b"}},
			bench.Step{Node: MergeQKV{Batch: b, Tokens: q, Dim: d}, In: []string{"dec.qkv_a", "dec.qkv_b"}, Out: []string{"dec.qkv"}},
			bench.Step{Node: AttentionCore{Batch: b, Tokens: q, Heads: t.heads, HeadDim: d / t.heads, Scale: 1 / math.Sqrt(float64(d/t.heads))},
				In: []string{"dec.qkv"}, Out: []string{"dec.ctx"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: d, K: d, TransB: true, Bias: true, Residual: true},
				In: []string{"dec.ctx", p + "self_attn.out_proj.weight", p + "self_attn.out_proj.bias", y}, Out: []string{"dec.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5}, In: []string{"dec.sum", p + "norm2.weight", p + "norm2.bias"}, Out: []string{"dec.y"}},
			bench.Step{Node: Add{Elems: b * q * d}, In: []string{"dec.y", "dec.qpos"}, Out: []string{"dec.q"}})
		cross := dec
		if refs == "dec.refs4" {
			cross.RefDims = 4
		}
		msdaSteps(g, cross, d, p+"cross_attn.", "dec.q", refs, nm.memory, mask, "dec.sum", "dec.y")
		g.Steps = append(g.Steps,
			bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5}, In: []string{"dec.sum", p + "norm1.weight", p + "norm1.bias"}, Out: []string{"dec.y"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: t.ffn, K: d, TransB: true, Bias: true, Act: "relu"},
				In: []string{"dec.y", p + "linear1.weight", p + "linear1.bias"}, Out: []string{"dec.hidden"}},
			bench.Step{Node: Gemm{Batch: b, M: q, N: d, K: t.ffn, TransB: true, Bias: true, Residual: true},
				In: []string{"dec.hidden", p + "linear2.weight", p + "linear2.bias", "dec.y"}, Out: []string{"dec.sum"}},
			bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: d, Eps: 1e-5}, In: []string{"dec.sum", p + "norm3.weight", p + "norm3.bias"}, Out: []string{out}})
		if nm.probe && slices.Contains(probeLayers(t.decLayers), i) {
			g.Steps = append(g.Steps, bench.Step{Node: Reshape{From: qs, To: qs}, In: []string{out}, Out: []string{fmt.Sprintf("stages.dec%d", i)}})
		}
		if t.refine {
			// The layer's box MLP refines the references: 2-d points become
			// boxes after the first layer.
			bp := fmt.Sprintf("%s%d.layers.", t.bboxPrefix, i)
			prev, prevDims := nm.refs, t.initRefDims()
			if i > 0 {
				prev, prevDims = "dec.ref4", 4
			}
			next := "dec.ref4"
			if i == t.decLayers-1 {
				next = nm.lastRef
			}
			g.Steps = append(g.Steps,
				bench.Step{Node: Gemm{Batch: b, M: q, N: d, K: d, TransB: true, Bias: true, Act: "relu"},
					In: []string{out, bp + "0.weight", bp + "0.bias"}, Out: []string{"dec.box1"}},
				bench.Step{Node: Gemm{Batch: b, M: q, N: d, K: d, TransB: true, Bias: true, Act: "relu"},
					In: []string{"dec.box1", bp + "1.weight", bp + "1.bias"}, Out: []string{"dec.box2"}},
				bench.Step{Node: Gemm{Batch: b, M: q, N: 4, K: d, TransB: true, Bias: true},
					In: []string{"dec.box2", bp + "2.weight", bp + "2.bias"}, Out: []string{"dec.box3"}},
				bench.Step{Node: BoxDecode{Batch: b, Queries: q, RefDims: prevDims}, In: []string{"dec.box3", prev}, Out: []string{next}})
			if i < t.decLayers-1 {
				g.Steps = append(g.Steps, bench.Step{Node: ScaleRefs{Batch: b, Queries: q, Levels: l, RefDims: 4},
					In: []string{"dec.ref4", "valid_ratios"}, Out: []string{"dec.refs4"}})
				refs = "dec.refs4"
			}
		}
		y = out
	}
}

// encoderLayer appends one post-norm encoder layer reading x and writing
// out: x = norm1(x + MSDeformAttn(x + pos_l, refs, value x));
// out = norm2(x + FFN(x)).
func (t *ddetrTransformer) encoderLayer(g *bench.Graph, enc MSDeformSample, p, x, out, mask string) {
	b, s, d := t.batch, t.values(), t.d
	g.Steps = append(g.Steps, bench.Step{Node: Add{Elems: b * s * d}, In: []string{x, "enc.lvl_pos"}, Out: []string{"enc.q"}})
	msdaSteps(g, enc, d, p+"self_attn.", "enc.q", "enc.refs", x, mask, "enc.sum", x)
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{"enc.sum", p + "norm1.weight", p + "norm1.bias"}, Out: []string{"enc.x"}},
		bench.Step{Node: Gemm{Batch: b, M: s, N: t.ffn, K: d, TransB: true, Bias: true, Act: "relu"},
			In: []string{"enc.x", p + "linear1.weight", p + "linear1.bias"}, Out: []string{"enc.hidden"}},
		bench.Step{Node: Gemm{Batch: b, M: s, N: d, K: t.ffn, TransB: true, Bias: true, Residual: true},
			In: []string{"enc.hidden", p + "linear2.weight", p + "linear2.bias", "enc.x"}, Out: []string{"enc.sum"}},
		bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{"enc.sum", p + "norm2.weight", p + "norm2.bias"}, Out: []string{out}})
}

// EncoderPreNorm names the mutation (internal/mutation, builds with the
// "mutation" tag only) that builds the encoder's layers pre-norm.
const EncoderPreNorm = "ddetr_encoder_prenorm"

// preNormEncoderLayer is the mistaken pre-norm form of encoderLayer:
// h = norm1(x); y = x + MSDeformAttn(h + pos_l, refs, value h);
// out = y + FFN(norm2(y)).
func (t *ddetrTransformer) preNormEncoderLayer(g *bench.Graph, enc MSDeformSample, p, x, out, mask string) {
	b, s, d := t.batch, t.values(), t.d
	g.Temp("enc.h", bench.Shape{b, s, d})
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{x, p + "norm1.weight", p + "norm1.bias"}, Out: []string{"enc.h"}},
		bench.Step{Node: Add{Elems: b * s * d}, In: []string{"enc.h", "enc.lvl_pos"}, Out: []string{"enc.q"}})
	msdaSteps(g, enc, d, p+"self_attn.", "enc.q", "enc.refs", "enc.h", mask, "enc.sum", x)
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5}, In: []string{"enc.sum", p + "norm2.weight", p + "norm2.bias"}, Out: []string{"enc.h"}},
		bench.Step{Node: Gemm{Batch: b, M: s, N: t.ffn, K: d, TransB: true, Bias: true, Act: "relu"},
			In: []string{"enc.h", p + "linear1.weight", p + "linear1.bias"}, Out: []string{"enc.hidden"}},
		bench.Step{Node: Gemm{Batch: b, M: s, N: d, K: t.ffn, TransB: true, Bias: true, Residual: true},
			In: []string{"enc.hidden", p + "linear2.weight", p + "linear2.bias", "enc.sum"}, Out: []string{out}})
}

// twoStageQueries appends the two-stage query selection: proposals from
// every memory row, scored by the encoder's class head (the last one) and
// offset by its box head, the top queries' boxes as the initial 4-d
// references and their sine embedding, through pos_trans and its norm,
// as the query positions and the decoder's input; the top queries' class
// logits go to nm.proposalLogits.
func (t *ddetrTransformer) twoStageQueries(g *bench.Graph, nm transformerNames) {
	b, s, q, d, l := t.batch, t.values(), t.queries, t.d, len(t.levels)
	tok, box := bench.Shape{b, s, d}, bench.Shape{b, s, 4}
	for _, name := range []string{"ts.mem0", "ts.mem1", "ts.mem2", "ts.b1", "ts.b2"} {
		g.Temp(name, tok)
	}
	for _, name := range []string{"ts.prop", "ts.b3", "ts.coord"} {
		g.Temp(name, box)
	}
	g.Temp("ts.cls", bench.Shape{b, s, t.classes})
	g.Temp("ts.topk", bench.Shape{b, q, 4})
	g.Temp("ts.ppe", bench.Shape{b, q, 2 * d})
	g.Temp("ts.pt", bench.Shape{b, q, 2 * d})
	g.Temp("ts.ptn", bench.Shape{b, q, 2 * d})
	g.Temp("dec.refs4", bench.Shape{b, q, l, 4})
	var propIn []string
	if nm.mask != "" {
		propIn = []string{nm.mask}
	}
	last := t.boxHeads() - 1
	cp := fmt.Sprintf("%s%d.", t.classPrefix, last)
	bp := fmt.Sprintf("%s%d.layers.", t.bboxPrefix, last)
	gemm := func(m, n, k int, act string) Gemm {
		return Gemm{Batch: b, M: m, N: n, K: k, TransB: true, Bias: true, Act: act}
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: Proposals{Batch: b, Levels: t.levels, Masked: nm.mask != ""}, In: propIn, Out: []string{"ts.prop"}},
		bench.Step{Node: ZeroInvalid{Batch: b, Rows: s, Dim: d}, In: []string{nm.memory, "ts.prop"}, Out: []string{"ts.mem0"}},
		bench.Step{Node: gemm(s, d, d, ""), In: []string{"ts.mem0", "transformer.enc_output.weight", "transformer.enc_output.bias"}, Out: []string{"ts.mem1"}},
		bench.Step{Node: LayerNorm{Batch: b, Tokens: s, Dim: d, Eps: 1e-5},
			In: []string{"ts.mem1", "transformer.enc_output_norm.weight", "transformer.enc_output_norm.bias"}, Out: []string{"ts.mem2"}},
		bench.Step{Node: gemm(s, t.classes, d, ""), In: []string{"ts.mem2", cp + "weight", cp + "bias"}, Out: []string{"ts.cls"}},
		bench.Step{Node: gemm(s, d, d, "relu"), In: []string{"ts.mem2", bp + "0.weight", bp + "0.bias"}, Out: []string{"ts.b1"}},
		bench.Step{Node: gemm(s, d, d, "relu"), In: []string{"ts.b1", bp + "1.weight", bp + "1.bias"}, Out: []string{"ts.b2"}},
		bench.Step{Node: gemm(s, 4, d, ""), In: []string{"ts.b2", bp + "2.weight", bp + "2.bias"}, Out: []string{"ts.b3"}},
		bench.Step{Node: Add{Elems: b * s * 4}, In: []string{"ts.b3", "ts.prop"}, Out: []string{"ts.coord"}},
		bench.Step{Node: TopKRows{Batch: b, Rows: s, K: q, Classes: t.classes, Width: 4}, In: []string{"ts.cls", "ts.coord"}, Out: []string{"ts.topk"}},
		bench.Step{Node: TopKRows{Batch: b, Rows: s, K: q, Classes: t.classes, Width: t.classes}, In: []string{"ts.cls", "ts.cls"}, Out: []string{nm.proposalLogits}},
		bench.Step{Node: Sigmoid{Elems: b * q * 4}, In: []string{"ts.topk"}, Out: []string{nm.refs}},
		bench.Step{Node: ProposalPosEmbed{Batch: b, Queries: q}, In: []string{"ts.topk"}, Out: []string{"ts.ppe"}},
		bench.Step{Node: gemm(q, 2*d, 2*d, ""), In: []string{"ts.ppe", "transformer.pos_trans.weight", "transformer.pos_trans.bias"}, Out: []string{"ts.pt"}},
		bench.Step{Node: LayerNorm{Batch: b, Tokens: q, Dim: 2 * d, Eps: 1e-5},
			In: []string{"ts.pt", "transformer.pos_trans_norm.weight", "transformer.pos_trans_norm.bias"}, Out: []string{"ts.ptn"}},
		bench.Step{Node: SplitColumns{Batch: b, Rows: q, Dim: d}, In: []string{"ts.ptn"}, Out: []string{"dec.qpos", "dec.y"}},
		bench.Step{Node: ScaleRefs{Batch: b, Queries: q, Levels: l, RefDims: 4}, In: []string{nm.refs, "valid_ratios"}, Out: []string{"dec.refs4"}})
}

func init() { bench.RegisterOpKind(ddetrTransformerKind{}) }
