package ops

import (
	"encoding/json"
	"fmt"

	"vitbench/bench"
)

// Conv2d is nn.Conv2d (one group), optionally followed by BatchNorm2d in
// eval mode and ReLU: the VOLO stem's conv–BN–ReLU and ResNet's blocks.
// Input x [B, C, H, W]; output out [B, O, OH, OW] (NCHW). As a plain loop:
//
//	for b, o, oy, ox:
//	  acc := bias[o] (0 without bias)
//	  for c, ky, kx: acc += x[b, c, oy·SH−PH+ky·DH, ox·SW−PW+kx·DW] · w[o, c, ky, kx]  (0 outside)
//	  if BN:   acc = (acc − mean[o]) / √(var[o] + eps) · gamma[o] + beta[o]
//	  if Residual: acc += res[b, o, oy, ox]
//	  if ReLU: acc = max(acc, 0)
//	  out[b, o, oy, ox] = acc
//
// State-dict names: conv.weight, conv.bias, bn.weight, bn.bias,
// bn.running_mean, bn.running_var (PyTorch's bn.num_batches_tracked does
// not take part in eval and is not a fixture array).
type Conv2d struct {
	Unfold   // the input geometry and the windows
	OutChans int
	Bias     bool
	BN       bool
	BNEps    float64
	ReLU     bool
	// Residual adds one more input, res [B, O, OH, OW], after the
	// BatchNorm and before the ReLU: out = relu(bn(conv(x)) + res), the end
	// of a ResNet bottleneck. Graphs use it; conv2d cases do not.
	Residual bool
}

// OpName implements bench.Node.
func (Conv2d) OpName() string { return "conv2d" }

// ResidualInput is the index of res among the node's inputs: after x, w,
// the bias when it has one and BatchNorm's four arrays when it has them.
func (c Conv2d) ResidualInput() int {
	n := 2
	if c.Bias {
		n++
	}
	if c.BN {
		n += 4
	}
	return n
}

// Conv2dParams is the JSON form of a conv2d case.
type Conv2dParams struct {
	InChans    int      `json:"in_chans"`
	OutChans   int      `json:"out_chans"`
	ImgSize    Pair     `json:"img_size"`
	KernelSize Pair     `json:"kernel_size"`
	Stride     *Pair    `json:"stride,omitempty"`
	Padding    *Pair    `json:"padding,omitempty"`
	Dilation   *Pair    `json:"dilation,omitempty"`
	Bias       *bool    `json:"bias,omitempty"`
	BN         *bool    `json:"bn,omitempty"`
	BNEps      *float64 `json:"bn_eps,omitempty"`
	ReLU       *bool    `json:"relu,omitempty"`
}

type conv2dKind struct{}

func (conv2dKind) Name() string { return "conv2d" }
func (conv2dKind) Summary() string {
	return "nn.Conv2d [+ BatchNorm2d (eval, folded) + ReLU], NCHW: VOLO stem, ResNet blocks"
}

func orBool(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func (conv2dKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p Conv2dParams
	if err := decodeStrict("conv2d", raw, &p); err != nil {
		return nil, err
	}
	geom, err := parseWindows("conv2d", batch, p.InChans, p.ImgSize, p.KernelSize, p.Stride, p.Padding, p.Dilation)
	if err != nil {
		return nil, err
	}
	if err := positive("conv2d", "out_chans", p.OutChans); err != nil {
		return nil, err
	}
	if err := checkDims("conv2d", "out_chans", p.OutChans); err != nil {
		return nil, err
	}
	c := Conv2d{Unfold: geom, OutChans: p.OutChans, BN: orBool(p.BN, false), ReLU: orBool(p.ReLU, false), BNEps: 1e-5}
	// A conv followed by BatchNorm has no bias of its own, by convention.
	c.Bias = orBool(p.Bias, !c.BN)
	if p.BNEps != nil {
		if !c.BN || !(*p.BNEps > 0) {
			return nil, fmt.Errorf("conv2d params: bn_eps needs bn and must be positive")
		}
		c.BNEps = *p.BNEps
	}
	return &conv2dSpec{node: c}, nil
}

type conv2dSpec struct{ node Conv2d }

func (s *conv2dSpec) Op() string { return "conv2d" }

func (s *conv2dSpec) Inputs() []bench.ArraySpec {
	u := s.node.Unfold
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{u.Batch, u.InChans, u.Height, u.Width}}}
}

func (s *conv2dSpec) Weights() []bench.ArraySpec {
	c := s.node
	o := bench.Shape{c.OutChans}
	w := []bench.ArraySpec{{Name: "conv.weight", Shape: bench.Shape{c.OutChans, c.InChans, c.KernelH, c.KernelW}}}
	if c.Bias {
		w = append(w, bench.ArraySpec{Name: "conv.bias", Shape: o})
	}
	if c.BN {
		w = append(w, bench.ArraySpec{Name: "bn.weight", Shape: o}, bench.ArraySpec{Name: "bn.bias", Shape: o},
			bench.ArraySpec{Name: "bn.running_mean", Shape: o}, bench.ArraySpec{Name: "bn.running_var", Shape: o})
	}
	return w
}

func (s *conv2dSpec) Outputs() []bench.ArraySpec {
	c := s.node
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{c.Batch, c.OutChans, c.OutH(), c.OutW()}}}
}

func (s *conv2dSpec) MACs() int64 {
	c := s.node
	return int64(c.Batch) * int64(c.OutChans) * int64(c.OutH()*c.OutW()) * int64(c.Cols())
}

func (s *conv2dSpec) Bytes() int64 { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }

func (s *conv2dSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }

func (s *conv2dSpec) Graph() *bench.Graph {
	var in []string
	for _, a := range s.Inputs() {
		in = append(in, a.Name)
	}
	for _, a := range s.Weights() {
		in = append(in, a.Name)
	}
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: in, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(conv2dKind{}) }
