package ops

import (
	"encoding/json"

	"vitbench/bench"
)

// Gemm is a batched matrix product with an optional bias, the Linear layer
// of every transformer block: for x [B, M, K] and weight W,
//
//	out[b, i, j] = bias[j] + Σ_p x[b, i, p] · op(W)[p, j]
//
// with op(W) = Wᵀ for W [N, K] when TransB (nn.Linear's layout, the
// default) and op(W) = W for W [K, N] otherwise (x @ W).
//
// Inside a network graph the node may also apply an activation and add a
// residual (an extra input of shape [B, M, N]) to its outputs:
//
//	out[b, i, j] = act(bias[j] + Σ_p …) + residual[b, i, ResidualOff + j]
//
// where the residual input is [B, M, ResidualLd] (ResidualLd 0 means N): a
// column slice of a wider tensor, such as v inside a fused qkv.
//
// Gemm is row-wise: x, the residual and out may have any shape that holds
// the same B·M rows of the same width (a channels-last image [B, H, W, C]
// for [B, H·W, C]); backends check the rows, not the leading dimensions.
// With TransB the weight may also be a convolution weight [N, C, KH, KW],
// read as the matrix [N, C·KH·KW].
type Gemm struct {
	Batch, M, N, K int
	TransB, Bias   bool
	Act            string // "", "relu", "gelu" (exact erf) or "quick_gelu" (x·sigmoid(1.702·x), CLIP)
	Residual       bool
	ResidualLd     int
	ResidualOff    int
}

// OpName implements bench.Node.
func (Gemm) OpName() string { return "gemm" }

// GemmParams is the JSON form of a gemm case.
type GemmParams struct {
	M      int   `json:"m"`
	N      int   `json:"n"`
	K      int   `json:"k"`
	TransB *bool `json:"trans_b,omitempty"`
	Bias   *bool `json:"bias,omitempty"`
}

type gemmKind struct{}

func (gemmKind) Name() string { return "gemm" }
func (gemmKind) Summary() string {
	return "x [B, M, K] · Wᵀ (nn.Linear, W [N, K]) or · W ([K, N]), + bias: fp32 SGEMM"
}

func (gemmKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p GemmParams
	if err := decodeStrict("gemm", raw, &p); err != nil {
		return nil, err
	}
	if err := positive("gemm", "batch", batch, "m", p.M, "n", p.N, "k", p.K); err != nil {
		return nil, err
	}
	if err := checkDims("gemm", "batch", batch, "m", p.M, "n", p.N, "k", p.K); err != nil {
		return nil, err
	}
	return &gemmSpec{node: Gemm{Batch: batch, M: p.M, N: p.N, K: p.K,
		TransB: p.TransB == nil || *p.TransB, Bias: p.Bias == nil || *p.Bias}}, nil
}

type gemmSpec struct{ node Gemm }

func (s *gemmSpec) Op() string { return "gemm" }

func (s *gemmSpec) Inputs() []bench.ArraySpec {
	g := s.node
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{g.Batch, g.M, g.K}}}
}

func (s *gemmSpec) Weights() []bench.ArraySpec {
	g := s.node
	w := bench.Shape{g.K, g.N}
	if g.TransB {
		w = bench.Shape{g.N, g.K}
	}
	out := []bench.ArraySpec{{Name: "weight", Shape: w}}
	if g.Bias {
		out = append(out, bench.ArraySpec{Name: "bias", Shape: bench.Shape{g.N}})
	}
	return out
}

func (s *gemmSpec) Outputs() []bench.ArraySpec {
	g := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{g.Batch, g.M, g.N}}}
}

func (s *gemmSpec) MACs() int64 {
	g := s.node
	return int64(g.Batch) * int64(g.M) * int64(g.N) * int64(g.K)
}

func (s *gemmSpec) Bytes() int64 { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }

func (s *gemmSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }

func (s *gemmSpec) Graph() *bench.Graph {
	in := []string{"x", "weight"}
	if s.node.Bias {
		in = append(in, "bias")
	}
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: in, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(gemmKind{}) }
