package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// BlockParams is the JSON form of a block case (timm Block, pre-norm).
type BlockParams struct {
	MHSAParams
	MLPRatio *float64 `json:"mlp_ratio,omitempty"` // default 4
	Eps      *float64 `json:"eps,omitempty"`       // LayerNorm eps, default 1e-6 (timm ViT)
}

type blockKind struct{}

func (blockKind) Name() string { return "block" }
func (blockKind) Summary() string {
	return "timm Block: x + attn(norm1(x)), then + mlp(norm2(·)) with GELU (pre-norm)"
}

func (blockKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p BlockParams
	if err := decodeStrict("block", raw, &p); err != nil {
		return nil, err
	}
	a, err := parseAttention("block", batch, p.MHSAParams)
	if err != nil {
		return nil, err
	}
	ratio, eps := 4.0, 1e-6
	if p.MLPRatio != nil {
		ratio = *p.MLPRatio
	}
	if p.Eps != nil {
		eps = *p.Eps
	}
	hidden := int(float64(a.dim) * ratio) // timm: int(dim * mlp_ratio)
	if !(eps > 0) || hidden <= 0 || hidden > maxDim {
		return nil, fmt.Errorf("block params: eps must be positive and mlp_ratio give 1..%d hidden units", maxDim)
	}
	return &blockSpec{a: a, hidden: hidden, eps: eps}, nil
}

type blockSpec struct {
	a      attention
	hidden int
	eps    float64
}

func (s *blockSpec) Op() string { return "block" }
func (s *blockSpec) shape() bench.Shape {
	return bench.Shape{s.a.batch, s.a.tokens, s.a.dim}
}
func (s *blockSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: s.shape()}}
}
func (s *blockSpec) Weights() []bench.ArraySpec {
	e, h := s.a.dim, s.hidden
	w := []bench.ArraySpec{{Name: "norm1.weight", Shape: bench.Shape{e}}, {Name: "norm1.bias", Shape: bench.Shape{e}}}
	w = append(w, s.a.weights("attn.")...)
	return append(w, mlpWeights("", e, h)...)
}
func (s *blockSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: s.shape()}}
}
func (s *blockSpec) MACs() int64 {
	rows := int64(s.a.batch) * int64(s.a.tokens)
	return s.a.macs() + 2*rows*int64(s.a.dim)*int64(s.hidden)
}
func (s *blockSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *blockSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }

// Graph: h1 = norm1(x); y = x + proj(attn(h1)); h2 = norm2(y);
// out = y + fc2(gelu(fc1(h2))). Bias, GELU and the residual adds are fused
// into the GEMMs.
func (s *blockSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.steps(g, "", "x", "out")
	return g
}

// steps appends one block reading in and writing out, with weights under
// prefix ("blocks.3." in a network). Its intermediates are shared by every
// block of the graph.
func (s *blockSpec) steps(g *bench.Graph, prefix, in, out string) {
	b, n, e, h := s.a.batch, s.a.tokens, s.a.dim, s.hidden
	for _, t := range []string{"h1", "y"} {
		g.Temp(t, s.shape())
	}
	g.Steps = append(g.Steps, bench.Step{Node: LayerNorm{Batch: b, Tokens: n, Dim: e, Eps: s.eps},
		In: []string{in, prefix + "norm1.weight", prefix + "norm1.bias"}, Out: []string{"h1"}})
	s.a.steps(g, prefix+"attn.", "h1", "y", in)
	mlpSteps(g, prefix, "mlp.", "y", out, b, n, e, h, s.eps)
}

// weightsAt lists the block's weights under prefix.
func (s *blockSpec) weightsAt(prefix string) []bench.ArraySpec {
	w := s.Weights()
	for i := range w {
		w[i].Name = prefix + w[i].Name
	}
	return w
}

func init() { bench.RegisterOpKind(blockKind{}) }

// mlpWeights lists a pre-norm block's norm2 and Mlp (fc1, fc2) weights.
func mlpWeights(prefix string, c, h int) []bench.ArraySpec {
	return []bench.ArraySpec{
		{Name: prefix + "norm2.weight", Shape: bench.Shape{c}}, {Name: prefix + "norm2.bias", Shape: bench.Shape{c}},
		{Name: prefix + "mlp.fc1.weight", Shape: bench.Shape{h, c}}, {Name: prefix + "mlp.fc1.bias", Shape: bench.Shape{h}},
		{Name: prefix + "mlp.fc2.weight", Shape: bench.Shape{c, h}}, {Name: prefix + "mlp.fc2.bias", Shape: bench.Shape{c}},
	}
}

// mlpSteps appends y + fc2(gelu(fc1(norm2(y)))) for rows [b, n, c] of y,
// writing out, with weights under prefix; its temporaries tmp+"h2" and
// tmp+"hidden" are shared by every call with the same tmp.
func mlpSteps(g *bench.Graph, prefix, tmp, y, out string, b, n, c, hidden int, eps float64) {
	h2, hid := tmp+"h2", tmp+"hidden"
	g.Temp(h2, bench.Shape{b, n, c})
	g.Temp(hid, bench.Shape{b, n, hidden})
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: n, Dim: c, Eps: eps},
			In: []string{y, prefix + "norm2.weight", prefix + "norm2.bias"}, Out: []string{h2}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: hidden, K: c, TransB: true, Bias: true, Act: "gelu"},
			In: []string{h2, prefix + "mlp.fc1.weight", prefix + "mlp.fc1.bias"}, Out: []string{hid}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: c, K: hidden, TransB: true, Bias: true, Residual: true},
			In: []string{hid, prefix + "mlp.fc2.weight", prefix + "mlp.fc2.bias", y}, Out: []string{out}})
}
