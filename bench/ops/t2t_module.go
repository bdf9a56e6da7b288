package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// T2TModuleParams is the JSON form of a t2t_module case (docs/reference-notes.md, "T2T module").
type T2TModuleParams struct {
	ImgSize    Pair   `json:"img_size"`
	InChans    *int   `json:"in_chans,omitempty"`  // default 3
	EmbedDim   int    `json:"embed_dim"`           // the backbone's E
	TokenDim   *int   `json:"token_dim,omitempty"` // default 64
	TokensType string `json:"tokens_type"`         // "performer" or "transformer"
}

// t2tModule is the tokens-to-token stage: three soft splits with a token
// layer after the first two, then a Linear to the embedding.
type t2tModule struct {
	batch, in, embed, tokenDim int
	img                        Pair
	performer                  bool
	layer1, layer2             *tokenLayer
	grid                       [3]Pair // the window grids after each soft split
}

func parseT2TModule(op string, p T2TModuleParams, batch int) (*t2tModule, error) {
	m := &t2tModule{batch: batch, in: intOr(p.InChans, 3), embed: p.EmbedDim, tokenDim: intOr(p.TokenDim, 64), img: p.ImgSize}
	switch p.TokensType {
	case "performer":
		m.performer = true
	case "transformer":
	default:
		return nil, fmt.Errorf("%s params: tokens_type must be \"performer\" or \"transformer\", got %q", op, p.TokensType)
	}
	if err := positive(op, "batch", batch, "img_size", p.ImgSize, "in_chans", m.in, "embed_dim", p.EmbedDim, "token_dim", m.tokenDim); err != nil {
		return nil, err
	}
	if err := checkDims(op, "batch", batch, "img_size", p.ImgSize, "in_chans", m.in, "embed_dim", p.EmbedDim, "token_dim", m.tokenDim); err != nil {
		return nil, err
	}
	h, w := p.ImgSize[0], p.ImgSize[1]
	for i, k := range []struct{ k, s, p int }{{7, 4, 2}, {3, 2, 1}, {3, 2, 1}} {
		h, w = (h+2*k.p-k.k)/k.s+1, (w+2*k.p-k.k)/k.s+1
		if h < 1 || w < 1 {
			return nil, fmt.Errorf("%s params: img_size %v is too small for three soft splits", op, p.ImgSize)
		}
		m.grid[i] = Pair{h, w}
	}
	layer := func(tokens, dim int) (*tokenLayer, error) {
		raw := mustJSON(TokenLayerParams{Tokens: tokens, Dim: dim, InDim: &m.tokenDim})
		return parseTokenLayer(op, raw, batch, m.performer)
	}
	var err error
	if m.layer1, err = layer(m.grid[0][0]*m.grid[0][1], m.in*49); err != nil {
		return nil, err
	}
	if m.layer2, err = layer(m.grid[1][0]*m.grid[1][1], m.tokenDim*9); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *t2tModule) patches() int { return m.grid[2][0] * m.grid[2][1] }

func (m *t2tModule) weights(prefix string) []bench.ArraySpec {
	var w []bench.ArraySpec
	for i, l := range []*tokenLayer{m.layer1, m.layer2} {
		for _, a := range l.Weights() {
			w = append(w, bench.ArraySpec{Name: fmt.Sprintf("%sattention%d.%s", prefix, i+1, a.Name), Shape: a.Shape})
		}
	}
	return append(w, bench.ArraySpec{Name: prefix + "project.weight", Shape: bench.Shape{m.embed, m.tokenDim * 9}},
		bench.ArraySpec{Name: prefix + "project.bias", Shape: bench.Shape{m.embed}})
}

func (m *t2tModule) macs() int64 {
	return m.layer1.MACs() + m.layer2.MACs() + int64(m.batch)*int64(m.patches())*int64(m.tokenDim*9)*int64(m.embed)
}

// steps appends the stage reading the image in and writing tokens out
// [B, patches, E], with weights under prefix.
func (m *t2tModule) steps(g *bench.Graph, prefix, in, out string) {
	b, c := m.batch, m.tokenDim
	split := func(src string, chans int, img Pair, k, s, p int, dst string, grid Pair) {
		g.Temp(dst, bench.Shape{b, grid[0] * grid[1], chans * k * k})
		g.Steps = append(g.Steps, bench.Step{Node: Unfold{Batch: b, InChans: chans, Height: img[0], Width: img[1],
			KernelH: k, KernelW: k, StrideH: s, StrideW: s, PadH: p, PadW: p, DilationH: 1, DilationW: 1},
			In: []string{src}, Out: []string{dst}})
	}
	toImage := func(src string, grid Pair, dst string) {
		g.Temp(dst, bench.Shape{b, c, grid[0], grid[1]})
		g.Steps = append(g.Steps, bench.Step{Node: TokensToImage{Batch: b, Chans: c, Height: grid[0], Width: grid[1]},
			In: []string{src}, Out: []string{dst}})
	}
	split(in, m.in, m.img, 7, 4, 2, "t2t.split0", m.grid[0])
	g.Temp("t2t.tokens1", bench.Shape{b, m.grid[0][0] * m.grid[0][1], c})
	m.layer1.steps(g, prefix+"attention1.", "t2t.split0", "t2t.tokens1")
	toImage("t2t.tokens1", m.grid[0], "t2t.image1")
	split("t2t.image1", c, m.grid[0], 3, 2, 1, "t2t.split1", m.grid[1])
	g.Temp("t2t.tokens2", bench.Shape{b, m.grid[1][0] * m.grid[1][1], c})
	m.layer2.steps(g, prefix+"attention2.", "t2t.split1", "t2t.tokens2")
	toImage("t2t.tokens2", m.grid[1], "t2t.image2")
	split("t2t.image2", c, m.grid[1], 3, 2, 1, "t2t.split2", m.grid[2])
	g.Steps = append(g.Steps, bench.Step{Node: Gemm{Batch: b, M: m.patches(), N: m.embed, K: c * 9, TransB: true, Bias: true},
		In: []string{"t2t.split2", prefix + "project.weight", prefix + "project.bias"}, Out: []string{out}})
}

type t2tModuleKind struct{}

func (t2tModuleKind) Name() string { return "t2t_module" }
func (t2tModuleKind) Summary() string {
	return "T2T-ViT tokens-to-token stage: soft splits k7s4, k3s2, k3s2 with token layers, then a Linear"
}

func (t2tModuleKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p T2TModuleParams
	if err := decodeStrict("t2t_module", raw, &p); err != nil {
		return nil, err
	}
	m, err := parseT2TModule("t2t_module", p, batch)
	if err != nil {
		return nil, err
	}
	return &t2tModuleSpec{m}, nil
}

type t2tModuleSpec struct{ m *t2tModule }

func (s *t2tModuleSpec) Op() string { return "t2t_module" }
func (s *t2tModuleSpec) Inputs() []bench.ArraySpec {
	m := s.m
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{m.batch, m.in, m.img[0], m.img[1]}}}
}
func (s *t2tModuleSpec) Weights() []bench.ArraySpec { return s.m.weights("") }
func (s *t2tModuleSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{s.m.batch, s.m.patches(), s.m.embed}}}
}
func (s *t2tModuleSpec) MACs() int64   { return s.m.macs() }
func (s *t2tModuleSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *t2tModuleSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *t2tModuleSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.m.steps(g, "", "x", "out")
	return g
}

func init() { bench.RegisterOpKind(t2tModuleKind{}) }
