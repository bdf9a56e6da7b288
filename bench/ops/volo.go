package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// VOLOParams is the JSON form of a volo network (docs/reference-notes.md, "VOLO"):
// the released configs differ in layers, embed_dims, heads, mlp_ratio and
// stem_hidden_dim only. Fixed: patch 8 with stem stride 2, outlook
// attention (k3 p1 s2) in stage 0 only, one Downsample after it, two class
// blocks with the last stage's heads, the auxiliary head, no qkv bias.
type VOLOParams struct {
	ImgSize       Pair     `json:"img_size"`
	Layers        []int    `json:"layers"`
	EmbedDims     []int    `json:"embed_dims"`
	Heads         []int    `json:"heads"`
	MLPRatio      *float64 `json:"mlp_ratio,omitempty"`       // default 3
	StemHiddenDim *int     `json:"stem_hidden_dim,omitempty"` // default 64
	NumClasses    *int     `json:"num_classes,omitempty"`     // default 1000
	InChans       *int     `json:"in_chans,omitempty"`        // default 3
	// Probe adds the stem's output, the outlookers', the transformer
	// stages' and the class blocks' to the outputs.
	Probe *bool `json:"probe,omitempty"`
}

type voloKind struct{}

func (voloKind) Name() string { return "volo" }
func (voloKind) Summary() string {
	return "VOLO: conv stem, outlookers, downsample, transformer stages, class blocks, head + aux head"
}

// volo is the parsed network.
type volo struct {
	batch, classes   int
	img              Pair
	stem             voloStem
	outlookers       []outlooker // stage 0 (one shared shape)
	stages           [3]int      // transformer blocks in network.2, .3, .4
	blocks           [3]*blockSpec
	post             classBlock
	h8, w8, h16, w16 int
	c0, c1           int
	probe            bool
}

func (voloKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p VOLOParams
	if err := decodeStrict("volo", raw, &p); err != nil {
		return nil, err
	}
	if len(p.Layers) != 4 || len(p.EmbedDims) != 4 || len(p.Heads) != 4 {
		return nil, fmt.Errorf("volo params: layers, embed_dims and heads need 4 entries each (got %d, %d, %d)",
			len(p.Layers), len(p.EmbedDims), len(p.Heads))
	}
	for i := 0; i < 4; i++ {
		if err := positive("volo", fmt.Sprintf("layers[%d]", i), p.Layers[i], fmt.Sprintf("embed_dims[%d]", i),
			p.EmbedDims[i], fmt.Sprintf("heads[%d]", i), p.Heads[i]); err != nil {
			return nil, err
		}
		if p.Layers[i] > 1024 {
			return nil, fmt.Errorf("volo params: layers[%d] = %d is more than 1024", i, p.Layers[i])
		}
	}
	if p.EmbedDims[1] != p.EmbedDims[2] || p.EmbedDims[2] != p.EmbedDims[3] {
		return nil, fmt.Errorf("volo params: embed_dims[1:] must be equal (only stage 0 is followed by a downsample), got %v", p.EmbedDims)
	}
	classes := intOr(p.NumClasses, 1000)
	if err := positive("volo", "num_classes", classes); err != nil {
		return nil, err
	}
	if err := checkDims("volo", "num_classes", classes); err != nil {
		return nil, err
	}
	stem, err := parseVOLOStem("volo", batch, VOLOStemParams{ImgSize: p.ImgSize, InChans: p.InChans,
		HiddenDim: p.StemHiddenDim, EmbedDim: p.EmbedDims[0]})
	if err != nil {
		return nil, err
	}
	v := &volo{batch: batch, classes: classes, img: p.ImgSize, stem: stem, c0: p.EmbedDims[0], c1: p.EmbedDims[1],
		probe: orBool(p.Probe, false)}
	v.h8, v.w8 = stem.grid()
	v.h16, v.w16 = v.h8/2, v.w8/2
	// The original sizes pos_embed from img_size // 8 // 2; it must match
	// the grid the downsample leaves.
	if ph, pw := p.ImgSize[0]/8/2, p.ImgSize[1]/8/2; ph != v.h16 || pw != v.w16 || ph < 1 || pw < 1 {
		return nil, fmt.Errorf("volo params: img_size [%d, %d] gives a %d×%d grid after the downsample but a %d×%d position embedding",
			p.ImgSize[0], p.ImgSize[1], v.h16, v.w16, ph, pw)
	}
	ratio := floatOr(p.MLPRatio, 3)
	o, err := parseOutlooker("volo", batch, OutlookerParams{OutlookParams: OutlookParams{Dim: v.c0, Heads: p.Heads[0],
		ImgSize: Pair{v.h8, v.w8}}, MLPRatio: &ratio})
	if err != nil {
		return nil, err
	}
	v.outlookers = make([]outlooker, p.Layers[0])
	for i := range v.outlookers {
		v.outlookers[i] = o
	}
	f, eps := false, 1e-5
	for i := 0; i < 3; i++ {
		blk, err := blockKind{}.Parse(mustJSON(BlockParams{
			MHSAParams: MHSAParams{Tokens: v.h16 * v.w16, Dim: v.c1, Heads: p.Heads[i+1], QKVBias: &f},
			MLPRatio:   &ratio, Eps: &eps}), batch)
		if err != nil {
			return nil, fmt.Errorf("volo: %v", err)
		}
		v.blocks[i], v.stages[i] = blk.(*blockSpec), p.Layers[i+1]
	}
	v.post, err = parseClassBlock("volo", batch, ClassBlockParams{ClassAttnParams: ClassAttnParams{
		Tokens: 1 + v.h16*v.w16, Dim: v.c1, Heads: p.Heads[3]}, MLPRatio: &ratio})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (v *volo) Op() string  { return "volo" }
func (v *volo) tokens() int { return v.h16 * v.w16 }

func (v *volo) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{v.batch, v.stem.in, v.img[0], v.img[1]}}}
}

func (v *volo) Weights() []bench.ArraySpec {
	w := v.stem.weights("patch_embed.")
	w = append(w, bench.ArraySpec{Name: "pos_embed", Shape: bench.Shape{1, v.h16, v.w16, v.c1}})
	for i, o := range v.outlookers {
		w = append(w, o.weights(fmt.Sprintf("network.0.%d.", i))...)
	}
	w = append(w, bench.ArraySpec{Name: "network.1.proj.weight", Shape: bench.Shape{v.c1, v.c0, 2, 2}},
		bench.ArraySpec{Name: "network.1.proj.bias", Shape: bench.Shape{v.c1}})
	for s := 0; s < 3; s++ {
		for i := 0; i < v.stages[s]; i++ {
			w = append(w, v.blocks[s].weightsAt(fmt.Sprintf("network.%d.%d.", s+2, i))...)
		}
	}
	w = append(w, bench.ArraySpec{Name: "cls_token", Shape: bench.Shape{1, 1, v.c1}})
	for i := 0; i < 2; i++ {
		w = append(w, v.post.weights(fmt.Sprintf("post_network.%d.", i))...)
	}
	c, k := v.c1, v.classes
	return append(w, bench.ArraySpec{Name: "norm.weight", Shape: bench.Shape{c}}, bench.ArraySpec{Name: "norm.bias", Shape: bench.Shape{c}},
		bench.ArraySpec{Name: "head.weight", Shape: bench.Shape{k, c}}, bench.ArraySpec{Name: "head.bias", Shape: bench.Shape{k}},
		bench.ArraySpec{Name: "aux_head.weight", Shape: bench.Shape{k, c}}, bench.ArraySpec{Name: "aux_head.bias", Shape: bench.Shape{k}})
}

func (v *volo) Outputs() []bench.ArraySpec {
	out := []bench.ArraySpec{{Name: "logits", Shape: bench.Shape{v.batch, v.classes}}}
	if v.probe {
		out = append(out,
			bench.ArraySpec{Name: "stages.stem", Shape: bench.Shape{v.batch, v.h8, v.w8, v.c0}},
			bench.ArraySpec{Name: "stages.outlookers", Shape: bench.Shape{v.batch, v.h8, v.w8, v.c0}},
			bench.ArraySpec{Name: "stages.transformers", Shape: bench.Shape{v.batch, v.h16, v.w16, v.c1}},
			bench.ArraySpec{Name: "stages.post", Shape: bench.Shape{v.batch, 1 + v.tokens(), v.c1}})
	}
	return out
}

// MACs: stem convs and projection, outlookers, the downsample, the
// transformer blocks, the class blocks, the head on the class token and
// the auxiliary head on every patch token (docs/reference-notes.md, "VOLO").
func (v *volo) MACs() int64 {
	b, n, c := int64(v.batch), int64(v.tokens()), int64(v.c1)
	m := v.stem.macs() + b*n*c*int64(v.c0)*4 + 2*v.post.macs() + b*c*int64(v.classes)*(1+n)
	for _, o := range v.outlookers {
		m += o.macs()
	}
	for s := 0; s < 3; s++ {
		m += int64(v.stages[s]) * v.blocks[s].MACs()
	}
	return m
}

func (v *volo) Bytes() int64 { return bench.BytesOf(v.Inputs(), v.Weights(), v.Outputs()) }

// Params counts the learned tensors (BatchNorm running statistics are
// buffers): 26,632,040 for volo_d1 at 224 (docs/reference-notes.md, "VOLO").
func (v *volo) Params() int64 {
	w := v.Weights()
	return bench.BytesOf(w)/4 - bufferParams(w)
}

// Graph: stem → outlookers at H/8 → downsample (a k2 s2 conv as patch rows
// and a GEMM) → + pos_embed → transformer blocks at H/16 → class token →
// two class blocks → LayerNorm → head(cls) + 0.5·max(aux_head(tokens)).
// Probed stages are copied out with Reshape (channels-last outputs).
func (v *volo) Graph() *bench.Graph {
	b, n, c0, c1, k := v.batch, v.tokens(), v.c0, v.c1, v.classes
	g := &bench.Graph{}
	hw8 := bench.Shape{b, v.h8 * v.w8, c0}
	tok := bench.Shape{b, n, c1}
	probe := func(from, name string, shape bench.Shape) {
		if !v.probe {
			return
		}
		for _, o := range v.Outputs() {
			if o.Name == name {
				g.Steps = append(g.Steps, bench.Step{Node: Reshape{From: shape, To: o.Shape}, In: []string{from}, Out: []string{name}})
			}
		}
	}
	g.Temp("volo.a", hw8)
	g.Temp("volo.b", hw8)
	v.stem.steps(g, "patch_embed.", "x", "volo.a")
	probe("volo.a", "stages.stem", hw8)
	cur := "volo.a"
	for i, o := range v.outlookers {
		next := map[string]string{"volo.a": "volo.b", "volo.b": "volo.a"}[cur]
		o.steps(g, fmt.Sprintf("network.0.%d.", i), cur, next)
		cur = next
	}
	probe(cur, "stages.outlookers", hw8)
	g.Temp("volo.patches", bench.Shape{b, v.h16, v.w16, 4 * c0})
	g.Temp("volo.down", tok)
	g.Temp("volo.t", tok)
	g.Temp("volo.u", tok)
	g.Steps = append(g.Steps,
		bench.Step{Node: PatchRowsNHWC{Batch: b, Height: v.h8, Width: v.w8, Chans: c0, P: 2}, In: []string{cur},
			Out: []string{"volo.patches"}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: c1, K: 4 * c0, TransB: true, Bias: true},
			In: []string{"volo.patches", "network.1.proj.weight", "network.1.proj.bias"}, Out: []string{"volo.down"}},
		bench.Step{Node: AddBroadcast{Batch: b, Elems: n * c1}, In: []string{"volo.down", "pos_embed"}, Out: []string{"volo.t"}})
	cur = "volo.t"
	for s := 0; s < 3; s++ {
		for i := 0; i < v.stages[s]; i++ {
			next := map[string]string{"volo.t": "volo.u", "volo.u": "volo.t"}[cur]
			v.blocks[s].steps(g, fmt.Sprintf("network.%d.%d.", s+2, i), cur, next)
			cur = next
		}
	}
	probe(cur, "stages.transformers", tok)
	all := bench.Shape{b, 1 + n, c1}
	g.Temp("volo.cls.a", all)
	g.Temp("volo.cls.b", all)
	g.Steps = append(g.Steps, bench.Step{Node: PrependToken{Batch: b, Tokens: n, Dim: c1}, In: []string{cur, "cls_token"},
		Out: []string{"volo.cls.a"}})
	v.post.steps(g, "post_network.0.", "volo.cls.a", "volo.cls.b")
	v.post.steps(g, "post_network.1.", "volo.cls.b", "volo.cls.a")
	probe("volo.cls.a", "stages.post", all)
	g.Temp("volo.norm", all)
	g.Temp("volo.head.token", bench.Shape{b, 1, c1})
	g.Temp("volo.head", bench.Shape{b, 1, k})
	g.Temp("volo.aux", bench.Shape{b, 1 + n, k})
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: 1 + n, Dim: c1, Eps: 1e-5}, In: []string{"volo.cls.a", "norm.weight", "norm.bias"},
			Out: []string{"volo.norm"}},
		bench.Step{Node: TakeToken{Batch: b, Tokens: 1 + n, Dim: c1}, In: []string{"volo.norm"}, Out: []string{"volo.head.token"}},
		bench.Step{Node: Gemm{Batch: b, M: 1, N: k, K: c1, TransB: true, Bias: true},
			In: []string{"volo.head.token", "head.weight", "head.bias"}, Out: []string{"volo.head"}},
		bench.Step{Node: Gemm{Batch: b, M: 1 + n, N: k, K: c1, TransB: true, Bias: true},
			In: []string{"volo.norm", "aux_head.weight", "aux_head.bias"}, Out: []string{"volo.aux"}},
		bench.Step{Node: AuxMerge{Batch: b, Tokens: 1 + n, Classes: k}, In: []string{"volo.head", "volo.aux"},
			Out: []string{"logits"}})
	return g
}

func init() { bench.RegisterOpKind(voloKind{}) }
