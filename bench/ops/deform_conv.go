package ops

import (
	"encoding/json"

	"vitbench/bench"
)

// DeformConv2d is torchvision.ops.deform_conv2d (docs/reference-notes.md,
// "Deformable convolution"):
// input x [B, C, H, W], offset [B, 2·G·KH·KW, OH, OW], and when Mask a
// modulation mask [B, G·KH·KW, OH, OW] (G offset groups); weight
// [O, C/Groups, KH, KW] and bias [O]; output out [B, O, OH, OW]. As a plain
// loop, with tap k = ky·KW + kx and input channel c in offset group
// g = c / (C/G) and weight group gw = o / (O/Groups):
//
//	for b, o, oy, ox:
//	  acc := bias[o] (0 without bias)
//	  for c in group gw, ky, kx:
//	    y := oy·SH − PH + ky·DH + offset[b, g·2·KH·KW + 2k,     oy, ox]   (dy first)
//	    x := ox·SW − PW + kx·DW + offset[b, g·2·KH·KW + 2k + 1, oy, ox]   (then dx)
//	    m := mask[b, g·KH·KW + k, oy, ox] (1 without mask)
//	    acc += w[o, c − gw·C/Groups, ky, kx] · m · bilinear(x[b, c], y, x)
//	  out[b, o, oy, ox] = acc
//
// bilinear is zero when y ≤ −1, y ≥ H, x ≤ −1 or x ≥ W, and otherwise reads
// each of the four corners around (y, x) as zero outside the image:
// integer pixel centres, unlike MSDeformAttn's loc·size − 0.5.
type DeformConv2d struct {
	Unfold
	OutChans, Groups, OffsetGroups int
	Bias, Mask                     bool
}

// OpName implements bench.Node.
func (DeformConv2d) OpName() string { return "deform_conv2d" }

// Taps is KH·KW.
func (d DeformConv2d) Taps() int { return d.KernelH * d.KernelW }

// MACs counts the convolution proper, B·O·OH·OW·(C/Groups)·KH·KW, as the
// Deformable ConvNets papers do; the bilinear sampling adds about 4·C·KH·KW
// per output pixel.
func (d DeformConv2d) MACs() int64 {
	return int64(d.Batch) * int64(d.OutChans) * int64(d.OutH()) * int64(d.OutW()) *
		int64(d.InChans/d.Groups) * int64(d.Taps())
}

// DeformConv2dParams is the JSON form of a deform_conv2d case.
type DeformConv2dParams struct {
	InChans      int   `json:"in_chans"`
	OutChans     int   `json:"out_chans"`
	ImgSize      Pair  `json:"img_size"`
	KernelSize   Pair  `json:"kernel_size"`
	Stride       *Pair `json:"stride,omitempty"`
	Padding      *Pair `json:"padding,omitempty"`
	Dilation     *Pair `json:"dilation,omitempty"`
	Groups       int   `json:"groups,omitempty"`        // default 1
	OffsetGroups int   `json:"offset_groups,omitempty"` // default 1
	Bias         *bool `json:"bias,omitempty"`          // default true
	Mask         *bool `json:"mask,omitempty"`          // default true (DCNv2)
}

type deformConvKind struct{}

func (deformConvKind) Name() string { return "deform_conv2d" }
func (deformConvKind) Summary() string {
	return "torchvision deform_conv2d: bilinear sampling at learned (dy, dx) offsets, optional mask (DCNv2), groups"
}

func (deformConvKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	const op = "deform_conv2d"
	var p DeformConv2dParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	geom, err := parseWindows(op, batch, p.InChans, p.ImgSize, p.KernelSize, p.Stride, p.Padding, p.Dilation)
	if err != nil {
		return nil, err
	}
	if p.Groups == 0 {
		p.Groups = 1
	}
	if p.OffsetGroups == 0 {
		p.OffsetGroups = 1
	}
	if err := positive(op, "out_chans", p.OutChans, "groups", p.Groups, "offset_groups", p.OffsetGroups); err != nil {
		return nil, err
	}
	if err := checkDims(op, "out_chans", p.OutChans); err != nil {
		return nil, err
	}
	switch {
	case p.InChans%p.Groups != 0:
		return nil, errorf("%s params: in_chans %d is not a multiple of groups %d", op, p.InChans, p.Groups)
	case p.OutChans%p.Groups != 0:
		return nil, errorf("%s params: out_chans %d is not a multiple of groups %d", op, p.OutChans, p.Groups)
	case p.InChans%p.OffsetGroups != 0:
		return nil, errorf("%s params: in_chans %d is not a multiple of offset_groups %d", op, p.InChans, p.OffsetGroups)
	}
	d := DeformConv2d{Unfold: geom, OutChans: p.OutChans, Groups: p.Groups, OffsetGroups: p.OffsetGroups,
		Bias: orBool(p.Bias, true), Mask: orBool(p.Mask, true)}
	return &deformConvSpec{d}, nil
}

type deformConvSpec struct{ node DeformConv2d }

func (s *deformConvSpec) Op() string { return "deform_conv2d" }
func (s *deformConvSpec) Inputs() []bench.ArraySpec {
	d := s.node
	oh, ow, g, t := d.OutH(), d.OutW(), d.OffsetGroups, d.Taps()
	in := []bench.ArraySpec{
		{Name: "x", Shape: bench.Shape{d.Batch, d.InChans, d.Height, d.Width}},
		{Name: "offset", Shape: bench.Shape{d.Batch, 2 * g * t, oh, ow}},
	}
	if d.Mask {
		in = append(in, bench.ArraySpec{Name: "mask", Shape: bench.Shape{d.Batch, g * t, oh, ow}})
	}
	return in
}
func (s *deformConvSpec) Weights() []bench.ArraySpec {
	d := s.node
	w := []bench.ArraySpec{{Name: "weight", Shape: bench.Shape{d.OutChans, d.InChans / d.Groups, d.KernelH, d.KernelW}}}
	if d.Bias {
		w = append(w, bench.ArraySpec{Name: "bias", Shape: bench.Shape{d.OutChans}})
	}
	return w
}
func (s *deformConvSpec) Outputs() []bench.ArraySpec {
	d := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{d.Batch, d.OutChans, d.OutH(), d.OutW()}}}
}
func (s *deformConvSpec) MACs() int64   { return s.node.MACs() }
func (s *deformConvSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *deformConvSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *deformConvSpec) Graph() *bench.Graph {
	in := make([]string, 0, 5)
	for _, a := range s.Inputs() {
		in = append(in, a.Name)
	}
	for _, a := range s.Weights() {
		in = append(in, a.Name)
	}
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: in, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(deformConvKind{}) }
