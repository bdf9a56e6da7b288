package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// Unfold is nn.Unfold followed by transpose(1, 2): T2T-ViT's soft split.
// Input x [B, C, H, W]; output out [B, OH·OW, C·KH·KW], windows row-major,
// zero padding. As a plain loop:
//
//	for b, oy, ox, c, ky, kx:
//	  y := oy·SH − PH + ky·DH;  x := ox·SW − PW + kx·DW
//	  out[b, oy·OW+ox, c·KH·KW + ky·KW + kx] = x[b, c, y, x] if inside, else 0
type Unfold struct {
	Batch, InChans, Height, Width int
	KernelH, KernelW              int
	StrideH, StrideW              int
	PadH, PadW                    int
	DilationH, DilationW          int
}

// OpName implements bench.Node.
func (Unfold) OpName() string { return "soft_split" }

// OutH is the number of window rows.
func (u Unfold) OutH() int { return (u.Height+2*u.PadH-u.DilationH*(u.KernelH-1)-1)/u.StrideH + 1 }

// OutW is the number of window columns.
func (u Unfold) OutW() int { return (u.Width+2*u.PadW-u.DilationW*(u.KernelW-1)-1)/u.StrideW + 1 }

// Cols is the length of one output token, C·KH·KW.
func (u Unfold) Cols() int { return u.InChans * u.KernelH * u.KernelW }

// SoftSplitParams is the JSON form of a soft_split case.
type SoftSplitParams struct {
	InChans    int   `json:"in_chans"`
	ImgSize    Pair  `json:"img_size"`
	KernelSize Pair  `json:"kernel_size"`
	Stride     *Pair `json:"stride,omitempty"`
	Padding    *Pair `json:"padding,omitempty"`
	Dilation   *Pair `json:"dilation,omitempty"`
}

type softSplitKind struct{}

func (softSplitKind) Name() string { return "soft_split" }
func (softSplitKind) Summary() string {
	return "nn.Unfold + transpose(1, 2): T2T-ViT soft split, token-major [B, L, C·k·k]"
}

func orPair(p *Pair, def int) Pair {
	if p == nil {
		return Pair{def, def}
	}
	return *p
}

func (softSplitKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p SoftSplitParams
	if err := decodeStrict("soft_split", raw, &p); err != nil {
		return nil, err
	}
	u, err := parseWindows("soft_split", batch, p.InChans, p.ImgSize, p.KernelSize, p.Stride, p.Padding, p.Dilation)
	if err != nil {
		return nil, err
	}
	return &softSplitSpec{node: u}, nil
}

// parseWindows validates the window hyper-parameters shared by unfold and
// convolution (PyTorch defaults: stride 1, padding 0, dilation 1) and
// returns the geometry.
func parseWindows(op string, batch, inChans int, img, kernel Pair, strideP, padP, dilP *Pair) (Unfold, error) {
	stride, pad, dil := orPair(strideP, 1), orPair(padP, 0), orPair(dilP, 1)
	if err := positive(op, "batch", batch, "in_chans", inChans, "img_size", img,
		"kernel_size", kernel, "stride", stride, "dilation", dil); err != nil {
		return Unfold{}, err
	}
	if pad[0] < 0 || pad[1] < 0 {
		return Unfold{}, fmt.Errorf("%s params: padding must not be negative, got %v", op, pad)
	}
	if err := checkDims(op, "batch", batch, "in_chans", inChans, "img_size", img,
		"kernel_size", kernel, "stride", stride, "padding", pad, "dilation", dil); err != nil {
		return Unfold{}, err
	}
	u := Unfold{
		Batch: batch, InChans: inChans, Height: img[0], Width: img[1],
		KernelH: kernel[0], KernelW: kernel[1], StrideH: stride[0], StrideW: stride[1],
		PadH: pad[0], PadW: pad[1], DilationH: dil[0], DilationW: dil[1],
	}
	if u.Height+2*u.PadH-u.DilationH*(u.KernelH-1)-1 < 0 || u.Width+2*u.PadW-u.DilationW*(u.KernelW-1)-1 < 0 {
		return Unfold{}, fmt.Errorf("%s params: the dilated kernel %v (dilation %v) does not fit the padded image %v (padding %v)",
			op, kernel, dil, img, pad)
	}
	return u, nil
}

type softSplitSpec struct{ node Unfold }

func (s *softSplitSpec) Op() string { return "soft_split" }

func (s *softSplitSpec) Inputs() []bench.ArraySpec {
	u := s.node
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{u.Batch, u.InChans, u.Height, u.Width}}}
}

func (s *softSplitSpec) Weights() []bench.ArraySpec { return nil }

func (s *softSplitSpec) Outputs() []bench.ArraySpec {
	u := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{u.Batch, u.OutH() * u.OutW(), u.Cols()}}}
}

func (s *softSplitSpec) MACs() int64   { return 0 }
func (s *softSplitSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Outputs()) }
func (s *softSplitSpec) Params() int64 { return 0 }

func (s *softSplitSpec) Graph() *bench.Graph {
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: []string{"x"}, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(softSplitKind{}) }
