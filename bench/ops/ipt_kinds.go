package ops

import (
	"encoding/json"

	"vitbench/bench"
)

// The IPT op kinds: the network (ipt), its tiled evaluation (ipt_chop) and
// its components (mean_shift, ipt_head, ipt_tail, ipt_encoder_layer,
// ipt_decoder_layer), each a graph built by type ipt.

// iptSpec is a resolved IPT case: its arrays, its graph and its MACs.
type iptSpec struct {
	op                      string
	inputs, weights, output []bench.ArraySpec
	macs                    int64
	graph                   func(g *bench.Graph)
}

func (s *iptSpec) Op() string                 { return s.op }
func (s *iptSpec) Inputs() []bench.ArraySpec  { return s.inputs }
func (s *iptSpec) Weights() []bench.ArraySpec { return s.weights }
func (s *iptSpec) Outputs() []bench.ArraySpec { return s.output }
func (s *iptSpec) MACs() int64                { return s.macs }
func (s *iptSpec) Bytes() int64               { return bench.BytesOf(s.inputs, s.weights, s.output) }
func (s *iptSpec) Params() int64              { return bench.BytesOf(s.weights) / 4 }
func (s *iptSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	s.graph(g)
	return g
}

// iptKind is one IPT op kind; parse builds its spec.
type iptKind struct {
	name, summary string
	parse         func(op string, raw json.RawMessage, batch int) (*iptSpec, error)
}

func (k iptKind) Name() string    { return k.name }
func (k iptKind) Summary() string { return k.summary }
func (k iptKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	s, err := k.parse(k.name, raw, batch)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// IPTChopParams is the JSON form of an ipt_chop case: the ipt params and
// the whole image's size.
type IPTChopParams struct {
	IPTParams
	ImgSize Pair `json:"img_size"`
}

// IPTPartParams is the JSON form of the component cases: the ipt params
// the part depends on, and for the convolutional parts the map size.
type IPTPartParams struct {
	IPTParams
	ImgSize *Pair `json:"img_size,omitempty"` // mean_shift, ipt_head, ipt_tail: default [patch_size, patch_size]
}

func parseIPT(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	var p IPTParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	c, err := p.resolve(op, batch)
	if err != nil {
		return nil, err
	}
	s, pp := c.scale(), c.patch
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "x", Shape: bench.Shape{batch, 3, pp, pp}}}, weights: c.weights(),
		output: []bench.ArraySpec{{Name: "out", Shape: bench.Shape{batch, 3, pp * s, pp * s}}}, macs: c.macs(),
		graph: func(g *bench.Graph) { c.steps(g, "x", "out") }}, nil
}

func parseIPTChop(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	var p IPTChopParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	if _, err := p.IPTParams.resolve(op, batch); err != nil {
		return nil, err
	}
	if err := checkDims(op, "img_size", p.ImgSize); err != nil {
		return nil, err
	}
	pc, _ := p.IPTParams.resolve(op, 1)
	h, w := p.ImgSize[0], p.ImgSize[1]
	if h < pc.patch || w < pc.patch {
		return nil, errorf("%s params: img_size [%d, %d] is smaller than the %d×%d tile", op, h, w, pc.patch, pc.patch)
	}
	if pc.patch%4 != 0 {
		return nil, errorf("%s params: patch_size %d: forward_chop steps a quarter tile, so it must be a multiple of 4", op, pc.patch)
	}
	ch := Chop{Batch: batch, Chans: 3, Height: h, Width: w, Patch: pc.patch, Scale: pc.scale()}
	if ch.Tiles()*batch > maxDim {
		return nil, errorf("%s params: %d tiles is too many", op, ch.Tiles()*batch)
	}
	c, _ := p.IPTParams.resolve(op, batch*ch.Tiles())
	s := c.scale()
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "x", Shape: bench.Shape{batch, 3, h, w}}}, weights: c.weights(),
		output: []bench.ArraySpec{{Name: "out", Shape: bench.Shape{batch, 3, h * s, w * s}}}, macs: c.macs(),
		graph: func(g *bench.Graph) {
			pp, ps := c.patch, c.patch*s
			g.Temp("chop.tiles", bench.Shape{c.batch, 3, pp, pp})
			g.Temp("chop.out", bench.Shape{c.batch, 3, ps, ps})
			g.Steps = append(g.Steps, bench.Step{Node: ChopTiles{ch}, In: []string{"x"}, Out: []string{"chop.tiles"}})
			c.steps(g, "chop.tiles", "chop.out")
			g.Steps = append(g.Steps, bench.Step{Node: ChopStitch{ch}, In: []string{"chop.out"}, Out: []string{"out"}})
		}}, nil
}

// parsePart resolves a component case: the ipt params and the map size.
func parsePart(op string, raw json.RawMessage, batch int) (*ipt, int, int, error) {
	var p IPTPartParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, 0, 0, err
	}
	c, err := p.IPTParams.resolve(op, batch)
	if err != nil {
		return nil, 0, 0, err
	}
	h, w := c.patch, c.patch
	if p.ImgSize != nil {
		if err := positive(op, "img_size", *p.ImgSize); err != nil {
			return nil, 0, 0, err
		}
		if err := checkDims(op, "img_size", *p.ImgSize); err != nil {
			return nil, 0, 0, err
		}
		h, w = p.ImgSize[0], p.ImgSize[1]
	}
	return c, h, w, nil
}

func parseMeanShift(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	c, h, w, err := parsePart(op, raw, batch)
	if err != nil {
		return nil, err
	}
	img := bench.Shape{batch, 3, h, w}
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "x", Shape: img}},
		weights: []bench.ArraySpec{{Name: "weight", Shape: bench.Shape{3, 3, 1, 1}}, {Name: "bias", Shape: bench.Shape{3}}},
		output:  []bench.ArraySpec{{Name: "out", Shape: img}}, macs: int64(batch) * int64(h) * int64(w) * 9,
		graph: func(g *bench.Graph) {
			g.Steps = append(g.Steps, bench.Step{Node: MeanShift{Batch: c.batch, Chans: 3, Pixels: h * w}, In: []string{"x", "weight", "bias"}, Out: []string{"out"}})
		}}, nil
}

func parseHead(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	c, h, w, err := parsePart(op, raw, batch)
	if err != nil {
		return nil, err
	}
	macs := conv3(batch, 3, c.feats, h, w, 3).macsOf() + 4*conv3(batch, c.feats, c.feats, h, w, 5).macsOf()
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "x", Shape: bench.Shape{batch, 3, h, w}}}, weights: c.headWeights(""),
		output: []bench.ArraySpec{{Name: "out", Shape: bench.Shape{batch, c.feats, h, w}}}, macs: macs,
		graph: func(g *bench.Graph) { c.headSteps(g, "", "x", "out", h, w) }}, nil
}

func parseTail(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	c, h, w, err := parsePart(op, raw, batch)
	if err != nil {
		return nil, err
	}
	s := c.scale()
	var macs int64
	n, r := upsampleSteps(s)
	hh, ww := h, w
	for i := 0; i < n; i++ {
		macs += conv3(batch, c.feats, c.feats*r*r, hh, ww, 3).macsOf()
		hh, ww = hh*r, ww*r
	}
	macs += conv3(batch, c.feats, 3, hh, ww, 3).macsOf()
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "x", Shape: bench.Shape{batch, c.feats, h, w}}}, weights: c.tailWeights("", s),
		output: []bench.ArraySpec{{Name: "out", Shape: bench.Shape{batch, 3, h * s, w * s}}}, macs: macs,
		graph: func(g *bench.Graph) { c.tailSteps(g, "", s, "x", "out", h, w) }}, nil
}

func parseEncoderLayer(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	var p IPTParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	c, err := p.resolve(op, batch)
	if err != nil {
		return nil, err
	}
	b, s, d := int64(batch), int64(c.tokens()), int64(c.dim())
	tok := bench.Shape{batch, c.tokens(), c.dim()}
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "x", Shape: tok}}, weights: c.encoderWeights(""),
		output: []bench.ArraySpec{{Name: "out", Shape: tok}}, macs: b*s*d*3*d + 2*b*s*s*d + b*s*d*d + 8*b*s*d*d,
		graph: func(g *bench.Graph) { c.encoderLayerSteps(g, "", "x", "out") }}, nil
}

func parseDecoderLayer(op string, raw json.RawMessage, batch int) (*iptSpec, error) {
	var p IPTParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	c, err := p.resolve(op, batch)
	if err != nil {
		return nil, err
	}
	b, s, d := int64(batch), int64(c.tokens()), int64(c.dim())
	tok := bench.Shape{batch, c.tokens(), c.dim()}
	return &iptSpec{op: op, inputs: []bench.ArraySpec{{Name: "tgt", Shape: tok}, {Name: "memory", Shape: tok}},
		weights: append(c.decoderWeights(""), bench.ArraySpec{Name: "query_pos", Shape: bench.Shape{c.tokens(), c.dim()}}),
		output:  []bench.ArraySpec{{Name: "out", Shape: tok}}, macs: 2*(b*s*d*3*d+2*b*s*s*d+b*s*d*d) + 8*b*s*d*d,
		graph: func(g *bench.Graph) { c.decoderLayerSteps(g, "", "tgt", "memory", "query_pos", "out") }}, nil
}

func init() {
	for _, k := range []iptKind{
		{"ipt", "IPT (Pretrained-IPT): mean shift, conv + ResBlock head, bias-free pre-norm transformer over 3×3 patches of a 48×48 map, upsampler tail; one task", parseIPT},
		{"ipt_chop", "IPT's tiled evaluation (forward_chop): 48×48 tiles every 12 px, central crops averaged, bottom/right strips at the last full tile", parseIPTChop},
		{"mean_shift", "IPT's MeanShift: frozen 1×1 conv over RGB (identity, ∓rgb_range·mean)", parseMeanShift},
		{"ipt_head", "IPT's head: 3×3 conv then two ResBlocks of 5×5 convs", parseHead},
		{"ipt_tail", "IPT's tail: Upsampler (3×3 conv + PixelShuffle ×2, ×3 or none) then a 3×3 conv to RGB", parseTail},
		{"ipt_encoder_layer", "IPT's pre-norm encoder layer: bias-free nn.MultiheadAttention, ReLU MLP", parseEncoderLayer},
		{"ipt_decoder_layer", "IPT's pre-norm decoder layer: self- and cross-attention (bias-free) with the task query on q (and k), ReLU MLP", parseDecoderLayer},
	} {
		bench.RegisterOpKind(k)
	}
}
