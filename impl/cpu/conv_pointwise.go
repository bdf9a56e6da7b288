package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// A pointwise (1×1, stride 1, no padding) convolution of an NCHW image is
// a matrix product as it stands: y[o, p] = Σ_c w[o, c]·x[c, p] + bias[o]
// over the H·W pixels p, the weight [O, C] read in place as the left
// operand and the image's [C, H·W] as the right one, packed per block of
// pixels (kern.Sgemm). The output is written in NCHW directly, where the
// implicit GEMM would gather the image into token-major rows and
// transpose its tokens back.

// usePointwise reports whether conv c runs as a pointwise product: 1×1,
// stride 1, no padding, at least pointwiseMinPixels pixels or at most
// pointwiseMaxNarrow output channels (and at most twice the input
// channels), on a SIMD path of the float32 backend, unless convPath
// forces a path.
func usePointwise(c ops.Conv2d, bf16 bool) bool {
	if kern.Active() == kern.ISAGo || bf16 || c.KernelH != 1 || c.KernelW != 1 || c.StrideH != 1 || c.StrideW != 1 ||
		c.PadH != 0 || c.PadW != 0 {
		return false
	}
	switch {
	case convForced("windows") || convForced("direct") || convForced("nopointwise"):
		return false
	case convForced("pointwise"):
		return true
	}
	return c.Height*c.Width >= pointwiseMinPixels || c.OutChans <= pointwiseMaxNarrow && c.OutChans <= 2*c.InChans
}

// pointwiseMinPixels is the fewest pixels per image for which a 1×1
// convolution runs as a pointwise product: enough blocks of pixels to
// share between the workers. Measured windows/pointwise on two threads
// (TestConvPointwiseAB, BN and ReLU): 1.14× for ResNet's 64→256 at 56×56
// with the residual, 1.30× for 64→64, 1.05× for 256→64, 0.99× for 256→128,
// 1.09× for 64→256 at batch 8; but 0.73-0.79× at 28×28 (four blocks) and
// 0.4-0.5× at 14×14 and 7×7 (one block: one worker).
const pointwiseMinPixels = 2048

// pointwiseMaxNarrow is the most output channels for which a 1×1
// convolution on a smaller map runs as a pointwise product too, when it
// has at most twice as many output channels as input channels: with the
// output channels split between the workers when the pixels are too few
// (channelParts), measured windows/pointwise on two threads, AVX2
// (TestConvPointwiseAB): 1.45× for 512→128 at 28×28, 1.23× for 512→256,
// 0.99× and, at batch 8, 1.98× for 1024→256 at 14×14, 1.4-2.3× for
// VQGAN's 32- and 64-channel ones at 16×16 and 32×32; the wider ones
// stay with the implicit GEMM (0.80-0.98× for 512 and 2048 output
// channels at 14×14 and 7×7, 0.85× for 128→512 at 28×28).
const pointwiseMaxNarrow = 256

// pointwiseCols is the most pixels one task multiplies: its output
// block (O rows of it) stays in L2 for the epilogue.
const pointwiseCols = 256

// pointwiseBlock returns the pixels per block of an image of hw pixels:
// at most pointwiseCols, in as many blocks as that takes rounded up to a
// multiple of the workers, the blocks equal to a column granule
// (pointwiseGranule). Blocks of exactly pointwiseCols left a 28×28 map
// (784 pixels) three full blocks and one of 16 pixels, so one worker
// multiplied 512 pixels and the other 272; now each takes two of 208 or
// 160.
func pointwiseBlock(hw, threads int) int {
	blocks := ceilDiv(hw, pointwiseCols)
	if blocks > 1 {
		blocks = ceilDiv(blocks, threads) * threads
	}
	return min(pointwiseCols, ceilDiv(ceilDiv(hw, blocks), pointwiseGranule)*pointwiseGranule)
}

// pointwiseGranule is the pixel granule of a block: the AVX-512
// microkernel's column vector.
const pointwiseGranule = 16

// conv2dPointwise runs the pointwise convolution c with the folded weight
// wf [O, C] and bias: workers take (image, block of pixels (pointwiseBlock),
// part of the output channels) tasks, each one product then, per output
// channel, the bias, the residual and the ReLU in one pass over the block's
// run of the plane (kern.BiasResidual). The output channels are split
// into parts only when there are fewer blocks than workers (a small map),
// so that every worker has a task; each part's worker packs the block's
// pixels for itself.
func (b *Backend) conv2dPointwise(c ops.Conv2d, wf, bias, x, y, res []float32) {
	hw, cin, o := c.Height*c.Width, c.InChans, c.OutChans
	cols := pointwiseBlock(hw, b.threads)
	blocks := ceilDiv(hw, cols)
	parts, partRows := channelParts(b.threads, c.Batch*blocks, o, pointwisePartRows)
	parallelFor(b.threads, c.Batch*blocks*parts, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			img, blk, part := task/(blocks*parts), task/parts%blocks, task%parts
			j0, o0 := blk*cols, part*partRows
			n, rows := min(cols, hw-j0), min(partRows, o-o0)
			out := y[(img*o+o0)*hw+j0:]
			kern.Sgemm(rows, n, cin, wf[o0*cin:], cin, x[img*cin*hw+j0:], hw, false, out, hw)
			for ch := o0; ch < o0+rows; ch++ {
				row := out[(ch-o0)*hw : (ch-o0)*hw+n]
				var r []float32
				if res != nil {
					at := (img*o+ch)*hw + j0
					r = res[at : at+n]
				}
				kern.BiasResidual(n, bias[ch], row, r, row, c.ReLU)
			}
		}
	})
}

// pointwisePartRows is the granule of a part of the output channels: a
// multiple of every microkernel's row tile.
const pointwisePartRows = 12

// pointwiseTapsMaxOut is the most output channels for which the pointwise
// product packs its weight once and reads the image's rows in place
// (conv2dPointwiseTaps) instead of packing each block of pixels per call.
// Measured packed/in-place on two threads (a 2-vCPU Xeon, BN and ReLU,
// interleaved): 1.36× for 64→64 at 56×56, 1.30× at 16×16, 1.61× for
// 64→32 at 32×32, 1.09× for 256→64 at 56×56; but 0.99× for 256→128 and
// 0.91–0.94× for 64→256 with the residual (at 56×56 and batch 8) and
// 256→512 at 28×28. In one process, the networks alternating run by
// run: vq_encoder_small 1.04×, vqgan_small 1.03×, vq_decoder_small and
// clip_rn50 1.01×.
const pointwiseTapsMaxOut = 64

// conv2dPointwiseTaps is conv2dPointwise with the weight packed once (pa)
// and the image's rows read in place as the right operand
// (kern.SgemmTapsRows, tap c at row c of the image): nothing is packed per
// call. Each task's product goes to a worker's tile, from which
// kern.BiasResidual writes the outputs; a block whose rounded-up columns
// would read past the input's end is copied first.
func (b *Backend) conv2dPointwiseTaps(c ops.Conv2d, pa *kern.PackedA, bias, x, y, res []float32) {
	hw, cin, o := c.Height*c.Width, c.InChans, c.OutChans
	cols := pointwiseBlock(hw, b.threads)
	blocks := ceilDiv(hw, cols)
	parts, partRows := channelParts(b.threads, c.Batch*blocks, pa.Rows(), pointwisePartRows)
	nt := ceilDiv(cols, pa.ColTile()) * pa.ColTile()
	taps, edgeTaps := make([]int, cin), make([]int, cin)
	for ch := range taps {
		taps[ch], edgeTaps[ch] = ch*hw, ch*nt
	}
	tasks := c.Batch * blocks * parts
	threads := min(b.threads, tasks)
	per := partRows*nt + cin*nt
	buf, release := b.scratch(threads * per)
	defer release()
	parallelWorkers(threads, tasks, 1, func(w, lo, hi int) {
		tile, edge := buf[w*per:w*per+partRows*nt], buf[w*per+partRows*nt:(w+1)*per]
		for task := lo; task < hi; task++ {
			img, blk, part := task/(blocks*parts), task/parts%blocks, task%parts
			j0, o0 := blk*cols, part*partRows
			n := min(cols, hw-j0)
			r1 := min(o0+partRows, pa.Rows())
			src, tp := x[img*cin*hw+j0:], taps
			if img == c.Batch-1 && j0+nt > hw {
				for ch := 0; ch < cin; ch++ {
					row := edge[ch*nt : (ch+1)*nt]
					clear(row[copy(row, x[(img*cin+ch)*hw+j0:(img*cin+ch+1)*hw]):])
				}
				src, tp = edge, edgeTaps
			}
			kern.SgemmTapsRows(pa, o0, r1, src, tp, n, tile, nt)
			for ch := o0; ch < min(r1, o); ch++ {
				at := (img*o+ch)*hw + j0
				var r []float32
				if res != nil {
					r = res[at : at+n]
				}
				kern.BiasResidual(n, bias[ch], tile[(ch-o0)*nt:][:n], r, y[at:at+n], c.ReLU)
			}
		}
	})
}
