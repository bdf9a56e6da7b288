package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// AvgPool2d is nn.AvgPool2d on x [B, C, H, W] → out [B, C, OH, OW], with
// PyTorch's rules for ceil mode and the divisor:
//
//	OH = ⌊(H + 2·PH − KH + (SH−1 if ceil)) / SH⌋ + 1, less one if the last
//	     window would start at or past H + PH (likewise OW)
//	for each window: y0 = oy·SH − PH, y1 = min(y0 + KH, H + PH) (likewise x)
//	  size = (y1 − y0)·(x1 − x0)                      (padding included)
//	  clip y0, x0 to 0 and y1, x1 to H, W; sum the pixels inside
//	  out = sum / (size if CountIncludePad else (y1 − y0)·(x1 − x0))
type AvgPool2d struct {
	Batch, Chans, Height, Width int
	KH, KW, SH, SW, PH, PW      int
	Ceil, CountIncludePad       bool
}

// OpName implements bench.Node.
func (AvgPool2d) OpName() string { return "avg_pool2d" }

func poolOut(size, k, s, p int, ceil bool) int {
	num := size + 2*p - k
	if ceil {
		num += s - 1
	}
	out := num/s + 1
	if ceil && (out-1)*s >= size+p {
		out--
	}
	return out
}

// OutH is the number of output rows.
func (a AvgPool2d) OutH() int { return poolOut(a.Height, a.KH, a.SH, a.PH, a.Ceil) }

// OutW is the number of output columns.
func (a AvgPool2d) OutW() int { return poolOut(a.Width, a.KW, a.SW, a.PW, a.Ceil) }

// AvgPoolParams is the JSON form of an avg_pool2d case.
type AvgPoolParams struct {
	Chans           int   `json:"chans"`
	ImgSize         Pair  `json:"img_size"`
	KernelSize      Pair  `json:"kernel_size"`
	Stride          *Pair `json:"stride,omitempty"` // default: kernel_size, as PyTorch
	Padding         *Pair `json:"padding,omitempty"`
	CeilMode        *bool `json:"ceil_mode,omitempty"`
	CountIncludePad *bool `json:"count_include_pad,omitempty"`
}

type avgPoolKind struct{}

func (avgPoolKind) Name() string { return "avg_pool2d" }
func (avgPoolKind) Summary() string {
	return "nn.AvgPool2d with ceil_mode and count_include_pad as PyTorch computes them"
}

func (avgPoolKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p AvgPoolParams
	if err := decodeStrict("avg_pool2d", raw, &p); err != nil {
		return nil, err
	}
	stride := p.KernelSize
	if p.Stride != nil {
		stride = *p.Stride
	}
	pad := orPair(p.Padding, 0)
	if err := positive("avg_pool2d", "batch", batch, "chans", p.Chans, "img_size", p.ImgSize,
		"kernel_size", p.KernelSize, "stride", stride); err != nil {
		return nil, err
	}
	if err := checkDims("avg_pool2d", "batch", batch, "chans", p.Chans, "img_size", p.ImgSize,
		"kernel_size", p.KernelSize, "stride", stride, "padding", pad); err != nil {
		return nil, err
	}
	// PyTorch: "pad should be at most half of effective kernel size".
	if pad[0] < 0 || pad[1] < 0 || 2*pad[0] > p.KernelSize[0] || 2*pad[1] > p.KernelSize[1] {
		return nil, fmt.Errorf("avg_pool2d params: padding %v must be between 0 and half the kernel %v", pad, p.KernelSize)
	}
	a := AvgPool2d{Batch: batch, Chans: p.Chans, Height: p.ImgSize[0], Width: p.ImgSize[1],
		KH: p.KernelSize[0], KW: p.KernelSize[1], SH: stride[0], SW: stride[1], PH: pad[0], PW: pad[1],
		Ceil: orBool(p.CeilMode, false), CountIncludePad: orBool(p.CountIncludePad, true)}
	if a.OutH() < 1 || a.OutW() < 1 {
		return nil, fmt.Errorf("avg_pool2d params: kernel %v does not fit image %v with padding %v", p.KernelSize, p.ImgSize, pad)
	}
	return &avgPoolSpec{node: a}, nil
}

type avgPoolSpec struct{ node AvgPool2d }

func (s *avgPoolSpec) Op() string { return "avg_pool2d" }
func (s *avgPoolSpec) Inputs() []bench.ArraySpec {
	a := s.node
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{a.Batch, a.Chans, a.Height, a.Width}}}
}
func (s *avgPoolSpec) Weights() []bench.ArraySpec { return nil }
func (s *avgPoolSpec) Outputs() []bench.ArraySpec {
	a := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{a.Batch, a.Chans, a.OutH(), a.OutW()}}}
}
func (s *avgPoolSpec) MACs() int64   { return 0 }
func (s *avgPoolSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Outputs()) }
func (s *avgPoolSpec) Params() int64 { return 0 }
func (s *avgPoolSpec) Graph() *bench.Graph {
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: []string{"x"}, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(avgPoolKind{}) }
