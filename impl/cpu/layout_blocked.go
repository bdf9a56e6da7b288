package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
	"vitbench/internal/mutation"
)

// Between the convolutions of a ResNet the float32 backend may keep an
// activation in the channel-blocked layout NCHW16c (kern.BlockLanes
// channels side by side per pixel; see kern.ConvBlockedTile) instead of
// NCHW: a tensor's blocked flag says which layout its data is in. Only
// the nodes that read and write that layout (blocked convolutions, the
// 2×2 average pool, ResNet's 3×3 max pool, GroupNorm, VQGAN's padding
// and upsampling, the
// flattening of feature maps into tokens, a patch embedding; readsBlocked) see a blocked
// tensor; Enqueue turns it
// back into NCHW in place before any other node reads it or writes over
// it, and Download before it is copied out, so the layout never shows
// outside the backend.

// readsBlocked reports whether node takes its input i in the blocked
// layout when in is that input: a convolution's image or residual when
// it runs blocked (useBlocked), the image of a blocked average or max
// pool.
func (b *Backend) readsBlocked(node bench.Node, in []*tensor, i int) bool {
	switch n := node.(type) {
	case ops.Conv2d:
		return (i == 0 || n.Residual && i == len(in)-1) && b.useBlocked(n, in[0].blocked)
	case ops.AvgPool2d:
		return i == 0 && in[0].blocked && blockedPoolable(n)
	case ops.MaxPool2d:
		return i == 0 && in[0].blocked && blockedMaxPoolable(n)
	case ops.GroupNorm:
		return i == 0 && b.useBlockedGroupNorm(n, in[0].blocked)
	case ops.PadRightBottom, ops.UpsampleNearest2x, ops.FlattenLevels:
		return true
	case ops.PatchEmbed:
		return i == 0 && in[0].blocked && patchEmbedBlockable(n)
	}
	return false
}

// writesBlocked reports whether node may write its outputs in the
// blocked layout (it then sets their flags itself).
func writesBlocked(node bench.Node) bool {
	switch node.(type) {
	case ops.Conv2d, ops.AvgPool2d, ops.MaxPool2d, ops.GroupNorm, ops.PadRightBottom, ops.UpsampleNearest2x:
		return true
	}
	return false
}

// unblock turns t's data from the blocked layout back into NCHW in place.
func (b *Backend) unblock(t *tensor) {
	if !t.blocked {
		return
	}
	n, c, hw := blockedDims(t.shape)
	tmp, release := b.scratch(len(t.data))
	defer release()
	b.fromBlocked(n, c, hw, t.data, tmp)
	copy(t.data, tmp)
	t.blocked = false
}

// blockedLayout reports whether this backend keeps activations blocked
// at all: the AVX-512 path of the float32 backend, and of the bf16 one on
// a CPU with AVX512_BF16 whose bf16 GEMM does not run on AMX tiles (its
// blocked convolutions run kern.ConvBlockedTileBF16, whose VDPBF16PS
// would be slower than the AMX GEMM), in a build without mutations (which
// rewrite NCHW nodes) and unless nchwOnly.
func (b *Backend) blockedLayout() bool {
	if b.bf16 && (!kern.HasBF16() || kern.BF16OnAMX()) {
		return false
	}
	return !mutation.Enabled && !b.nchwOnly && kern.Active() == kern.ISAAVX512
}

// blockedUnit is the floats per pixel of one plane of t: 16 channels when
// t is blocked, one otherwise.
func blockedUnit(t *tensor) int {
	if t.blocked {
		return kern.BlockLanes
	}
	return 1
}

// blockedDims returns an NCHW shape's batch, channels and pixels.
func blockedDims(s bench.Shape) (n, c, hw int) {
	return int(s[0]), int(s[1]), int(s[2] * s[3])
}

// toBlocked writes the n images of c channels (a multiple of 16) and hw
// pixels in src (NCHW) into dst in the blocked layout:
//
//	dst[((i·c/16 + ch/16)·hw + p)·16 + ch%16] = src[(i·c + ch)·hw + p]
func (b *Backend) toBlocked(n, c, hw int, src, dst []float32) {
	const l = kern.BlockLanes
	blocks := n * c / l
	parallelFor(b.conversionThreads(n*c*hw), blocks, 1, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			kern.Transpose(l, hw, src[k*l*hw:(k+1)*l*hw], hw, dst[k*l*hw:(k+1)*l*hw], l)
		}
	})
}

// fromBlocked is toBlocked's inverse.
func (b *Backend) fromBlocked(n, c, hw int, src, dst []float32) {
	const l = kern.BlockLanes
	blocks := n * c / l
	parallelFor(b.conversionThreads(n*c*hw), blocks, 1, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			kern.Transpose(hw, l, src[k*l*hw:(k+1)*l*hw], l, dst[k*l*hw:(k+1)*l*hw], hw)
		}
	})
}

// conversionThreads is the workers a layout conversion of n values
// takes: one below 64 Ki values, where waking the other costs more.
func (b *Backend) conversionThreads(n int) int {
	if n < 1<<16 {
		return 1
	}
	return b.threads
}

// blockedPoolable reports whether the average pool a runs on a blocked
// image: 2×2 windows of stride 2 without padding (ModifiedResNet's
// anti-aliased downsampling), whole channel blocks.
func blockedPoolable(a ops.AvgPool2d) bool {
	return a.KH == 2 && a.KW == 2 && a.SH == 2 && a.SW == 2 && a.PH == 0 && a.PW == 0 && !a.Ceil &&
		a.Chans%kern.BlockLanes == 0
}

// avgPoolBlocked is avgPool on a blocked image, written blocked:
// each output pixel's 16 channels are the mean of the 2×2 input pixels
// under it, summed in avgPool's order (kern.AvgPool2x2BlockedRow). The
// output rows are numbered row, then plane, so that each worker pools a
// range of rows in every block, as the pixel-major convolutions around it
// split their rows (pixelMajorConv): clip_rn50 1.001× and 1.003× on cpu,
// 1.009× and 1.015× on cpu-bf16 against numbering plane, then row
// (alternating run by run, 80 pairs).
func (b *Backend) avgPoolBlocked(a ops.AvgPool2d, x, y []float32) {
	const l = kern.BlockLanes
	oh, ow := a.OutH(), a.OutW()
	planes := a.Batch * a.Chans / l
	in, out := a.Height*a.Width*l, oh*ow*l
	parallelFor(b.conversionThreads(a.Batch*a.Chans*a.Height*a.Width), planes*oh, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			p, row := r%planes, r/planes
			src := x[p*in+2*row*a.Width*l:]
			kern.AvgPool2x2BlockedRow(ow, src[:a.Width*l], src[a.Width*l:2*a.Width*l], y[p*out+row*ow*l:p*out+(row+1)*ow*l])
		}
	})
}

// blockedTokens writes pixels [p0, p1) of one blocked image src of chans
// channels and hw pixels as token rows of dst [hw, chans]: a pixel's 16
// channels of a block go to its token as one run of 16,
//
//	dst[p·chans + cb·16 + l] = src[(cb·hw + p)·16 + l]
func blockedTokens(chans, hw, p0, p1 int, src, dst []float32) {
	const l = kern.BlockLanes
	for p := p0; p < p1; p++ {
		row := dst[p*chans : (p+1)*chans]
		for cb := 0; cb < chans/l; cb++ {
			*(*[l]float32)(row[cb*l:]) = *(*[l]float32)(src[(cb*hw+p)*l:])
		}
	}
}
