package ops

import (
	"encoding/json"
	"math"

	"vitbench/bench"
)

// AttentionCore is the middle of timm's Attention: from the fused
// projection qkv [B, N, 3·H·D] (channel s·H·D + h·D + d, s = q, k, v) it
// computes, per image b and head h,
//
//	S = scale · Q_h K_hᵀ        [N, N]
//	P = softmax(S) over keys    (numerically stable)
//	out[b, :, h·D : (h+1)·D] = P V_h
//
// so out [B, N, H·D] has head-major channels, ready for the output
// projection. With Causal (CLIP's text tower) query i attends to keys
// j ≤ i only: S[i, j] = −∞ for j > i before the softmax, the additive
// mask nn.MultiheadAttention takes.
type AttentionCore struct {
	Batch, Tokens, Heads, HeadDim int
	Scale                         float64
	Causal                        bool
}

// OpName implements bench.Node.
func (AttentionCore) OpName() string { return "attention_core" }

// MACs counts the two attention products.
func (a AttentionCore) MACs() int64 {
	return 2 * int64(a.Batch) * int64(a.Heads) * int64(a.Tokens) * int64(a.Tokens) * int64(a.HeadDim)
}

// ScratchBytes implements bench.ScratchNode: the score rows held at once (a block of
// query rows against all N keys per worker, at most every (image, head) pair's N rows)
// plus the split q, k, v and merged output a GPU keeps, [B, N, H·D] each.
func (a AttentionCore) ScratchBytes(workers int) int64 {
	n := int64(a.Tokens)
	rows := min(bench.MulSat(int64(a.Batch), int64(a.Heads), n), bench.MulSat(int64(workers), n))
	return bench.AddSat(bench.MulSat(rows, n, 4), bench.MulSat(4, int64(a.Batch), n, int64(a.Heads), int64(a.HeadDim), 4))
}

// MHSAParams is the JSON form of an mhsa case (timm Attention).
type MHSAParams struct {
	Tokens  int      `json:"tokens"`
	Dim     int      `json:"dim"`
	Heads   int      `json:"heads"`
	QKVBias *bool    `json:"qkv_bias,omitempty"`
	Scale   *float64 `json:"scale,omitempty"` // default head_dim^-0.5
}

// attention is the shared shape of mhsa and block.
type attention struct {
	batch, tokens, dim, heads int
	qkvBias                   bool
	scale                     float64
}

func parseAttention(op string, batch int, p MHSAParams) (attention, error) {
	if err := positive(op, "batch", batch, "tokens", p.Tokens, "dim", p.Dim, "heads", p.Heads); err != nil {
		return attention{}, err
	}
	if err := checkDims(op, "batch", batch, "tokens", p.Tokens, "dim", p.Dim, "heads", p.Heads); err != nil {
		return attention{}, err
	}
	if p.Dim%p.Heads != 0 {
		return attention{}, errorf("%s params: dim %d is not a multiple of heads %d", op, p.Dim, p.Heads)
	}
	a := attention{batch: batch, tokens: p.Tokens, dim: p.Dim, heads: p.Heads, qkvBias: orBool(p.QKVBias, true),
		scale: 1 / math.Sqrt(float64(p.Dim/p.Heads))}
	if p.Scale != nil {
		if !(*p.Scale > 0) {
			return attention{}, errorf("%s params: scale must be positive", op)
		}
		a.scale = *p.Scale
	}
	return a, nil
}

// steps appends the attention sub-graph reading value in and writing out,
// with weights under prefix ("" for mhsa, "attn." in a block, "blocks.3.attn."
// in a network), and the residual added to the projection when residual
// is not "". Its intermediates, "attn.qkv" and "attn.ctx", are shared by
// every attention of a graph.
func (a attention) steps(g *bench.Graph, prefix, in, out, residual string) {
	e, n, b := a.dim, a.tokens, a.batch
	qkvIn := []string{in, prefix + "qkv.weight"}
	if a.qkvBias {
		qkvIn = append(qkvIn, prefix+"qkv.bias")
	}
	g.Temp("attn.qkv", bench.Shape{b, n, 3 * e})
	g.Temp("attn.ctx", bench.Shape{b, n, e})
	projIn := []string{"attn.ctx", prefix + "proj.weight", prefix + "proj.bias"}
	if residual != "" {
		projIn = append(projIn, residual)
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: Gemm{Batch: b, M: n, N: 3 * e, K: e, TransB: true, Bias: a.qkvBias}, In: qkvIn, Out: []string{"attn.qkv"}},
		bench.Step{Node: AttentionCore{Batch: b, Tokens: n, Heads: a.heads, HeadDim: e / a.heads, Scale: a.scale},
			In: []string{"attn.qkv"}, Out: []string{"attn.ctx"}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: e, K: e, TransB: true, Bias: true, Residual: residual != ""},
			In: projIn, Out: []string{out}})
}

func (a attention) weights(prefix string) []bench.ArraySpec {
	e := a.dim
	w := []bench.ArraySpec{{Name: prefix + "qkv.weight", Shape: bench.Shape{3 * e, e}}}
	if a.qkvBias {
		w = append(w, bench.ArraySpec{Name: prefix + "qkv.bias", Shape: bench.Shape{3 * e}})
	}
	return append(w, bench.ArraySpec{Name: prefix + "proj.weight", Shape: bench.Shape{e, e}},
		bench.ArraySpec{Name: prefix + "proj.bias", Shape: bench.Shape{e}})
}

func (a attention) macs() int64 {
	rows := int64(a.batch) * int64(a.tokens)
	e := int64(a.dim)
	return rows*e*3*e + rows*e*e + AttentionCore{Batch: a.batch, Tokens: a.tokens, Heads: a.heads, HeadDim: a.dim / a.heads}.MACs()
}

type mhsaKind struct{}

func (mhsaKind) Name() string { return "mhsa" }
func (mhsaKind) Summary() string {
	return "timm Attention: qkv Linear, softmax(q·kᵀ·scale)·v per head, proj Linear"
}

func (mhsaKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p MHSAParams
	if err := decodeStrict("mhsa", raw, &p); err != nil {
		return nil, err
	}
	a, err := parseAttention("mhsa", batch, p)
	if err != nil {
		return nil, err
	}
	return &mhsaSpec{a}, nil
}

type mhsaSpec struct{ a attention }

func (s *mhsaSpec) Op() string { return "mhsa" }
func (s *mhsaSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{s.a.batch, s.a.tokens, s.a.dim}}}
}
func (s *mhsaSpec) Weights() []bench.ArraySpec { return s.a.weights("") }
func (s *mhsaSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{s.a.batch, s.a.tokens, s.a.dim}}}
}
func (s *mhsaSpec) MACs() int64   { return s.a.macs() }
func (s *mhsaSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *mhsaSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *mhsaSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.a.steps(g, "", "x", "out", "")
	return g
}

func init() { bench.RegisterOpKind(mhsaKind{}) }
