package ops

import (
	"encoding/json"
	"fmt"
	"math"

	"vitbench/bench"
)

// ViTParams is the JSON form of a vit network (timm VisionTransformer and
// DeiT, docs/reference-notes.md, "ViT and DeiT").
type ViTParams struct {
	ImgSize    Pair     `json:"img_size"`
	PatchSize  int      `json:"patch_size"`
	InChans    *int     `json:"in_chans,omitempty"` // default 3
	EmbedDim   int      `json:"embed_dim"`
	Depth      int      `json:"depth"`
	Heads      int      `json:"heads"`
	MLPRatio   *float64 `json:"mlp_ratio,omitempty"` // default 4
	QKVBias    *bool    `json:"qkv_bias,omitempty"`  // default true
	NumClasses *int     `json:"num_classes,omitempty"`
	Distilled  *bool    `json:"distilled,omitempty"` // DeiT's distillation token and head
	Eps        *float64 `json:"eps,omitempty"`       // LayerNorm eps, default 1e-6
	// Probe adds the intermediate tokens after the embedding, after the
	// first block and after the last block (before the final norm) to the
	// outputs, so that a mismatch can be bisected.
	Probe *bool `json:"probe,omitempty"`
}

type vitKind struct{}

func (vitKind) Name() string { return "vit" }
func (vitKind) Summary() string {
	return "timm VisionTransformer / DeiT (distilled too): patch embed, cls token, pre-norm blocks, head"
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func floatOr(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

func (vitKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p ViTParams
	if err := decodeStrict("vit", raw, &p); err != nil {
		return nil, err
	}
	in, classes := intOr(p.InChans, 3), intOr(p.NumClasses, 1000)
	if err := positive("vit", "batch", batch, "img_size", p.ImgSize, "patch_size", p.PatchSize, "in_chans", in,
		"embed_dim", p.EmbedDim, "depth", p.Depth, "heads", p.Heads, "num_classes", classes); err != nil {
		return nil, err
	}
	if err := checkDims("vit", "batch", batch, "img_size", p.ImgSize, "patch_size", p.PatchSize, "in_chans", in,
		"embed_dim", p.EmbedDim, "depth", p.Depth, "heads", p.Heads, "num_classes", classes); err != nil {
		return nil, err
	}
	if p.Depth > 1024 || p.ImgSize[0] < p.PatchSize || p.ImgSize[1] < p.PatchSize {
		return nil, fmt.Errorf("vit params: depth at most 1024 and the image at least one patch")
	}
	v := &vitSpec{op: "vit", batch: batch, img: p.ImgSize, patch: p.PatchSize, in: in, classes: classes,
		depth: p.Depth, distilled: orBool(p.Distilled, false), probe: orBool(p.Probe, false)}
	v.prefix = 1
	if v.distilled {
		v.prefix = 2
	}
	v.patches = (v.img[0] / v.patch) * (v.img[1] / v.patch)
	blk, err := blockKind{}.Parse(mustJSON(BlockParams{
		MHSAParams: MHSAParams{Tokens: v.patches + v.prefix, Dim: p.EmbedDim, Heads: p.Heads, QKVBias: p.QKVBias},
		MLPRatio:   p.MLPRatio, Eps: p.Eps}), batch)
	if err != nil {
		return nil, fmt.Errorf("vit: %v", err)
	}
	v.block = blk.(*blockSpec)
	v.eps = floatOr(p.Eps, 1e-6)
	return v, nil
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

type vitSpec struct {
	op                               string
	t2t                              *t2tModule // T2T-ViT: the tokens-to-token stage replaces the patch embedding
	batch, in, patch, classes, depth int
	img                              Pair
	distilled, probe                 bool
	prefix, patches                  int
	block                            *blockSpec
	eps                              float64
}

func (v *vitSpec) Op() string  { return v.op }
func (v *vitSpec) dim() int    { return v.block.a.dim }
func (v *vitSpec) tokens() int { return v.patches + v.prefix }

func (v *vitSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{v.batch, v.in, v.img[0], v.img[1]}}}
}

func (v *vitSpec) Weights() []bench.ArraySpec {
	e := v.dim()
	w := []bench.ArraySpec{
		{Name: "patch_embed.proj.weight", Shape: bench.Shape{e, v.in, v.patch, v.patch}},
		{Name: "patch_embed.proj.bias", Shape: bench.Shape{e}},
	}
	if v.t2t != nil {
		w = v.t2t.weights("tokens_to_token.")
	}
	w = append(w, bench.ArraySpec{Name: "cls_token", Shape: bench.Shape{1, 1, e}})
	if v.distilled {
		w = append(w, bench.ArraySpec{Name: "dist_token", Shape: bench.Shape{1, 1, e}})
	}
	w = append(w, bench.ArraySpec{Name: "pos_embed", Shape: bench.Shape{1, v.tokens(), e}})
	for i := 0; i < v.depth; i++ {
		w = append(w, v.block.weightsAt(fmt.Sprintf("blocks.%d.", i))...)
	}
	w = append(w, bench.ArraySpec{Name: "norm.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: "norm.bias", Shape: bench.Shape{e}},
		bench.ArraySpec{Name: "head.weight", Shape: bench.Shape{v.classes, e}}, bench.ArraySpec{Name: "head.bias", Shape: bench.Shape{v.classes}})
	if v.distilled {
		w = append(w, bench.ArraySpec{Name: "head_dist.weight", Shape: bench.Shape{v.classes, e}},
			bench.ArraySpec{Name: "head_dist.bias", Shape: bench.Shape{v.classes}})
	}
	return w
}

func (v *vitSpec) probes() []string {
	if !v.probe {
		return nil
	}
	return []string{"stages.embed", "stages.block0", fmt.Sprintf("stages.block%d", v.depth-1)}
}

func (v *vitSpec) Outputs() []bench.ArraySpec {
	out := []bench.ArraySpec{{Name: "logits", Shape: bench.Shape{v.batch, v.classes}}}
	for _, name := range v.probes() {
		if name == "stages.block0" && v.depth == 1 {
			continue // the same value as the last block's
		}
		out = append(out, bench.ArraySpec{Name: name, Shape: bench.Shape{v.batch, v.tokens(), v.dim()}})
	}
	return out
}

func (v *vitSpec) MACs() int64 {
	b, e := int64(v.batch), int64(v.dim())
	heads := int64(1)
	if v.distilled {
		heads = 2
	}
	embed := b * int64(v.patches) * e * int64(v.in*v.patch*v.patch)
	if v.t2t != nil {
		embed = v.t2t.macs()
	}
	return embed + int64(v.depth)*v.block.MACs() + heads*b*e*int64(v.classes)
}

func (v *vitSpec) Bytes() int64  { return bench.BytesOf(v.Inputs(), v.Weights(), v.Outputs()) }
func (v *vitSpec) Params() int64 { return bench.BytesOf(v.Weights()) / 4 }

// Graph: patch embed → class (and distillation) token and position
// embedding → depth pre-norm blocks → final LayerNorm → head on the class
// token (DeiT distilled: the mean of head(cls) and head_dist(dist)).
func (v *vitSpec) Graph() *bench.Graph {
	b, n, t, e, c := v.batch, v.patches, v.tokens(), v.dim(), v.classes
	tok := bench.Shape{b, t, e}
	g := &bench.Graph{}
	g.Temp("patches", bench.Shape{b, n, e})
	if v.t2t != nil {
		v.t2t.steps(g, "tokens_to_token.", "x", "patches")
	} else {
		g.Steps = append(g.Steps, bench.Step{
			Node: PatchEmbed{Batch: b, InChans: v.in, Height: v.img[0], Width: v.img[1], EmbedDim: e,
				PatchH: v.patch, PatchW: v.patch, Bias: true},
			In: []string{"x", "patch_embed.proj.weight", "patch_embed.proj.bias"}, Out: []string{"patches"}})
	}
	// The residual stream alternates between two buffers; probed stages
	// are written to their outputs instead.
	cur := "tokens.a"
	if v.probe {
		cur = "stages.embed"
	} else {
		g.Temp(cur, tok)
	}
	prefixIn := []string{"patches", "cls_token"}
	if v.distilled {
		prefixIn = append(prefixIn, "dist_token")
	}
	g.Steps = append(g.Steps, bench.Step{Node: TokensPrefix{Batch: b, Patches: n, Dim: e, Prefix: v.prefix},
		In: append(prefixIn, "pos_embed"), Out: []string{cur}})
	for i := 0; i < v.depth; i++ {
		next := "tokens.a"
		if cur == "tokens.a" {
			next = "tokens.b"
		}
		if v.probe && (i == 0 || i == v.depth-1) {
			next = fmt.Sprintf("stages.block%d", i)
		} else {
			g.Temp(next, tok)
		}
		v.block.steps(g, fmt.Sprintf("blocks.%d.", i), cur, next)
		cur = next
	}
	g.Temp("tokens.norm", tok)
	g.Steps = append(g.Steps, bench.Step{Node: LayerNorm{Batch: b, Tokens: t, Dim: e, Eps: v.eps},
		In: []string{cur, "norm.weight", "norm.bias"}, Out: []string{"tokens.norm"}})
	head := func(index int, prefix, out string) {
		g.Temp(prefix+".token", bench.Shape{b, 1, e})
		g.Temp(out, bench.Shape{b, 1, c})
		g.Steps = append(g.Steps,
			bench.Step{Node: TakeToken{Batch: b, Tokens: t, Dim: e, Index: index}, In: []string{"tokens.norm"}, Out: []string{prefix + ".token"}},
			bench.Step{Node: Gemm{Batch: b, M: 1, N: c, K: e, TransB: true, Bias: true},
				In: []string{prefix + ".token", prefix + ".weight", prefix + ".bias"}, Out: []string{out}})
	}
	head(0, "head", "logits.cls")
	final := "logits.cls"
	if v.distilled {
		head(1, "head_dist", "logits.dist")
		g.Temp("logits.mean", bench.Shape{b, 1, c})
		g.Steps = append(g.Steps, bench.Step{Node: Average{Shape: bench.Shape{b, 1, c}},
			In: []string{"logits.cls", "logits.dist"}, Out: []string{"logits.mean"}})
		final = "logits.mean"
	}
	g.Steps = append(g.Steps, bench.Step{Node: Reshape{From: bench.Shape{b, 1, c}, To: bench.Shape{b, c}},
		In: []string{final}, Out: []string{"logits"}})
	return g
}

// T2TViTParams is the JSON form of a t2t_vit network (docs/reference-notes.md,
// "T2T-ViT backbone and counts"):
// the T2T stage, then a ViT backbone with qkv_bias false, LayerNorm eps
// 1e-5 and scale head_dim^-0.5 (0.125 for every released config) unless
// scale is given. The fixed sinusoid position table is a parameter in the
// state dict, so it is a weight here.
type T2TViTParams struct {
	T2TModuleParams
	Depth      int      `json:"depth"`
	Heads      int      `json:"heads"`
	MLPRatio   *float64 `json:"mlp_ratio,omitempty"`
	NumClasses *int     `json:"num_classes,omitempty"`
	Probe      *bool    `json:"probe,omitempty"`
	// Scale is the blocks' attention scale, default head_dim^-0.5; the
	// pretrained T2T-ViT checkpoints were trained with embed_dim^-0.5
	// (the original's qk_scale).
	Scale *float64 `json:"scale,omitempty"`
}

type t2tViTKind struct{}

func (t2tViTKind) Name() string { return "t2t_vit" }
func (t2tViTKind) Summary() string {
	return "T2T-ViT: tokens-to-token stage (performer or transformer), cls token, blocks, head"
}

func (t2tViTKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p T2TViTParams
	if err := decodeStrict("t2t_vit", raw, &p); err != nil {
		return nil, err
	}
	m, err := parseT2TModule("t2t_vit", p.T2TModuleParams, batch)
	if err != nil {
		return nil, err
	}
	f, eps := false, 1e-5
	v, err := vitKind{}.Parse(mustJSON(ViTParams{ImgSize: Pair{m.patches(), 1}, PatchSize: 1, InChans: &m.in,
		EmbedDim: p.EmbedDim, Depth: p.Depth, Heads: p.Heads, MLPRatio: p.MLPRatio, QKVBias: &f,
		NumClasses: p.NumClasses, Eps: &eps, Probe: p.Probe}), batch)
	if err != nil {
		return nil, fmt.Errorf("t2t_vit: %v", err)
	}
	vs := v.(*vitSpec)
	vs.op, vs.t2t, vs.img = "t2t_vit", m, p.ImgSize
	if p.Scale != nil {
		if !(*p.Scale > 0) || math.IsInf(*p.Scale, 0) {
			return nil, fmt.Errorf("t2t_vit params: scale must be a positive number")
		}
		vs.block.a.scale = *p.Scale
	}
	return vs, nil
}

func init() {
	bench.RegisterOpKind(vitKind{})
	bench.RegisterOpKind(t2tViTKind{})
}
