package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// A pointwise (1×1, stride 1, no padding) convolution of an NCHW image is
// a matrix product as it stands: y[o, p] = Σ_c w[o, c]·x[c, p] + bias[o]
// over the H·W pixels p, the weight [O, C] read in place as the left
// operand and the image's [C, H·W] as the right one. The output is
// written in NCHW directly, where the implicit GEMM would gather the image
// into token-major rows and transpose its tokens back.

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
	case convForced("pointwise") || convForced("pointwisetaps"):
		return true
	}
	return c.Height*c.Width >= pointwiseMinPixels || c.OutChans <= pointwiseMaxNarrow && c.OutChans <= 2*c.InChans
}

// pointwiseMinPixels is the fewest pixels per image (14×14) for which a
// 1×1 convolution runs as a pointwise product whatever its channels.
// Measured implicit GEMM / pointwise on two threads with the inputs,
// residuals and outputs cold, as in a network (a 2-vCPU Xeon, BN and
// ReLU): 1.44× for 128→512 at 28×28 with the residual, 1.45× for 256→512
// at 28×28, 1.10× for 256→1024 at 14×14 with the residual (1.13× at batch
// 8), 1.0× for 512→1024 and 1024→512 at 14×14; but 0.82-0.88× at 7×7
// (512→2048, 2048→512), which stay with the implicit GEMM unless narrow.
const pointwiseMinPixels = 196

// pointwiseMaxNarrow is the most output channels for which a 1×1
// convolution on a smaller map runs as a pointwise product too, when it
// has at most twice as many output channels as input channels: with the
// output channels split between the workers when the pixels are too few
// (channelParts), measured windows/pointwise on two threads, AVX2
// (TestConvPointwiseAB): 1.45× for 512→128 at 28×28, 1.23× for 512→256,
// 0.99× and, at batch 8, 1.98× for 1024→256 at 14×14, 1.4-2.3× for
// VQGAN's 32- and 64-channel ones at 16×16 and 32×32, and, cold on the
// Xeon, 1.18× for 512→512 at 8×8 (batch 2).
const pointwiseMaxNarrow = 256

// pointwiseMaxCols is the most pixels one task multiplies, and
// pointwiseMaxB the most values of the image (channels × pixels) one task
// packs: about 1 MiB, which stays in L2 while every output channel is
// multiplied by it.
const (
	pointwiseMaxCols = 1568
	pointwiseMaxB    = 1 << 18
)

// pointwiseGroup is how many output channels the pointwise product
// computes across a task's pixels before finishing them (bias, residual,
// ReLU) and going on to the next: two row tiles of the AVX-512
// microkernel. Cold, 12 and 24 ran alike; 48 rows (48 streams of output
// in flight) ran 1.1-1.3× slower at 56×56.
const pointwiseGroup = 24

// pointwiseTasks splits the pixels of each of batch images of hw pixels
// into blocks of cols pixels for a product of depth cin: at most
// pointwiseMaxCols, and pointwiseMaxB/cin (but at least 256) pixels, in a
// number of blocks over the whole batch rounded up to a multiple of the
// workers, so that they get equal shares; a map of fewer than 256 pixels
// per worker is one block (its output channels are split instead,
// channelParts).
func pointwiseTasks(batch, hw, cin, threads int) (cols, blocks int) {
	most := max(256, min(pointwiseMaxCols, pointwiseMaxB/cin))
	blocks = ceilDiv(hw, most)
	if blocks > 1 || hw >= threads*256 {
		blocks = max(1, ceilDiv(blocks*batch, threads)*threads/batch)
	}
	cols = ceilDiv(ceilDiv(hw, blocks), pointwiseGranule) * pointwiseGranule
	return cols, ceilDiv(hw, cols)
}

// pointwiseGranule is the pixel granule of a block: the AVX-512
// microkernel's column vector.
const pointwiseGranule = 16

// conv2dPointwise runs the pointwise convolution c with the folded weight
// wf [O, C] and bias. Workers take (image, block of pixels, part of the
// output channels) tasks (pointwiseTasks; the output channels are split
// into parts only when there are fewer blocks than workers). A task packs
// its block of the image once, then for each group of pointwiseGroup
// output channels multiplies their weights by the whole block and
// finishes those outputs with the bias, the residual and the ReLU in one
// pass (kern.SgemmRowGroups, kern.BiasResidual):
//
//	for o, p: y[o, p] = relu?(bias[o] + Σ_c wf[o, c]·x[c, p] + res[o, p])
//
// So the outputs are written, and the residual read, as a few long
// sequential runs at a time, which the hardware prefetchers follow. The
// earlier order, all output channels for one tile of 32 pixels after
// another, touched a short run of every output channel's plane (each in
// its own page) per tile, and in a network, where the residual and the
// output are not in cache, ran 1.5-1.8× slower at 56×56 and 1.2-1.45×
// at 28×28 (clip_rn50 1.07× and detr_r50_small_b2 1.05× faster as a
// whole, in one process, the two orders alternating run by run).
func (b *Backend) conv2dPointwise(c ops.Conv2d, wf, bias, x, y, res []float32) {
	hw, cin, o := c.Height*c.Width, c.InChans, c.OutChans
	cols, blocks := pointwiseTasks(c.Batch, hw, cin, b.threads)
	parts, partRows := channelParts(b.threads, c.Batch*blocks, o, pointwisePartRows)
	parallelFor(b.threads, c.Batch*blocks*parts, 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			img, blk, part := task/(blocks*parts), task/parts%blocks, task%parts
			j0, o0 := blk*cols, part*partRows
			n, rows := min(cols, hw-j0), min(partRows, o-o0)
			at := (img*o+o0)*hw + j0 // output (o0, j0) of image img
			out := y[at:]
			var r []float32
			if res != nil {
				r = res[at:]
			}
			kern.SgemmRowGroups(rows, n, cin, wf[o0*cin:], cin, x[img*cin*hw+j0:], hw, out, hw, pointwiseGroup, func(i0, i1 int) {
				for i := i0; i < i1; i++ {
					var ri []float32
					if r != nil {
						ri = r[i*hw : i*hw+n]
					}
					row := out[i*hw : i*hw+n]
					kern.BiasResidual(n, bias[o0+i], row, ri, row, c.ReLU)
				}
			})
		}
	})
}

// pointwisePartRows is the granule of a part of the output channels: a
// multiple of every microkernel's row tile.
const pointwisePartRows = 12

// pointwiseTapsMaxOut is the most output channels, and
// pointwiseTapsMaxBytes the largest image (bytes per image), for which the
// pointwise product packs its weight once and reads the image's rows in
// place (conv2dPointwiseTaps) instead of packing each block of pixels per
// call. Measured packed/in-place on two threads (a 2-vCPU Xeon, BN and
// ReLU, interleaved, warm): 1.36× for 64→64 at 56×56, 1.30× at 16×16,
// 1.61× for 64→32 at 32×32, 1.09× for 256→64 at 56×56; but 0.99× for
// 256→128 and 0.91–0.94× for 64→256 with the residual (at 56×56 and batch
// 8) and 256→512 at 28×28. Cold, against conv2dPointwise's channel groups,
// the in-place rows lose on large images: 0.77× for 256→64 at 56×56 (3.2
// MB), 0.57× for 64→64 at 56×56 (0.8 MB), 0.76× for 512→64 at 28×28; in one
// process, the networks alternating run by run, the groups ran clip_rn50
// 1.02× faster and VQGAN's small networks (images of at most 512 KiB)
// 0.98-1.01×.
const (
	pointwiseTapsMaxOut   = 64
	pointwiseTapsMaxBytes = 512 << 10
)

// pointwiseTapsCols is the most pixels one task of conv2dPointwiseTaps
// multiplies: its output block (O rows of it) stays in L2 for the epilogue.
const pointwiseTapsCols = 256

// pointwiseTapsBlock returns the pixels per block of conv2dPointwiseTaps
// for an image of hw pixels: at most pointwiseTapsCols, in as many blocks
// as that takes rounded up to a multiple of the workers, the blocks equal
// to a column granule (pointwiseGranule). Blocks of exactly
// pointwiseTapsCols left a 28×28 map (784 pixels) three full blocks and
// one of 16 pixels, so one worker multiplied 512 pixels and the other 272;
// now each takes two of 208 or 160.
func pointwiseTapsBlock(hw, threads int) int {
	blocks := ceilDiv(hw, pointwiseTapsCols)
	if blocks > 1 {
		blocks = ceilDiv(blocks, threads) * threads
	}
	return min(pointwiseTapsCols, ceilDiv(ceilDiv(hw, blocks), pointwiseGranule)*pointwiseGranule)
}

// usePointwiseTaps reports whether the pointwise convolution c reads its
// image in place (conv2dPointwiseTaps): at most pointwiseTapsMaxOut output
// channels, and an image of at most pointwiseTapsMaxBytes unless convPath
// forces this path ("pointwisetaps") or the channel groups ("pointwise").
// Its weight is packed for it (foldConv) only then.
func usePointwiseTaps(c ops.Conv2d) bool {
	switch {
	case c.OutChans > pointwiseTapsMaxOut:
		return false
	case convForced("pointwisetaps"):
		return true
	case convForced("pointwise"):
		return false
	}
	return c.InChans*c.Height*c.Width*4 <= pointwiseTapsMaxBytes
}

// conv2dPointwiseTaps is conv2dPointwise with the weight packed once (pa)
// and the image's rows read in place as the right operand
// (kern.SgemmTapsRows, tap c at row c of the image): nothing is packed per
// call. Each task's product goes to a worker's tile, from which
// kern.BiasResidual writes the outputs; a block whose rounded-up columns
// would read past the input's end is copied first.
func (b *Backend) conv2dPointwiseTaps(c ops.Conv2d, pa *kern.PackedA, bias, x, y, res []float32) {
	hw, cin, o := c.Height*c.Width, c.InChans, c.OutChans
	cols := pointwiseTapsBlock(hw, b.threads)
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
