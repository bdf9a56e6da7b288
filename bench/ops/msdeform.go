package ops

import (
	"encoding/json"
	"fmt"
	"slices"

	"vitbench/bench"
)

// Level is one feature map of a multi-scale value tensor: its height and
// width and the row of the flattened value [N, S, ...] where it starts.
type Level struct{ H, W, Start int }

// LevelsOf lays out levels of the given (H, W) one after another.
func LevelsOf(shapes ...[2]int) []Level {
	out := make([]Level, len(shapes))
	start := 0
	for i, hw := range shapes {
		out[i] = Level{H: hw[0], W: hw[1], Start: start}
		start += hw[0] * hw[1]
	}
	return out
}

// MSDeformCore is Deformable DETR's multi-scale deformable attention core
// (ms_deform_attn_core_pytorch; docs/reference-notes.md, "Deformable
// attention sampling"). From value
// [N, S, M, D], sampling locations [N, Lq, M, L, P, 2] (normalized x, y)
// and attention weights [N, Lq, M, L, P] it computes out [N, Lq, M·D]:
//
//	for n, q, m, d:
//	  out[n, q, m·D+d] = Σ_l Σ_p A[n,q,m,l,p] · bilinear(value level l, head m, channel d,
//	                                                     y = loc_y·H_l − 0.5, x = loc_x·W_l − 0.5)
//
// where bilinear reads each of the four corners (⌊y⌋ or ⌊y⌋+1, ⌊x⌋ or
// ⌊x⌋+1) as zero when it lies outside [0, H_l−1]×[0, W_l−1]: exactly
// grid_sample(bilinear, zeros, align_corners=False).
type MSDeformCore struct {
	Batch, Queries, Heads, HeadDim, Points int
	Levels                                 []Level
}

// OpName implements bench.Node.
func (MSDeformCore) OpName() string { return "ms_deform_attn_core" }

// Values is S, the number of value rows (Σ H_l·W_l).
func (c MSDeformCore) Values() int {
	last := c.Levels[len(c.Levels)-1]
	return last.Start + last.H*last.W
}

// Samples is the number of (n, q, m, l, p) sampling points.
func (c MSDeformCore) Samples() int64 {
	return int64(c.Batch) * int64(c.Queries) * int64(c.Heads) * int64(len(c.Levels)) * int64(c.Points)
}

// MACs counts bilinear sampling as 5 multiply-accumulates per channel per
// point (four corners and the attention weight), as in docs/reference-notes.md,
// "Deformable DETR counts".
func (c MSDeformCore) MACs() int64 { return c.Samples() * int64(c.HeadDim) * 5 }

// MSDeformSample is MSDeformAttn between its projections, fused: from the
// projected value [N, S, M·D], the reference points [N, Lq, L, R], the
// sampling-offset projection [N, Lq, M·L·P·2] and the attention-weight
// logits [N, Lq, M·L·P], and when Masked a padding mask [N, S] (nonzero =
// padding, whose value rows count as zero), it computes, per (n, q, m):
//
//	A[l, p] = softmax over all L·P of logits[n, q, m·L·P + l·P + p]
//	R = 2:  loc = ref[n, q, l] + off[n, q, m, l, p] / (W_l, H_l)
//	R = 4:  loc = ref[n, q, l, :2] + off[n, q, m, l, p] / P · ref[n, q, l, 2:] · 0.5
//
// and then MSDeformCore with those locations and weights.
type MSDeformSample struct {
	MSDeformCore
	RefDims int
	Masked  bool
}

// OpName implements bench.Node.
func (MSDeformSample) OpName() string { return "ms_deform_attn" }

// MSDeformCoreParams is the JSON form of an ms_deform_attn_core case.
type MSDeformCoreParams struct {
	Queries         int      `json:"queries"`
	Heads           int      `json:"heads"`
	HeadDim         int      `json:"head_dim"`
	Points          int      `json:"points"`
	SpatialShapes   [][2]int `json:"spatial_shapes"`
	LevelStartIndex []int    `json:"level_start_index,omitempty"`
}

// parseLevels checks spatial_shapes and, when given, level_start_index
// against it, and returns the levels.
func parseLevels(op string, shapes [][2]int, starts []int) ([]Level, error) {
	if len(shapes) == 0 {
		return nil, errorf("%s params: spatial_shapes lists no levels (want [[H, W], ...])", op)
	}
	if len(shapes) > 64 {
		return nil, errorf("%s params: spatial_shapes lists %d levels, at most 64 are supported", op, len(shapes))
	}
	levels := make([]Level, len(shapes))
	want := make([]int, len(shapes))
	start := 0
	for i, hw := range shapes {
		if hw[0] <= 0 || hw[1] <= 0 || hw[0] > maxDim || hw[1] > maxDim {
			return nil, errorf("%s params: spatial_shapes[%d] = [%d, %d]: each size must be in 1..%d", op, i, hw[0], hw[1], maxDim)
		}
		levels[i] = Level{H: hw[0], W: hw[1], Start: start}
		want[i] = start
		start += hw[0] * hw[1]
		if start > maxDim {
			return nil, errorf("%s params: spatial_shapes add up to more than %d value rows", op, maxDim)
		}
	}
	if starts != nil && !slices.Equal(starts, want) {
		return nil, errorf("%s params: level_start_index %v disagrees with spatial_shapes %v (want %v)", op, starts, shapes, want)
	}
	return levels, nil
}

func parseCore(op string, batch, queries, heads, headDim, points int, shapes [][2]int, starts []int) (MSDeformCore, error) {
	if err := positive(op, "batch", batch, "queries", queries, "heads", heads, "head_dim", headDim, "points", points); err != nil {
		return MSDeformCore{}, err
	}
	if err := checkDims(op, "batch", batch, "queries", queries, "heads", heads, "head_dim", headDim, "points", points); err != nil {
		return MSDeformCore{}, err
	}
	levels, err := parseLevels(op, shapes, starts)
	if err != nil {
		return MSDeformCore{}, err
	}
	c := MSDeformCore{Batch: batch, Queries: queries, Heads: heads, HeadDim: headDim, Points: points, Levels: levels}
	if int64(heads)*int64(len(levels))*int64(points)*2 > maxDim || int64(heads)*int64(headDim) > maxDim {
		return MSDeformCore{}, errorf("%s params: heads·levels·points or heads·head_dim is larger than %d", op, maxDim)
	}
	return c, nil
}

type msDeformCoreKind struct{}

func (msDeformCoreKind) Name() string { return "ms_deform_attn_core" }
func (msDeformCoreKind) Summary() string {
	return "Deformable DETR multi-scale deformable sampling: Σ_l,p A·bilinear(value, loc) per head (grid_sample semantics)"
}

func (msDeformCoreKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	var p MSDeformCoreParams
	if err := decodeStrict("ms_deform_attn_core", raw, &p); err != nil {
		return nil, err
	}
	c, err := parseCore("ms_deform_attn_core", batch, p.Queries, p.Heads, p.HeadDim, p.Points, p.SpatialShapes, p.LevelStartIndex)
	if err != nil {
		return nil, err
	}
	return &msDeformCoreSpec{c}, nil
}

type msDeformCoreSpec struct{ c MSDeformCore }

func (s *msDeformCoreSpec) Op() string { return "ms_deform_attn_core" }
func (s *msDeformCoreSpec) Inputs() []bench.ArraySpec {
	c := s.c
	l := len(c.Levels)
	return []bench.ArraySpec{
		{Name: "value", Shape: bench.Shape{c.Batch, c.Values(), c.Heads, c.HeadDim}},
		{Name: "sampling_locations", Shape: bench.Shape{c.Batch, c.Queries, c.Heads, l, c.Points, 2}},
		{Name: "attention_weights", Shape: bench.Shape{c.Batch, c.Queries, c.Heads, l, c.Points}},
	}
}
func (s *msDeformCoreSpec) Weights() []bench.ArraySpec { return nil }
func (s *msDeformCoreSpec) Outputs() []bench.ArraySpec {
	c := s.c
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{c.Batch, c.Queries, c.Heads * c.HeadDim}}}
}
func (s *msDeformCoreSpec) MACs() int64   { return s.c.MACs() }
func (s *msDeformCoreSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Outputs()) }
func (s *msDeformCoreSpec) Params() int64 { return 0 }
func (s *msDeformCoreSpec) Graph() *bench.Graph {
	return &bench.Graph{Steps: []bench.Step{{Node: s.c,
		In: []string{"value", "sampling_locations", "attention_weights"}, Out: []string{"out"}}}}
}

// MSDeformAttnParams is the JSON form of an ms_deform_attn case (the whole
// MSDeformAttn module of Deformable DETR).
type MSDeformAttnParams struct {
	Queries         int      `json:"queries"`
	DModel          int      `json:"d_model"`
	Heads           int      `json:"heads"`
	HeadDim         int      `json:"head_dim,omitempty"` // default d_model / heads
	Points          int      `json:"points"`
	SpatialShapes   [][2]int `json:"spatial_shapes"`
	LevelStartIndex []int    `json:"level_start_index,omitempty"`
	RefDims         int      `json:"ref_dims,omitempty"` // 2 (points) or 4 (boxes); default 2
	PaddingMask     bool     `json:"padding_mask,omitempty"`
}

type msDeformAttnKind struct{}

func (msDeformAttnKind) Name() string { return "ms_deform_attn" }
func (msDeformAttnKind) Summary() string {
	return "Deformable DETR MSDeformAttn: value/offset/weight projections, joint softmax, deformable sampling, output projection"
}

func (msDeformAttnKind) Parse(raw json.RawMessage, batch int) (bench.Spec, error) {
	const op = "ms_deform_attn"
	var p MSDeformAttnParams
	if err := decodeStrict(op, raw, &p); err != nil {
		return nil, err
	}
	if err := positive(op, "d_model", p.DModel, "heads", p.Heads); err != nil {
		return nil, err
	}
	if p.HeadDim == 0 {
		if p.DModel%p.Heads != 0 {
			return nil, errorf("%s params: d_model %d is not a multiple of heads %d", op, p.DModel, p.Heads)
		}
		p.HeadDim = p.DModel / p.Heads
	}
	if int64(p.Heads)*int64(p.HeadDim) != int64(p.DModel) {
		return nil, errorf("%s params: heads·head_dim = %d·%d differs from d_model %d", op, p.Heads, p.HeadDim, p.DModel)
	}
	if p.RefDims == 0 {
		p.RefDims = 2
	}
	if p.RefDims != 2 && p.RefDims != 4 {
		return nil, errorf("%s params: ref_dims must be 2 (points) or 4 (boxes), got %d", op, p.RefDims)
	}
	c, err := parseCore(op, batch, p.Queries, p.Heads, p.HeadDim, p.Points, p.SpatialShapes, p.LevelStartIndex)
	if err != nil {
		return nil, err
	}
	return &msDeformAttnSpec{node: MSDeformSample{MSDeformCore: c, RefDims: p.RefDims, Masked: p.PaddingMask}, dModel: p.DModel}, nil
}

type msDeformAttnSpec struct {
	node   MSDeformSample
	dModel int
}

func (s *msDeformAttnSpec) Op() string { return "ms_deform_attn" }
func (s *msDeformAttnSpec) Inputs() []bench.ArraySpec {
	c, d := s.node.MSDeformCore, s.dModel
	in := []bench.ArraySpec{
		{Name: "query", Shape: bench.Shape{c.Batch, c.Queries, d}},
		{Name: "reference_points", Shape: bench.Shape{c.Batch, c.Queries, len(c.Levels), s.node.RefDims}},
		{Name: "input_flatten", Shape: bench.Shape{c.Batch, c.Values(), d}},
	}
	if s.node.Masked {
		in = append(in, bench.ArraySpec{Name: "padding_mask", Shape: bench.Shape{c.Batch, c.Values()}})
	}
	return in
}

// samplingColumns is M·L·P, the number of attention weights per query.
func (s *msDeformAttnSpec) samplingColumns() int {
	c := s.node.MSDeformCore
	return c.Heads * len(c.Levels) * c.Points
}

func (s *msDeformAttnSpec) Weights() []bench.ArraySpec {
	return msdaWeights("", s.dModel, s.samplingColumns())
}
func (s *msDeformAttnSpec) Outputs() []bench.ArraySpec {
	c := s.node.MSDeformCore
	return []bench.ArraySpec{{Name: "out", Shape: bench.Shape{c.Batch, c.Queries, s.dModel}}}
}

// MACs counts the four projections and the sampling.
func (s *msDeformAttnSpec) MACs() int64   { return msdaMACs(s.node.MSDeformCore, s.dModel) }
func (s *msDeformAttnSpec) Bytes() int64  { return bench.BytesOf(s.Inputs(), s.Weights(), s.Outputs()) }
func (s *msDeformAttnSpec) Params() int64 { return bench.BytesOf(s.Weights()) / 4 }
func (s *msDeformAttnSpec) Graph() *bench.Graph {
	g := &bench.Graph{}
	mask := ""
	if s.node.Masked {
		mask = "padding_mask"
	}
	msdaSteps(g, s.node, s.dModel, "", "query", "reference_points", "input_flatten", mask, "out", "")
	return g
}

// msdaSteps appends MSDeformAttn's sub-graph: the value projection of
// valueIn, the offset and weight projections of query, the fused sampling
// with refs (and the padding mask when mask is not ""), and the output
// projection into out, plus residual when it is not "". Weights are under
// prefix; the intermediates "msda.*" are shared by every such sub-graph
// of a graph with the same shapes.
func msdaSteps(g *bench.Graph, node MSDeformSample, dModel int, prefix, query, refs, valueIn, mask, out, residual string) {
	c, d := node.MSDeformCore, dModel
	k := c.Heads * len(c.Levels) * c.Points
	tag := fmt.Sprintf("msda.q%d.", c.Queries)
	g.Temp("msda.value", bench.Shape{c.Batch, c.Values(), d})
	g.Temp(tag+"offsets", bench.Shape{c.Batch, c.Queries, 2 * k})
	g.Temp(tag+"logits", bench.Shape{c.Batch, c.Queries, k})
	g.Temp(tag+"ctx", bench.Shape{c.Batch, c.Queries, d})
	sampleIn := []string{"msda.value", refs, tag + "offsets", tag + "logits"}
	node.Masked = mask != ""
	if node.Masked {
		sampleIn = append(sampleIn, mask)
	}
	projIn := []string{tag + "ctx", prefix + "output_proj.weight", prefix + "output_proj.bias"}
	if residual != "" {
		projIn = append(projIn, residual)
	}
	g.Steps = append(g.Steps,
		bench.Step{Node: Gemm{Batch: c.Batch, M: c.Values(), N: d, K: d, TransB: true, Bias: true},
			In: []string{valueIn, prefix + "value_proj.weight", prefix + "value_proj.bias"}, Out: []string{"msda.value"}},
		bench.Step{Node: Gemm{Batch: c.Batch, M: c.Queries, N: 2 * k, K: d, TransB: true, Bias: true},
			In: []string{query, prefix + "sampling_offsets.weight", prefix + "sampling_offsets.bias"}, Out: []string{tag + "offsets"}},
		bench.Step{Node: Gemm{Batch: c.Batch, M: c.Queries, N: k, K: d, TransB: true, Bias: true},
			In: []string{query, prefix + "attention_weights.weight", prefix + "attention_weights.bias"}, Out: []string{tag + "logits"}},
		bench.Step{Node: node, In: sampleIn, Out: []string{tag + "ctx"}},
		bench.Step{Node: Gemm{Batch: c.Batch, M: c.Queries, N: d, K: d, TransB: true, Bias: true, Residual: residual != ""},
			In: projIn, Out: []string{out}})
}

// msdaWeights lists MSDeformAttn's weights under prefix.
func msdaWeights(prefix string, dModel, samplingColumns int) []bench.ArraySpec {
	d, k := dModel, samplingColumns
	return []bench.ArraySpec{
		{Name: prefix + "sampling_offsets.weight", Shape: bench.Shape{2 * k, d}}, {Name: prefix + "sampling_offsets.bias", Shape: bench.Shape{2 * k}},
		{Name: prefix + "attention_weights.weight", Shape: bench.Shape{k, d}}, {Name: prefix + "attention_weights.bias", Shape: bench.Shape{k}},
		{Name: prefix + "value_proj.weight", Shape: bench.Shape{d, d}}, {Name: prefix + "value_proj.bias", Shape: bench.Shape{d}},
		{Name: prefix + "output_proj.weight", Shape: bench.Shape{d, d}}, {Name: prefix + "output_proj.bias", Shape: bench.Shape{d}},
	}
}

// msdaMACs counts MSDeformAttn's four projections and its sampling.
func msdaMACs(c MSDeformCore, dModel int) int64 {
	d, k := int64(dModel), int64(c.Heads*len(c.Levels)*c.Points)
	nq, ns := int64(c.Batch)*int64(c.Queries), int64(c.Batch)*int64(c.Values())
	return ns*d*d + nq*d*3*k + nq*d*d + c.MACs()
}

// String describes the levels for error messages.
func (c MSDeformCore) String() string {
	return fmt.Sprintf("ms_deform_attn_core(N=%d, Lq=%d, M=%d, D=%d, P=%d, levels=%v)", c.Batch, c.Queries, c.Heads, c.HeadDim, c.Points, c.Levels)
}

func init() {
	bench.RegisterOpKind(msDeformCoreKind{})
	bench.RegisterOpKind(msDeformAttnKind{})
}
