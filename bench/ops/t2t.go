package ops

import (
	"encoding/json"
	"fmt"
	"math"

	"vitbench/bench"
)

// PerformerCore is the linear attention of T2T-ViT's Token_performer
// (docs/reference-notes.md, "Performer layer"), from kqv [B, T, 3·E] (k first, then q, then v) and
// the frozen random features w [M, E]:
//
//	φ(x)_j = exp(w_j·x − ‖x‖²/2) / √M            (kp = φ(k), qp = φ(q))
//	D[t]   = Σ_j qp[t, j] · Σ_t' kp[t', j]
//	out[t, n] = Σ_j qp[t, j] · (Σ_t' v[t', n]·kp[t', j]) / (D[t] + Eps)
//
// out is [B, T, E], before the output projection.
type PerformerCore struct {
	Batch, Tokens, Emb, M int
	Eps                   float64
}

// OpName implements bench.Node.
func (PerformerCore) OpName() string { return "performer_core" }

// ScratchBytes implements bench.ScratchNode: the feature maps φ(k), φ(q) and φ(k)ᵀ of
// one image [Tokens, M] each, the reduction [M, Emb], the normalizers and the feature sums.
func (p PerformerCore) ScratchBytes(workers int) int64 {
	t, m, e := int64(p.Tokens), int64(p.M), int64(p.Emb)
	return bench.AddSat(bench.MulSat(3, t, m, 4), bench.MulSat(m, e, 4), bench.MulSat(t, 4), bench.MulSat(m, 8))
}

// MACs counts the feature maps and the two products.
func (p PerformerCore) MACs() int64 {
	bt := int64(p.Batch) * int64(p.Tokens)
	return bt * int64(p.M) * int64(p.Emb) * 4
}

// TokenLayerParams is the JSON form of token_transformer and
// token_performer cases (T2T-ViT's token layers).
type TokenLayerParams struct {
	Tokens      int      `json:"tokens"`
	Dim         int      `json:"dim"`                    // input channels: 147 or 576 in T2T-ViT
	InDim       *int     `json:"in_dim,omitempty"`       // default 64
	MLPRatio    *float64 `json:"mlp_ratio,omitempty"`    // default 1
	KernelRatio *float64 `json:"kernel_ratio,omitempty"` // performer: M = int(in_dim·ratio), default 0.5
}

// tokenLayer is one T2T token layer: norm1 over dim, a token mixer to
// in_dim whose residual is v (the input dim differs), then a pre-norm MLP.
type tokenLayer struct {
	performer                  bool
	batch, tokens, dim, emb, m int
	hidden                     int
}

func parseTokenLayer(op string, raw json.RawMessage, batch int, performer bool) (*tokenLayer, error) {
	var p TokenLayerParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	emb := intOr(p.InDim, 64)
	if err := positive(op, "batch", batch, "tokens", p.Tokens, "dim", p.Dim, "in_dim", emb); err != nil {
		return nil, err
	}
	if err := checkDims(op, "batch", batch, "tokens", p.Tokens, "dim", p.Dim, "in_dim", emb); err != nil {
		return nil, err
	}
	if !performer && p.KernelRatio != nil {
		return nil, fmt.Errorf("%s params: kernel_ratio belongs to token_performer", op)
	}
	t := &tokenLayer{performer: performer, batch: batch, tokens: p.Tokens, dim: p.Dim, emb: emb,
		hidden: int(float64(emb) * floatOr(p.MLPRatio, 1)), m: int(float64(emb) * floatOr(p.KernelRatio, 0.5))}
	if t.hidden < 1 || t.hidden > maxDim || (performer && (t.m < 1 || t.m > maxDim)) {
		return nil, fmt.Errorf("%s params: mlp_ratio and kernel_ratio must give 1..%d units", op, maxDim)
	}
	return t, nil
}

func (t *tokenLayer) Op() string {
	if t.performer {
		return "token_performer"
	}
	return "token_transformer"
}

func (t *tokenLayer) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{t.batch, t.tokens, t.dim}}}
}

// Weights are named as in the T2T-ViT repository's state dicts.
func (t *tokenLayer) Weights() []bench.ArraySpec {
	d, e, h := t.dim, t.emb, t.hidden
	w := []bench.ArraySpec{{Name: "norm1.weight", Shape: bench.Shape{d}}, {Name: "norm1.bias", Shape: bench.Shape{d}}}
	if t.performer {
		w = append(w, bench.ArraySpec{Name: "kqv.weight", Shape: bench.Shape{3 * e, d}}, bench.ArraySpec{Name: "kqv.bias", Shape: bench.Shape{3 * e}},
			bench.ArraySpec{Name: "proj.weight", Shape: bench.Shape{e, e}}, bench.ArraySpec{Name: "proj.bias", Shape: bench.Shape{e}},
			bench.ArraySpec{Name: "norm2.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: "norm2.bias", Shape: bench.Shape{e}},
			bench.ArraySpec{Name: "mlp.0.weight", Shape: bench.Shape{h, e}}, bench.ArraySpec{Name: "mlp.0.bias", Shape: bench.Shape{h}},
			bench.ArraySpec{Name: "mlp.2.weight", Shape: bench.Shape{e, h}}, bench.ArraySpec{Name: "mlp.2.bias", Shape: bench.Shape{e}},
			bench.ArraySpec{Name: "w", Shape: bench.Shape{t.m, e}})
		return w
	}
	return append(w, bench.ArraySpec{Name: "attn.qkv.weight", Shape: bench.Shape{3 * e, d}},
		bench.ArraySpec{Name: "attn.proj.weight", Shape: bench.Shape{e, e}}, bench.ArraySpec{Name: "attn.proj.bias", Shape: bench.Shape{e}},
		bench.ArraySpec{Name: "norm2.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: "norm2.bias", Shape: bench.Shape{e}},
		bench.ArraySpec{Name: "mlp.fc1.weight", Shape: bench.Shape{h, e}}, bench.ArraySpec{Name: "mlp.fc1.bias", Shape: bench.Shape{h}},
		bench.ArraySpec{Name: "mlp.fc2.weight", Shape: bench.Shape{e, h}}, bench.ArraySpec{Name: "mlp.fc2.bias", Shape: bench.Shape{e}})
}

func (t *tokenLayer) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{t.batch, t.tokens, t.emb}}}
}

func (t *tokenLayer) MACs() int64 {
	bt, d, e, h := int64(t.batch)*int64(t.tokens), int64(t.dim), int64(t.emb), int64(t.hidden)
	macs := bt*d*3*e + bt*e*e + 2*bt*e*h
	if t.performer {
		return macs + PerformerCore{Batch: t.batch, Tokens: t.tokens, Emb: t.emb, M: t.m}.MACs()
	}
	return macs + AttentionCore{Batch: t.batch, Tokens: t.tokens, Heads: 1, HeadDim: t.emb}.MACs()
}

func (t *tokenLayer) Bytes() int64  { return bench.BytesOf(t.Inputs(), t.Weights(), t.Outputs()) }
func (t *tokenLayer) Params() int64 { return bench.BytesOf(t.Weights()) / 4 }

func (t *tokenLayer) Graph() *bench.Graph {
	g := &bench.Graph{}
	t.steps(g, "", "x", "out")
	return g
}

// steps appends the layer, weights under prefix, reading in and writing
// out: h = norm1(in); y = v + proj(mix(h)); out = y + mlp(norm2(y)), where
// the residual v is a column slice of the fused projection.
func (t *tokenLayer) steps(g *bench.Graph, prefix, in, out string) {
	b, n, d, e, h := t.batch, t.tokens, t.dim, t.emb, t.hidden
	g.Temp(prefix+"h", bench.Shape{b, n, d})
	g.Temp(prefix+"kqv", bench.Shape{b, n, 3 * e})
	g.Temp(prefix+"mix", bench.Shape{b, n, e})
	g.Temp(prefix+"y", bench.Shape{b, n, e})
	g.Temp(prefix+"h2", bench.Shape{b, n, e})
	g.Temp(prefix+"hidden", bench.Shape{b, n, h})
	ln := func(dim int, eps float64) LayerNorm { return LayerNorm{Batch: b, Tokens: n, Dim: dim, Eps: eps} }
	g.Steps = append(g.Steps, bench.Step{Node: ln(d, 1e-5), In: []string{in, prefix + "norm1.weight", prefix + "norm1.bias"}, Out: []string{prefix + "h"}})
	var proj, fc1, fc2 string
	if t.performer {
		g.Steps = append(g.Steps,
			bench.Step{Node: Gemm{Batch: b, M: n, N: 3 * e, K: d, TransB: true, Bias: true},
				In: []string{prefix + "h", prefix + "kqv.weight", prefix + "kqv.bias"}, Out: []string{prefix + "kqv"}},
			bench.Step{Node: PerformerCore{Batch: b, Tokens: n, Emb: e, M: t.m, Eps: 1e-8},
				In: []string{prefix + "kqv", prefix + "w"}, Out: []string{prefix + "mix"}})
		proj, fc1, fc2 = prefix+"proj", prefix+"mlp.0", prefix+"mlp.2"
	} else {
		g.Steps = append(g.Steps,
			bench.Step{Node: Gemm{Batch: b, M: n, N: 3 * e, K: d, TransB: true},
				In: []string{prefix + "h", prefix + "attn.qkv.weight"}, Out: []string{prefix + "kqv"}},
			// The scale quirk: the head dim is taken from the input dim.
			bench.Step{Node: AttentionCore{Batch: b, Tokens: n, Heads: 1, HeadDim: e, Scale: 1 / math.Sqrt(float64(d))},
				In: []string{prefix + "kqv"}, Out: []string{prefix + "mix"}})
		proj, fc1, fc2 = prefix+"attn.proj", prefix+"mlp.fc1", prefix+"mlp.fc2"
	}
	// The v columns: 2E..3E of the fused projection in both layers (the
	// performer's order is k, q, v; the transformer's q, k, v).
	g.Steps = append(g.Steps,
		bench.Step{Node: Gemm{Batch: b, M: n, N: e, K: e, TransB: true, Bias: true, Residual: true, ResidualLd: 3 * e, ResidualOff: 2 * e},
			In: []string{prefix + "mix", proj + ".weight", proj + ".bias", prefix + "kqv"}, Out: []string{prefix + "y"}},
		bench.Step{Node: ln(e, 1e-5), In: []string{prefix + "y", prefix + "norm2.weight", prefix + "norm2.bias"}, Out: []string{prefix + "h2"}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: h, K: e, TransB: true, Bias: true, Act: "gelu"},
			In: []string{prefix + "h2", fc1 + ".weight", fc1 + ".bias"}, Out: []string{prefix + "hidden"}},
		bench.Step{Node: Gemm{Batch: b, M: n, N: e, K: h, TransB: true, Bias: true, Residual: true},
			In: []string{prefix + "hidden", fc2 + ".weight", fc2 + ".bias", prefix + "y"}, Out: []string{out}})
}

type tokenTransformerKind struct{}

func (tokenTransformerKind) Name() string { return "token_transformer" }
func (tokenTransformerKind) Summary() string {
	return "T2T-ViT Token_transformer: 1-head attention to in_dim (scale dim^-0.5), v residual, MLP"
}
func (tokenTransformerKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	return parseTokenLayer("token_transformer", raw, batch, false)
}

type tokenPerformerKind struct{}

func (tokenPerformerKind) Name() string { return "token_performer" }
func (tokenPerformerKind) Summary() string {
	return "T2T-ViT Token_performer: random-feature linear attention (k, q, v order), v residual, MLP"
}
func (tokenPerformerKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	return parseTokenLayer("token_performer", raw, batch, true)
}

func init() {
	bench.RegisterOpKind(tokenTransformerKind{})
	bench.RegisterOpKind(tokenPerformerKind{})
}
