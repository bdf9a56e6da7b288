package ops

import (
	"encoding/json"
	"fmt"
	"strings"

	"vitbench/bench"
)

// VOLOStemParams is the JSON form of a volo_stem case: VOLO's PatchEmbed
// with stem_conv (docs/reference-notes.md, "VOLO"), three conv–BN–ReLU layers and the
// patch projection, output channels-last.
type VOLOStemParams struct {
	ImgSize   Pair `json:"img_size"`
	InChans   *int `json:"in_chans,omitempty"`   // default 3
	HiddenDim *int `json:"hidden_dim,omitempty"` // default 64 (128 for D5)
	EmbedDim  int  `json:"embed_dim"`
	PatchSize *int `json:"patch_size,omitempty"` // default 8; the convs' stride 2 leaves patch/2 for proj
}

// voloStem is conv.0 (7×7 s2 p3) → conv.3 (3×3) → conv.6 (3×3), each
// with its BatchNorm (conv.1, .4, .7) folded and a ReLU, then proj, a
// (patch/2)-strided convolution with bias written as tokens.
type voloStem struct {
	batch, in, hidden, embed, patch int
	img                             Pair
}

func parseVOLOStem(op string, batch int, p VOLOStemParams) (voloStem, error) {
	s := voloStem{batch: batch, in: intOr(p.InChans, 3), hidden: intOr(p.HiddenDim, 64), embed: p.EmbedDim,
		patch: intOr(p.PatchSize, 8), img: p.ImgSize}
	if err := positive(op, "batch", batch, "img_size", s.img, "in_chans", s.in, "hidden_dim", s.hidden,
		"embed_dim", s.embed, "patch_size", s.patch); err != nil {
		return s, err
	}
	if err := checkDims(op, "batch", batch, "img_size", s.img, "in_chans", s.in, "hidden_dim", s.hidden,
		"embed_dim", s.embed, "patch_size", s.patch); err != nil {
		return s, err
	}
	if s.patch%2 != 0 {
		return s, errorf("%s params: patch_size %d must be even (the stem convs have stride 2)", op, s.patch)
	}
	if h, w := s.grid(); h < 1 || w < 1 {
		return s, errorf("%s params: img_size [%d, %d] is smaller than one patch of %d", op, s.img[0], s.img[1], s.patch)
	}
	return s, nil
}

// half is the stem convs' output size, (n−1)/2+1 (7×7, stride 2, padding 3).
func (s voloStem) half() (int, int) { return (s.img[0]-1)/2 + 1, (s.img[1]-1)/2 + 1 }

// grid is the token grid after proj, (H/2)/(patch/2) rows (floor).
func (s voloStem) grid() (int, int) {
	h, w := s.half()
	return h / (s.patch / 2), w / (s.patch / 2)
}

// stemConv is one conv–BN–ReLU layer of the stem with the state-dict
// indices of its conv and its BatchNorm in the nn.Sequential.
type stemConv struct {
	node     Conv2d
	conv, bn int
}

// convs are the three conv–BN–ReLU layers.
func (s voloStem) convs() []stemConv {
	h2, w2 := s.half()
	layer := func(in, size, h, w, stride, pad int) Conv2d {
		return Conv2d{Unfold: Unfold{Batch: s.batch, InChans: in, Height: h, Width: w, KernelH: size, KernelW: size,
			StrideH: stride, StrideW: stride, PadH: pad, PadW: pad, DilationH: 1, DilationW: 1},
			OutChans: s.hidden, BN: true, BNEps: 1e-5, ReLU: true}
	}
	return []stemConv{
		{layer(s.in, 7, s.img[0], s.img[1], 2, 3), 0, 1},
		{layer(s.hidden, 3, h2, w2, 1, 1), 3, 4},
		{layer(s.hidden, 3, h2, w2, 1, 1), 6, 7},
	}
}

func (s voloStem) proj() PatchEmbed {
	h2, w2 := s.half()
	p := s.patch / 2
	return PatchEmbed{Batch: s.batch, InChans: s.hidden, Height: h2, Width: w2, EmbedDim: s.embed, PatchH: p, PatchW: p, Bias: true}
}

func (s voloStem) outShape() bench.Shape {
	gh, gw := s.grid()
	return bench.Shape{s.batch, gh, gw, s.embed}
}

func (s voloStem) weights(prefix string) []bench.ArraySpec {
	var w []bench.ArraySpec
	for _, c := range s.convs() {
		n := c.node
		w = append(w, bench.ArraySpec{Name: fmt.Sprintf("%sconv.%d.weight", prefix, c.conv),
			Shape: bench.Shape{n.OutChans, n.InChans, n.KernelH, n.KernelW}})
		for _, field := range []string{"weight", "bias", "running_mean", "running_var"} {
			w = append(w, bench.ArraySpec{Name: fmt.Sprintf("%sconv.%d.%s", prefix, c.bn, field), Shape: bench.Shape{s.hidden}})
		}
	}
	p := s.patch / 2
	return append(w, bench.ArraySpec{Name: prefix + "proj.weight", Shape: bench.Shape{s.embed, s.hidden, p, p}},
		bench.ArraySpec{Name: prefix + "proj.bias", Shape: bench.Shape{s.embed}})
}

func (s voloStem) macs() int64 {
	var m int64
	for _, c := range s.convs() {
		n := c.node
		m += int64(n.Batch) * int64(n.OutChans) * int64(n.OutH()*n.OutW()) * int64(n.Cols())
	}
	gh, gw := s.grid()
	p := s.patch / 2
	return m + int64(s.batch)*int64(gh*gw)*int64(s.embed)*int64(s.hidden*p*p)
}

// steps appends the stem from the NCHW image in to the tokens out
// ([B, GH·GW, E], channels-last).
func (s voloStem) steps(g *bench.Graph, prefix, in, out string) {
	h2, w2 := s.half()
	g.Temp("stem.a", bench.Shape{s.batch, s.hidden, h2, w2})
	g.Temp("stem.b", bench.Shape{s.batch, s.hidden, h2, w2})
	cur := in
	for i, c := range s.convs() {
		next := []string{"stem.a", "stem.b", "stem.a"}[i]
		bn := fmt.Sprintf("%sconv.%d.", prefix, c.bn)
		g.Steps = append(g.Steps, bench.Step{Node: c.node,
			In: []string{cur, fmt.Sprintf("%sconv.%d.weight", prefix, c.conv), bn + "weight", bn + "bias",
				bn + "running_mean", bn + "running_var"}, Out: []string{next}})
		cur = next
	}
	g.Steps = append(g.Steps, bench.Step{Node: s.proj(), In: []string{cur, prefix + "proj.weight", prefix + "proj.bias"},
		Out: []string{out}})
}

// bufferParams counts the BatchNorm running statistics among weights:
// state-dict buffers, not parameters.
func bufferParams(w []bench.ArraySpec) int64 {
	var n int64
	for _, a := range w {
		if strings.HasSuffix(a.Name, ".running_mean") || strings.HasSuffix(a.Name, ".running_var") {
			n += a.Shape.Elems()
		}
	}
	return n
}

type voloStemKind struct{}

func (voloStemKind) Name() string { return "volo_stem" }
func (voloStemKind) Summary() string {
	return "VOLO PatchEmbed with the conv stem: 3× conv+BN+ReLU, 4×4 projection, channels-last tokens"
}

func (voloStemKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p VOLOStemParams
	if err := decodeStrict("volo_stem", raw, &p); err != nil {
		return nil, err
	}
	s, err := parseVOLOStem("volo_stem", batch, p)
	if err != nil {
		return nil, err
	}
	return &voloStemSpec{s: s}, nil
}

type voloStemSpec struct{ s voloStem }

func (s *voloStemSpec) Op() string { return "volo_stem" }
func (s *voloStemSpec) Inputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{s.s.batch, s.s.in, s.s.img[0], s.s.img[1]}}}
}
func (s *voloStemSpec) Weights() []bench.ArraySpec { return s.s.weights("") }
func (s *voloStemSpec) Outputs() []bench.ArraySpec {
	return []bench.ArraySpec{{Name: "out", Shape: s.s.outShape()}}
}
func (s *voloStemSpec) MACs() int64  { return s.s.macs() }
func (s *voloStemSpec) Bytes() int64 { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }

// Params counts the learned tensors: BatchNorm's running statistics are
// buffers and left out, as PyTorch's parameters() does.
func (s *voloStemSpec) Params() int64 {
	w := s.Weights()
	return bench.BytesOf(w)/4 - bufferParams(w)
}
func (s *voloStemSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.s.steps(g, "", "x", "out")
	return g
}

func init() { bench.RegisterOpKind(voloStemKind{}) }
