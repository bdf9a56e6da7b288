package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
	"vitbench/bench/synth"
)

// MinGPTParams is the JSON form of a mingpt case: taming-transformers'
// GPT (mingpt.py; docs/reference-notes.md, minGPT) with its config's
// names, and tokens, the length T ≤ block_size of the sequences of code
// indices one forward runs over.
type MinGPTParams struct {
	VocabSize int `json:"vocab_size"`
	BlockSize int `json:"block_size"`
	NLayer    int `json:"n_layer"`
	NHead     int `json:"n_head"`
	NEmbd     int `json:"n_embd"`
	Tokens    int `json:"tokens"`
}

// minGPT is the GPT over batch sequences of tokens code indices:
//
//	x = tok_emb[idx] + pos_emb[:T]
//	per block: x = x + proj(causal_attention(query, key, value of ln1(x)))
//	           x = x + mlp.2(GELU(mlp.0(ln2(x))))          (exact erf GELU)
//	logits = head(ln_f(x))                                  (no bias)
//
// LayerNorm eps 1e-5, head_dim n_embd/n_head, scale head_dim^-0.5, query i
// attending to keys j ≤ i. The separate query, key and value Linears are
// stacked (as nn.MultiheadAttention packs its in_proj) into one [3E, E]
// product per block.
type minGPT struct {
	batch, vocab, block, layers, heads, embd, tokens int
}

type minGPTKind struct{}

func (minGPTKind) Name() string { return "mingpt" }
func (minGPTKind) Summary() string {
	return "taming's minGPT over code indices: token + learned positions, pre-norm causal blocks (exact GELU), ln_f, head (no bias)"
}

func (minGPTKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p MinGPTParams
	if err := decodeStrict("mingpt", raw, &p); err != nil {
		return nil, err
	}
	if err := positive("mingpt", "batch", batch, "vocab_size", p.VocabSize, "block_size", p.BlockSize, "n_layer", p.NLayer,
		"n_head", p.NHead, "n_embd", p.NEmbd, "tokens", p.Tokens); err != nil {
		return nil, err
	}
	if err := checkDims("mingpt", "batch", batch, "vocab_size", p.VocabSize, "block_size", p.BlockSize, "n_embd", 4*p.NEmbd,
		"tokens", p.Tokens); err != nil {
		return nil, err
	}
	switch {
	case p.NEmbd%p.NHead != 0:
		return nil, fmt.Errorf("mingpt params: n_embd %d is not a multiple of n_head %d", p.NEmbd, p.NHead)
	case p.Tokens > p.BlockSize:
		return nil, fmt.Errorf("mingpt params: tokens %d exceed block_size %d (the original asserts)", p.Tokens, p.BlockSize)
	case p.VocabSize > 1<<24:
		return nil, fmt.Errorf("mingpt params: vocab_size %d: indices above 2^24 are not exact in float32", p.VocabSize)
	case p.NLayer > 1024:
		return nil, fmt.Errorf("mingpt params: n_layer %d is above 1024", p.NLayer)
	}
	return &minGPT{batch: batch, vocab: p.VocabSize, block: p.BlockSize, layers: p.NLayer, heads: p.NHead, embd: p.NEmbd,
		tokens: p.Tokens}, nil
}

func (m *minGPT) Op() string { return "mingpt" }

// Inputs: idx [B, T], code indices as float32.
func (m *minGPT) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "idx", Shape: bench.Shape{m.batch, m.tokens}}}
}

// Weights in the original's state_dict order (without the blocks'
// registered causal-mask buffers, which are not parameters).
func (m *minGPT) Weights() []bench.ArraySpec {
	e := m.embd
	w := []bench.ArraySpec{{Name: "pos_emb", Shape: bench.Shape{1, m.block, e}}, {Name: "tok_emb.weight", Shape: bench.Shape{m.vocab, e}}}
	for i := 0; i < m.layers; i++ {
		p := fmt.Sprintf("blocks.%d.", i)
		w = append(w, bench.ArraySpec{Name: p + "ln1.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: p + "ln1.bias", Shape: bench.Shape{e}},
			bench.ArraySpec{Name: p + "ln2.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: p + "ln2.bias", Shape: bench.Shape{e}})
		for _, s := range []string{"key", "query", "value", "proj"} {
			w = append(w, bench.ArraySpec{Name: p + "attn." + s + ".weight", Shape: bench.Shape{e, e}},
				bench.ArraySpec{Name: p + "attn." + s + ".bias", Shape: bench.Shape{e}})
		}
		w = append(w, bench.ArraySpec{Name: p + "mlp.0.weight", Shape: bench.Shape{4 * e, e}}, bench.ArraySpec{Name: p + "mlp.0.bias", Shape: bench.Shape{4 * e}},
			bench.ArraySpec{Name: p + "mlp.2.weight", Shape: bench.Shape{e, 4 * e}}, bench.ArraySpec{Name: p + "mlp.2.bias", Shape: bench.Shape{e}})
	}
	return append(w, bench.ArraySpec{Name: "ln_f.weight", Shape: bench.Shape{e}}, bench.ArraySpec{Name: "ln_f.bias", Shape: bench.Shape{e}},
		bench.ArraySpec{Name: "head.weight", Shape: bench.Shape{m.vocab, e}})
}

// Outputs: logits [B, T, vocab_size].
func (m *minGPT) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "logits", Shape: bench.Shape{m.batch, m.tokens, m.vocab}}}
}

// MACs: per block 12·T·E² (q, k, v, proj, the MLP) and the two attention
// products over all T² pairs (as PyTorch multiplies them under the mask),
// plus the head T·E·V, per sequence.
func (m *minGPT) MACs() int64 {
	rows, e := int64(m.batch)*int64(m.tokens), int64(m.embd)
	attn := AttentionCore{Batch: m.batch, Tokens: m.tokens, Heads: m.heads, HeadDim: m.embd / m.heads}.MACs()
	return int64(m.layers)*(rows*12*e*e+attn) + rows*e*int64(m.vocab)
}

func (m *minGPT) Bytes() int64  { return bench.BytesOf(m.Inputs(), m.Weights(), m.Outputs()) }
func (m *minGPT) Params() int64 { return bench.BytesOf(m.Weights()) / 4 }

func (m *minGPT) Graph() *bench.Graph {
	b, t, e := m.batch, m.tokens, m.embd
	g := &bench.Graph{}
	tok := bench.Shape{b, t, e}
	for _, n := range []string{"gpt.x0", "gpt.x1", "gpt.h1", "gpt.ctx", "gpt.y", "gpt.h2"} {
		g.Temp(n, tok)
	}
	g.Temp("gpt.pos", bench.Shape{m.block, e})
	g.Temp("gpt.wqkv", bench.Shape{3 * e, e})
	g.Temp("gpt.bqkv", bench.Shape{3 * e})
	g.Temp("gpt.qkv", bench.Shape{b, t, 3 * e})
	g.Temp("gpt.hidden", bench.Shape{b, t, 4 * e})
	g.Temp("gpt.final", tok)
	g.Steps = append(g.Steps,
		bench.Step{Node: Reshape{From: bench.Shape{1, m.block, e}, To: bench.Shape{m.block, e}}, In: []string{"pos_emb"}, Out: []string{"gpt.pos"}},
		bench.Step{Node: TokenEmbed{Batch: b, Context: t, Vocab: m.vocab, Width: e, PosRows: m.block},
			In: []string{"idx", "tok_emb.weight", "gpt.pos"}, Out: []string{"gpt.x0"}})
	cur := "gpt.x0"
	ln := LayerNorm{Batch: b, Tokens: t, Dim: e, Eps: 1e-5}
	for i := 0; i < m.layers; i++ {
		p := fmt.Sprintf("blocks.%d.", i)
		next := pingPong(cur, "gpt.x0", "gpt.x1")
		a := p + "attn."
		g.Steps = append(g.Steps,
			bench.Step{Node: ln, In: []string{cur, p + "ln1.weight", p + "ln1.bias"}, Out: []string{"gpt.h1"}},
			bench.Step{Node: Concat{Parts: 3, Elems: e * e}, In: []string{a + "query.weight", a + "key.weight", a + "value.weight"}, Out: []string{"gpt.wqkv"}},
			bench.Step{Node: Concat{Parts: 3, Elems: e}, In: []string{a + "query.bias", a + "key.bias", a + "value.bias"}, Out: []string{"gpt.bqkv"}},
			bench.Step{Node: Gemm{Batch: b, M: t, N: 3 * e, K: e, TransB: true, Bias: true}, In: []string{"gpt.h1", "gpt.wqkv", "gpt.bqkv"}, Out: []string{"gpt.qkv"}},
			bench.Step{Node: AttentionCore{Batch: b, Tokens: t, Heads: m.heads, HeadDim: e / m.heads, Scale: 1 / sqrtInt(e/m.heads), Causal: true},
				In: []string{"gpt.qkv"}, Out: []string{"gpt.ctx"}},
			bench.Step{Node: Gemm{Batch: b, M: t, N: e, K: e, TransB: true, Bias: true, Residual: true},
				In: []string{"gpt.ctx", a + "proj.weight", a + "proj.bias", cur}, Out: []string{"gpt.y"}},
			bench.Step{Node: ln, In: []string{"gpt.y", p + "ln2.weight", p + "ln2.bias"}, Out: []string{"gpt.h2"}},
			bench.Step{Node: Gemm{Batch: b, M: t, N: 4 * e, K: e, TransB: true, Bias: true, Act: "gelu"},
				In: []string{"gpt.h2", p + "mlp.0.weight", p + "mlp.0.bias"}, Out: []string{"gpt.hidden"}},
			bench.Step{Node: Gemm{Batch: b, M: t, N: e, K: 4 * e, TransB: true, Bias: true, Residual: true},
				In: []string{"gpt.hidden", p + "mlp.2.weight", p + "mlp.2.bias", "gpt.y"}, Out: []string{next}})
		cur = next
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: ln, In: []string{cur, "ln_f.weight", "ln_f.bias"}, Out: []string{"gpt.final"}},
		bench.Step{Node: Gemm{Batch: b, M: t, N: m.vocab, K: e, TransB: true}, In: []string{"gpt.final", "head.weight"}, Out: []string{"logits"}})
	return g
}

// SynthInput implements runner.InputSynthesizer: code indices uniform over
// the vocabulary, for timing and backend agreement (fixtures store the
// exporter's).
func (m *minGPT) SynthInput(name string, seed uint64) []float32 {
	if name != "idx" {
		return nil
	}
	u := synth.Generate(seed, "idx", synth.Params{Center: 0.5, Scale: 0.5}, m.batch*m.tokens)
	out := make([]float32, len(u))
	for i, v := range u {
		out[i] = float32(min(int(v*float32(m.vocab)), m.vocab-1))
	}
	return out
}

func init() { bench.RegisterOpKind(minGPTKind{}) }
