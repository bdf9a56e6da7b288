package ops

import (
	"encoding/json"
	"math"

	"vitbench/bench"
)

// OutlookParams is the JSON form of an outlook_attention case (VOLO's
// OutlookAttention, docs/reference-notes.md, "VOLO") on a channels-last image.
type OutlookParams struct {
	Dim        int  `json:"dim"`
	Heads      int  `json:"heads"`
	ImgSize    Pair `json:"img_size"`
	KernelSize *int `json:"kernel_size,omitempty"` // default 3
	Padding    *int `json:"padding,omitempty"`     // default 1
	Stride     *int `json:"stride,omitempty"`      // default 2
}

// outlook is the shape of one OutlookAttention: v and the attention
// Linear, the fused unfold–softmax–fold core, and the output projection.
type outlook struct {
	batch, h, w, dim, heads int
	k, pad, stride          int
	scale                   float64
}

func parseOutlook(op string, batch int, p OutlookParams) (outlook, error) {
	o := outlook{batch: batch, h: p.ImgSize[0], w: p.ImgSize[1], dim: p.Dim, heads: p.Heads,
		k: intOr(p.KernelSize, 3), pad: intOr(p.Padding, 1), stride: intOr(p.Stride, 2)}
	if err := positive(op, "batch", batch, "dim", o.dim, "heads", o.heads, "img_size", p.ImgSize,
		"kernel_size", o.k, "stride", o.stride); err != nil {
		return o, err
	}
	if err := checkDims(op, "batch", batch, "dim", o.dim, "heads", o.heads, "img_size", p.ImgSize); err != nil {
		return o, err
	}
	if o.k > 15 || o.stride > 15 || o.pad < 0 || o.pad >= o.k {
		return o, errorf("%s params: kernel_size and stride at most 15, padding in [0, kernel_size)", op)
	}
	if o.dim%o.heads != 0 {
		return o, errorf("%s params: dim %d is not a multiple of heads %d", op, o.dim, o.heads)
	}
	// VOLO reshapes the unfolded windows to the ⌈H/S⌉×⌈W/S⌉ grid of the
	// pooled image; both counts must agree (they do for k3 p1 s2).
	for i, size := range p.ImgSize {
		unfold := (size+2*o.pad-o.k)/o.stride + 1
		if size+2*o.pad < o.k || unfold != (size+o.stride-1)/o.stride {
			axis := [2]string{"height", "width"}[i]
			return o, errorf("%s params: the %s %d gives %d windows (kernel %d, padding %d, stride %d) but a pooled size of %d; VOLO needs them equal",
				op, axis, size, unfold, o.k, o.pad, o.stride, (size+o.stride-1)/o.stride)
		}
	}
	o.scale = 1 / math.Sqrt(float64(o.dim/o.heads))
	return o, nil
}

func (o outlook) shape() bench.Shape { return bench.Shape{o.batch, o.h, o.w, o.dim} }

// attnOut is the attention Linear's width, Heads·K⁴.
func (o outlook) attnOut() int { return o.heads * o.k * o.k * o.k * o.k }

func (o outlook) core() OutlookCore {
	return OutlookCore{Batch: o.batch, Height: o.h, Width: o.w, Dim: o.dim, Heads: o.heads, K: o.k, Pad: o.pad,
		Stride: o.stride, Scale: o.scale}
}

func (o outlook) pool() AvgPoolNHWC {
	return AvgPoolNHWC{Batch: o.batch, Height: o.h, Width: o.w, Chans: o.dim, K: o.stride}
}

func (o outlook) weights(prefix string) []bench.ArraySpec {
	c := o.dim
	return []bench.ArraySpec{
		{Name: prefix + "v.weight", Shape: bench.Shape{c, c}},
		{Name: prefix + "attn.weight", Shape: bench.Shape{o.attnOut(), c}},
		{Name: prefix + "attn.bias", Shape: bench.Shape{o.attnOut()}},
		{Name: prefix + "proj.weight", Shape: bench.Shape{c, c}},
		{Name: prefix + "proj.bias", Shape: bench.Shape{c}},
	}
}

func (o outlook) macs() int64 {
	px, c := int64(o.batch)*int64(o.h*o.w), int64(o.dim)
	pool := o.pool()
	windows := int64(o.batch) * int64(pool.OutH()*pool.OutW())
	return 2*px*c*c + windows*c*int64(o.attnOut()) + o.core().MACs()
}

// steps appends the attention reading in and writing out (plus residual
// when not ""), weights under prefix; its intermediates are shared by
// every outlook attention of a graph.
func (o outlook) steps(g *bench.Graph, prefix, in, out, residual string) {
	b, hw, c := o.batch, o.h*o.w, o.dim
	pool := o.pool()
	windows := pool.OutH() * pool.OutW()
	g.Temp("outlook.v", o.shape())
	g.Temp("outlook.pooled", bench.Shape{b, pool.OutH(), pool.OutW(), c})
	g.Temp("outlook.logits", bench.Shape{b, pool.OutH(), pool.OutW(), o.attnOut()})
	g.Temp("outlook.ctx", o.shape())
	projIn := []string{"outlook.ctx", prefix + "proj.weight", prefix + "proj.bias"}
	if residual != "" {
		projIn = append(projIn, residual)
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: Gemm{Batch: b, M: hw, N: c, K: c, TransB: true}, In: []string{in, prefix + "v.weight"},
			Out: []string{"outlook.v"}},
		bench.Step{Node: pool, In: []string{in}, Out: []string{"outlook.pooled"}},
		bench.Step{Node: Gemm{Batch: b, M: windows, N: o.attnOut(), K: c, TransB: true, Bias: true},
			In: []string{"outlook.pooled", prefix + "attn.weight", prefix + "attn.bias"}, Out: []string{"outlook.logits"}},
		bench.Step{Node: o.core(), In: []string{"outlook.v", "outlook.logits"}, Out: []string{"outlook.ctx"}},
		bench.Step{Node: Gemm{Batch: b, M: hw, N: c, K: c, TransB: true, Bias: true, Residual: residual != ""},
			In: projIn, Out: []string{out}})
}

type outlookKind struct{}

func (outlookKind) Name() string { return "outlook_attention" }
func (outlookKind) Summary() string {
	return "VOLO OutlookAttention (channels-last): v, pooled attention Linear, fused unfold·softmax·fold, proj"
}

func (outlookKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p OutlookParams
	if err := decodeStrict("outlook_attention", raw, &p); err != nil {
		return nil, err
	}
	o, err := parseOutlook("outlook_attention", batch, p)
	if err != nil {
		return nil, err
	}
	return &outlookSpec{o: o}, nil
}

type outlookSpec struct{ o outlook }

func (s *outlookSpec) Op() string { return "outlook_attention" }
func (s *outlookSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: s.o.shape()}}
}
func (s *outlookSpec) Weights() []bench.ArraySpec { return s.o.weights("") }
func (s *outlookSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: s.o.shape()}}
}
func (s *outlookSpec) MACs() int64   { return s.o.macs() }
func (s *outlookSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *outlookSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *outlookSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.o.steps(g, "", "x", "out", "")
	return g
}

// OutlookerParams is the JSON form of an outlooker case (VOLO's Outlooker
// block, docs/reference-notes.md, "VOLO").
type OutlookerParams struct {
	OutlookParams
	MLPRatio *float64 `json:"mlp_ratio,omitempty"` // default 3
	Eps      *float64 `json:"eps,omitempty"`       // default 1e-5
}

// outlooker is x + attn(norm1(x)), then + mlp(norm2(·)).
type outlooker struct {
	o      outlook
	hidden int
	eps    float64
}

func parseOutlooker(op string, batch int, p OutlookerParams) (outlooker, error) {
	o, err := parseOutlook(op, batch, p.OutlookParams)
	if err != nil {
		return outlooker{}, err
	}
	hidden, eps := int(float64(o.dim)*floatOr(p.MLPRatio, 3)), floatOr(p.Eps, 1e-5)
	if !(eps > 0) || hidden <= 0 || hidden > maxDim {
		return outlooker{}, errorf("%s params: eps must be positive and mlp_ratio give 1..%d hidden units", op, maxDim)
	}
	return outlooker{o: o, hidden: hidden, eps: eps}, nil
}

func (s outlooker) weights(prefix string) []bench.ArraySpec {
	c, h := s.o.dim, s.hidden
	w := []bench.ArraySpec{{Name: prefix + "norm1.weight", Shape: bench.Shape{c}}, {Name: prefix + "norm1.bias", Shape: bench.Shape{c}}}
	w = append(w, s.o.weights(prefix+"attn.")...)
	return append(w, mlpWeights(prefix, c, h)...)
}

func (s outlooker) macs() int64 {
	return s.o.macs() + 2*int64(s.o.batch)*int64(s.o.h*s.o.w)*int64(s.o.dim)*int64(s.hidden)
}

// steps appends one Outlooker reading in and writing out.
func (s outlooker) steps(g *bench.Graph, prefix, in, out string) {
	o := s.o
	g.Temp("outlooker.h1", o.shape())
	g.Temp("outlooker.y", o.shape())
	g.Steps = append(g.Steps, bench.Step{Node: LayerNorm{Batch: o.batch, Tokens: o.h * o.w, Dim: o.dim, Eps: s.eps},
		In: []string{in, prefix + "norm1.weight", prefix + "norm1.bias"}, Out: []string{"outlooker.h1"}})
	o.steps(g, prefix+"attn.", "outlooker.h1", "outlooker.y", in)
	mlpSteps(g, prefix, "outlooker.", "outlooker.y", out, o.batch, o.h*o.w, o.dim, s.hidden, s.eps)
}

type outlookerKind struct{}

func (outlookerKind) Name() string { return "outlooker" }
func (outlookerKind) Summary() string {
	return "VOLO Outlooker block: x + outlook_attention(norm1(x)), + mlp(norm2(·)), channels-last"
}

func (outlookerKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p OutlookerParams
	if err := decodeStrict("outlooker", raw, &p); err != nil {
		return nil, err
	}
	s, err := parseOutlooker("outlooker", batch, p)
	if err != nil {
		return nil, err
	}
	return &outlookerSpec{s: s}, nil
}

type outlookerSpec struct{ s outlooker }

func (s *outlookerSpec) Op() string { return "outlooker" }
func (s *outlookerSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: s.s.o.shape()}}
}
func (s *outlookerSpec) Weights() []bench.ArraySpec { return s.s.weights("") }
func (s *outlookerSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: s.s.o.shape()}}
}
func (s *outlookerSpec) MACs() int64   { return s.s.macs() }
func (s *outlookerSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *outlookerSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *outlookerSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.s.steps(g, "", "x", "out")
	return g
}

func init() {
	bench.RegisterOpKind(outlookKind{})
	bench.RegisterOpKind(outlookerKind{})
}
