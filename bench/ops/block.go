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
	return append(w,
		bench.ArraySpec{Name: "norm2.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: "norm2.bias", Shape: bench.Shape{e}},
		bench.ArraySpec{Name: "mlp.fc1.weight", Shape: bench.Shape{h, e}}, bench.ArraySpec{Name: "mlp.fc1.bias", Shape: bench.Shape{h}},
		bench.ArraySpec{Name: "mlp.fc2.weight", Shape: bench.Shape{e, h}}, bench.ArraySpec{Name: "mlp.fc2.bias", Shape: bench.Shape{e}})
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
	b, n, e, h := s.a.batch, s.a.tokens, s.a.dim, s.hidden
	ln := LayerNorm{Batch: b, Tokens: n, Dim: e, Eps: s.eps}
	g := &bench.Graph{Temps: []bench.ArraySpec{
		{Name: "h1", Shape: s.shape()}, {Name: "y", Shape: s.shape()}, {Name: "h2", Shape: s.shape()},
		{Name: "mlp.hidden", Shape: bench.Shape{b, n, h}}}}
	g.Steps = append(g.Steps, bench.Step{Node: ln, In: []string{"x", "norm1.weight", "norm1.bias"}, Out: []string{"h1"}})
	s.a.steps(g, "attn.", "h1", "y", "x")
	g.Steps = append(g.Steps,
		bench.Step{Node: ln, In: []string{"y", "norm2.weight", "norm2.bias"}, Out: []string{"h2"}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: h, K: e, TransB: true, Bias: true, Act: "gelu"},
			In: []string{"h2", "mlp.fc1.weight", "mlp.fc1.bias"}, Out: []string{"mlp.hidden"}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: e, K: h, TransB: true, Bias: true, Residual: true},
			In: []string{"mlp.hidden", "mlp.fc2.weight", "mlp.fc2.bias", "y"}, Out: []string{"out"}})
	return g
}

func init() { bench.RegisterOpKind(blockKind{}) }
