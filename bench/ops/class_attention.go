package ops

import (
	"encoding/json"
	"math"

	"vitbench/bench"
)

// ClassAttnParams is the JSON form of a class_attention case (VOLO's
// ClassAttention, docs/reference-notes.md, "VOLO"): Tokens counts the class token.
type ClassAttnParams struct {
	Tokens int `json:"tokens"`
	Dim    int `json:"dim"`
	Heads  int `json:"heads"`
}

// classAttn is one ClassAttention: q from the class token, k and v from
// every token (qkv without bias), then the output projection.
type classAttn struct {
	batch, tokens, dim, heads int
	scale                     float64
}

func parseClassAttn(op string, batch int, p ClassAttnParams) (classAttn, error) {
	if err := positive(op, "batch", batch, "tokens", p.Tokens, "dim", p.Dim, "heads", p.Heads); err != nil {
		return classAttn{}, err
	}
	if err := checkDims(op, "batch", batch, "tokens", p.Tokens, "dim", p.Dim, "heads", p.Heads); err != nil {
		return classAttn{}, err
	}
	if p.Dim%p.Heads != 0 {
		return classAttn{}, errorf("%s params: dim %d is not a multiple of heads %d", op, p.Dim, p.Heads)
	}
	return classAttn{batch: batch, tokens: p.Tokens, dim: p.Dim, heads: p.Heads,
		scale: 1 / math.Sqrt(float64(p.Dim/p.Heads))}, nil
}

func (a classAttn) weights(prefix string) []bench.ArraySpec {
	c := a.dim
	return []bench.ArraySpec{
		{Name: prefix + "kv.weight", Shape: bench.Shape{2 * c, c}},
		{Name: prefix + "q.weight", Shape: bench.Shape{c, c}},
		{Name: prefix + "proj.weight", Shape: bench.Shape{c, c}},
		{Name: prefix + "proj.bias", Shape: bench.Shape{c}},
	}
}

func (a classAttn) core() ClassAttnCore {
	return ClassAttnCore{Batch: a.batch, Tokens: a.tokens, Heads: a.heads, HeadDim: a.dim / a.heads, Scale: a.scale}
}

func (a classAttn) macs() int64 {
	b, n, c := int64(a.batch), int64(a.tokens), int64(a.dim)
	return b*n*c*2*c + 2*b*c*c + a.core().MACs()
}

// steps appends the attention from x [B, N, C] to out [B, 1, C], adding
// residual [B, 1, C] to the projection when it is not "".
func (a classAttn) steps(g *bench.Graph, prefix, in, out, residual string) {
	b, n, c := a.batch, a.tokens, a.dim
	g.Temp("cls.token", bench.Shape{b, 1, c})
	g.Temp("cls.q", bench.Shape{b, 1, c})
	g.Temp("cls.kv", bench.Shape{b, n, 2 * c})
	g.Temp("cls.ctx", bench.Shape{b, 1, c})
	projIn := []string{"cls.ctx", prefix + "proj.weight", prefix + "proj.bias"}
	if residual != "" {
		projIn = append(projIn, residual)
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: Gemm{Batch: b, M: n, N: 2 * c, K: c, TransB: true}, In: []string{in, prefix + "kv.weight"},
			Out: []string{"cls.kv"}},
		bench.Step{Node: TakeToken{Batch: b, Tokens: n, Dim: c}, In: []string{in}, Out: []string{"cls.token"}},
		bench.Step{Node: Gemm{Batch: b, M: 1, N: c, K: c, TransB: true}, In: []string{"cls.token", prefix + "q.weight"},
			Out: []string{"cls.q"}},
		bench.Step{Node: a.core(), In: []string{"cls.q", "cls.kv"}, Out: []string{"cls.ctx"}},
		bench.Step{Node: Gemm{Batch: b, M: 1, N: c, K: c, TransB: true, Bias: true, Residual: residual != ""},
			In: projIn, Out: []string{out}})
}

type classAttnKind struct{}

func (classAttnKind) Name() string { return "class_attention" }
func (classAttnKind) Summary() string {
	return "VOLO ClassAttention: the class token's query over all tokens' keys and values, proj"
}

func (classAttnKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p ClassAttnParams
	if err := decodeStrict("class_attention", raw, &p); err != nil {
		return nil, err
	}
	a, err := parseClassAttn("class_attention", batch, p)
	if err != nil {
		return nil, err
	}
	return &classAttnSpec{a: a}, nil
}

type classAttnSpec struct{ a classAttn }

func (s *classAttnSpec) Op() string { return "class_attention" }
func (s *classAttnSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{s.a.batch, s.a.tokens, s.a.dim}}}
}
func (s *classAttnSpec) Weights() []bench.ArraySpec { return s.a.weights("") }
func (s *classAttnSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{s.a.batch, 1, s.a.dim}}}
}
func (s *classAttnSpec) MACs() int64   { return s.a.macs() }
func (s *classAttnSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *classAttnSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *classAttnSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.a.steps(g, "", "x", "out", "")
	return g
}

// ClassBlockParams is the JSON form of a class_block case (VOLO's
// ClassBlock, docs/reference-notes.md, "VOLO").
type ClassBlockParams struct {
	ClassAttnParams
	MLPRatio *float64 `json:"mlp_ratio,omitempty"` // default 3
	Eps      *float64 `json:"eps,omitempty"`       // default 1e-5
}

// classBlock updates the class token only: cls = x[:, :1] +
// attn(norm1(x)); cls += mlp(norm2(cls)); out = cat(cls, x[:, 1:]).
type classBlock struct {
	a      classAttn
	hidden int
	eps    float64
}

func parseClassBlock(op string, batch int, p ClassBlockParams) (classBlock, error) {
	a, err := parseClassAttn(op, batch, p.ClassAttnParams)
	if err != nil {
		return classBlock{}, err
	}
	hidden, eps := int(float64(a.dim)*floatOr(p.MLPRatio, 3)), floatOr(p.Eps, 1e-5)
	if !(eps > 0) || hidden <= 0 || hidden > maxDim {
		return classBlock{}, errorf("%s params: eps must be positive and mlp_ratio give 1..%d hidden units", op, maxDim)
	}
	return classBlock{a: a, hidden: hidden, eps: eps}, nil
}

func (s classBlock) shape() bench.Shape { return bench.Shape{s.a.batch, s.a.tokens, s.a.dim} }

func (s classBlock) weights(prefix string) []bench.ArraySpec {
	c := s.a.dim
	w := []bench.ArraySpec{{Name: prefix + "norm1.weight", Shape: bench.Shape{c}}, {Name: prefix + "norm1.bias", Shape: bench.Shape{c}}}
	w = append(w, s.a.weights(prefix+"attn.")...)
	return append(w, mlpWeights(prefix, c, s.hidden)...)
}

func (s classBlock) macs() int64 {
	return s.a.macs() + 2*int64(s.a.batch)*int64(s.a.dim)*int64(s.hidden)
}

// steps appends one ClassBlock reading in and writing out ([B, N, C]).
func (s classBlock) steps(g *bench.Graph, prefix, in, out string) {
	b, n, c := s.a.batch, s.a.tokens, s.a.dim
	g.Temp("clsblock.h1", s.shape())
	g.Temp("clsblock.x0", bench.Shape{b, 1, c})
	g.Temp("clsblock.y", bench.Shape{b, 1, c})
	g.Temp("clsblock.cls", bench.Shape{b, 1, c})
	g.Steps = append(g.Steps,
		bench.Step{Node: LayerNorm{Batch: b, Tokens: n, Dim: c, Eps: s.eps},
			In: []string{in, prefix + "norm1.weight", prefix + "norm1.bias"}, Out: []string{"clsblock.h1"}},
		bench.Step{Node: TakeToken{Batch: b, Tokens: n, Dim: c}, In: []string{in}, Out: []string{"clsblock.x0"}})
	s.a.steps(g, prefix+"attn.", "clsblock.h1", "clsblock.y", "clsblock.x0")
	mlpSteps(g, prefix, "clsblock.", "clsblock.y", "clsblock.cls", b, 1, c, s.hidden, s.eps)
	g.Steps = append(g.Steps, bench.Step{Node: PutToken{Batch: b, Tokens: n, Dim: c},
		In: []string{in, "clsblock.cls"}, Out: []string{out}})
}

type classBlockKind struct{}

func (classBlockKind) Name() string { return "class_block" }
func (classBlockKind) Summary() string {
	return "VOLO ClassBlock: the class token += class_attention(norm1(x)), += mlp(norm2(·)); patch tokens pass"
}

func (classBlockKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p ClassBlockParams
	if err := decodeStrict("class_block", raw, &p); err != nil {
		return nil, err
	}
	s, err := parseClassBlock("class_block", batch, p)
	if err != nil {
		return nil, err
	}
	return &classBlockSpec{s: s}, nil
}

type classBlockSpec struct{ s classBlock }

func (s *classBlockSpec) Op() string { return "class_block" }
func (s *classBlockSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: s.s.shape()}}
}
func (s *classBlockSpec) Weights() []bench.ArraySpec { return s.s.weights("") }
func (s *classBlockSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: s.s.shape()}}
}
func (s *classBlockSpec) MACs() int64   { return s.s.macs() }
func (s *classBlockSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *classBlockSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *classBlockSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.s.steps(g, "", "x", "out")
	return g
}

func init() {
	bench.RegisterOpKind(classAttnKind{})
	bench.RegisterOpKind(classBlockKind{})
}
