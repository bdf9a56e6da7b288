package cuda

import (
	"fmt"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// Enqueue implements bench.Backend: it checks the tensors against the
// node, then queues the node's kernels and cuBLAS calls on the stream
// from the device thread. Nothing waits for the device here.
func (b *Backend) Enqueue(node bench.Node, in, out []bench.Tensor) error {
	if err := b.ready(); err != nil {
		return err
	}
	if err := b.Supports(node.OpName(), bench.Float32); err != nil {
		return err
	}
	din, err := b.deviceAll(in)
	if err != nil {
		return err
	}
	dout, err := b.deviceAll(out)
	if err != nil {
		return err
	}
	run, err := b.plan(node, din, dout)
	if err != nil {
		return err
	}
	if err := b.run(run); err != nil {
		return fmt.Errorf("%s: %s: %w", b.name, node.OpName(), err)
	}
	return nil
}

func (b *Backend) deviceAll(ts []bench.Tensor) ([]*tensor, error) {
	out := make([]*tensor, len(ts))
	for i, t := range ts {
		d, err := b.device(t)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}

// plan checks the node's tensors and returns the function that queues its
// work on the device thread.
func (b *Backend) plan(node bench.Node, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.Gemm:
		return b.gemm(n, in, out)
	case ops.AttentionCore:
		return b.attentionCore(n, in, out)
	case ops.MHACore:
		return b.mhaCore(n, in, out)
	case ops.MeanShift, ops.PixelShuffle, ops.ChopTiles, ops.ChopStitch:
		return b.iptNode(n, in, out)
	case ops.PatchEmbed:
		return b.patchEmbed(n, in, out)
	case ops.Conv2d:
		return b.conv2d(n, in, out)
	case ops.PerformerCore:
		return b.performerCore(n, in, out)
	case ops.DeformConv2d:
		return b.deformConv2d(n, in, out)
	case ops.Unfold:
		return b.unfold(n, in, out)
	case ops.Fold:
		return b.fold(n, in, out)
	case ops.AvgPool2d:
		return b.avgPool(n, in, out)
	case ops.MaxPool2d:
		return b.maxPool(n, in, out)
	case ops.LayerNorm:
		return b.layerNorm(n, in, out)
	case ops.GroupNorm:
		return b.groupNorm(n, in, out)
	case ops.MSDeformCore:
		return b.msDeformCore(n, in, out)
	case ops.MSDeformSample:
		return b.msDeformSample(n, in, out)
	case ops.TokensPrefix, ops.TakeToken, ops.Average, ops.Reshape, ops.TokensToImage, ops.Add, ops.Sigmoid,
		ops.ReLU, ops.QueryEmbed, ops.MergeQKV, ops.SplitColumns, ops.FlattenLevels, ops.LevelEmbed:
		return b.dataNode(n, in, out)
	case ops.ValidRatios, ops.EncoderRefPoints, ops.ScaleRefs, ops.LevelMasks, ops.PositionSine, ops.BoxDecode,
		ops.PostProcess, ops.Proposals, ops.ZeroInvalid, ops.TopKRows, ops.ProposalPosEmbed:
		return b.detrNode(n, in, out)
	case ops.AvgPoolNHWC, ops.OutlookCore, ops.PatchRowsNHWC, ops.AddBroadcast, ops.PrependToken, ops.PutToken,
		ops.ClassAttnCore, ops.AuxMerge:
		return b.voloNode(n, in, out)
	case ops.TokenEmbed, ops.EOTPool, ops.ClipLogits, ops.AttnPoolTokens:
		return b.clipNode(n, in, out)
	case ops.Concat, ops.DETRQueries, ops.DETRPostProcess, ops.RowSlice:
		return b.detrTransformerNode(n, in, out)
	case ops.PadRightBottom, ops.UpsampleNearest2x, ops.VectorQuantize:
		return b.vqganNode(n, in, out)
	}
	return nil, fmt.Errorf("%s: no kernel for op %q (node %T)", b.name, node.OpName(), node)
}

// checkElems verifies that the tensors have the element counts the node
// derives (row-wise nodes accept any shape holding the same values), and
// returns a node-named error otherwise.
func checkElems(op, role string, ts []*tensor, want ...int64) error {
	if len(ts) != len(want) {
		return fmt.Errorf("cuda: %s takes %d %s tensors here, got %d", op, len(want), role, len(ts))
	}
	for i, t := range ts {
		if t.elems() != want[i] {
			return fmt.Errorf("cuda: %s %s tensor %d has shape %v (%d values), want %d values", op, role, i, t.shape, t.elems(), want[i])
		}
	}
	return nil
}

// at returns the device address of element off of t.
func at(t *tensor, off int64) uint64 { return t.ptr + uint64(off)*4 }

// ptrOrNil is t's address, or 0 (a null pointer) when t is nil.
func ptrOrNil(t *tensor) uint64 {
	if t == nil {
		return 0
	}
	return t.ptr
}

// i32 converts a dimension for a kernel's int parameter.
func i32(v int) int32 { return int32(v) }
