package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// LayerNorm is nn.LayerNorm over the last dimension of x [B, T, D]:
//
//	for b, t: μ = mean(x[b, t, :]);  σ² = mean((x[b, t, :] − μ)²)   (biased)
//	          out[b, t, d] = (x[b, t, d] − μ) / √(σ² + eps) · weight[d] + bias[d]
//
// eps is 1e-6 in timm's ViT/DeiT and 1e-5 everywhere else (docs/reference-notes.md,
// "Conventions").
// Like Gemm it is row-wise: x and out may have any shape holding the same
// B·T rows of D values (VOLO's channels-last [B, H, W, D]).
type LayerNorm struct {
	Batch, Tokens, Dim int
	Eps                float64
}

// OpName implements bench.Node.
func (LayerNorm) OpName() string { return "layernorm" }

// LayerNormParams is the JSON form of a layernorm case.
type LayerNormParams struct {
	Tokens int      `json:"tokens"`
	Dim    int      `json:"dim"`
	Eps    *float64 `json:"eps,omitempty"`
}

type layerNormKind struct{}

func (layerNormKind) Name() string { return "layernorm" }
func (layerNormKind) Summary() string {
	return "nn.LayerNorm over the channels of tokens [B, T, D] (eps per model)"
}

func (layerNormKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p LayerNormParams
	if err := decodeStrict("layernorm", raw, &p); err != nil {
		return nil, err
	}
	if err := positive("layernorm", "batch", batch, "tokens", p.Tokens, "dim", p.Dim); err != nil {
		return nil, err
	}
	if err := checkDims("layernorm", "batch", batch, "tokens", p.Tokens, "dim", p.Dim); err != nil {
		return nil, err
	}
	eps := 1e-5
	if p.Eps != nil {
		if !(*p.Eps > 0) {
			return nil, fmt.Errorf("layernorm params: eps must be positive")
		}
		eps = *p.Eps
	}
	return &layerNormSpec{node: LayerNorm{Batch: batch, Tokens: p.Tokens, Dim: p.Dim, Eps: eps}}, nil
}

type layerNormSpec struct{ node LayerNorm }

func (s *layerNormSpec) Op() string { return "layernorm" }
func (s *layerNormSpec) Inputs() []bench.ArraySpec {
	n := s.node
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{n.Batch, n.Tokens, n.Dim}}}
}
func (s *layerNormSpec) Weights() []bench.ArraySpec {
	d := bench.Shape{s.node.Dim}
	return []bench.ArraySpec{{Name: "weight", Shape: d}, {Name: "bias", Shape: d}}
}
func (s *layerNormSpec) Outputs() []bench.ArraySpec {
	n := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{n.Batch, n.Tokens, n.Dim}}}
}
func (s *layerNormSpec) MACs() int64   { return 0 }
func (s *layerNormSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *layerNormSpec) Params() int64 { return 2 * int64(s.node.Dim) }
func (s *layerNormSpec) Graph() *bench.Graph {
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: []string{"x", "weight", "bias"}, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(layerNormKind{}) }
