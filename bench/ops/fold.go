package ops

import (
	"encoding/json"

	"vitbench/bench"
)

// Fold is nn.Fold applied to token-major windows, the adjoint of Unfold
// (soft_split): x [B, L, C·KH·KW] (window l = oy·OW+ox, column
// c·KH·KW + ky·KW + kx) is summed into out [B, C, H, W], overlaps added,
// taps in the padding dropped. As a plain loop:
//
//	out = 0
//	for b, oy, ox, c, ky, kx:
//	  y := oy·SH − PH + ky·DH;  x := ox·SW − PW + kx·DW
//	  if inside: out[b, c, y, x] += x[b, oy·OW+ox, c·KH·KW + ky·KW + kx]
//
// VOLO's outlook attention folds its output this way.
type Fold struct{ Unfold }

// OpName implements bench.Node.
func (Fold) OpName() string { return "fold" }

type foldKind struct{}

func (foldKind) Name() string { return "fold" }
func (foldKind) Summary() string {
	return "nn.Fold of token-major windows [B, L, C·k·k] → [B, C, H, W], overlaps summed (VOLO)"
}

func (foldKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p SoftSplitParams
	if err := decodeStrict("fold", raw, &p); err != nil {
		return nil, err
	}
	u, err := parseWindows("fold", batch, p.InChans, p.ImgSize, p.KernelSize, p.Stride, p.Padding, p.Dilation)
	if err != nil {
		return nil, err
	}
	return &foldSpec{node: Fold{u}}, nil
}

type foldSpec struct{ node Fold }

func (s *foldSpec) Op() string { return "fold" }
func (s *foldSpec) Inputs() []bench.ArraySpec {
	u := s.node.Unfold
	return []bench.ArraySpec{{Name: "x", Shape: bench.Shape{u.Batch, u.OutH() * u.OutW(), u.Cols()}}}
}
func (s *foldSpec) Weights() []bench.ArraySpec { return nil }
func (s *foldSpec) Outputs() []bench.ArraySpec {
	u := s.node.Unfold
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{u.Batch, u.InChans, u.Height, u.Width}}}
}
func (s *foldSpec) MACs() int64   { return 0 }
func (s *foldSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Outputs()) }
func (s *foldSpec) Params() int64 { return 0 }
func (s *foldSpec) Graph() *bench.Graph {
	return &bench.Graph{Steps: []bench.Step{{Node: s.node, In: []string{"x"}, Out: []string{"out"}}}}
}

func init() { bench.RegisterOpKind(foldKind{}) }
