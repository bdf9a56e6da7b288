package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// A blocked convolution reads its image and residual and writes its
// output in the channel-blocked layout (layout_blocked.go): it walks the
// output in tiles of up to six pixels and, for each tile, computes up to
// four blocks of 16 output channels at once (kern.ConvBlockedTile),
// broadcasting one input channel of one pixel against a weight vector of
// 16 output channels. The padding is never materialized: a pixel whose
// window crosses the image's edge runs with only the taps inside it, so
// the edges of a padded convolution are tiles of their own
// (blockedGeom.tiles).

// useBlocked reports whether conv c runs blocked, given whether its
// image is blocked already: on the AVX-512 path of the float32 backend,
// with whole channel blocks in and out (or an NCHW image of fewer
// channels, blockedNCHWInput, within its limits), when the convolution
// has a BatchNorm (the ResNet backbones, whose convolutions follow one
// another) or its image comes blocked; convPath "blocked" forces it where
// possible (so do "blockedwino" and "noblockedwino", which choose the
// 3×3 convolution's method, useBlockedWinograd), any other forced path
// keeps it off. Builds with mutations keep NCHW, which those rewrite, and
// so does a backend with nchwOnly.
func (b *Backend) useBlocked(c ops.Conv2d, inBlocked bool) bool {
	if !b.blockedLayout() || c.OutChans%kern.BlockLanes != 0 ||
		c.KernelH > 64 || c.KernelW > 64 { // a span's taps are the bits of a uint64
		return false
	}
	if blockedNCHWInput(c) && (!nchwTiles || b.bf16 || inBlocked || c.Residual || c.Cols() > nchwTileMaxCols) {
		return false
	}
	switch {
	case convForced("blocked") || convForced("blockedwino") || convForced("noblockedwino"):
		return true
	case convPath != "":
		return false
	}
	return c.BN || inBlocked
}

// blockedNCHWInput reports whether the blocked convolution c reads its
// image in NCHW, through kern.ConvNCHWTile: an image whose channels make
// no whole block (a network's RGB input). Its output is blocked like any
// blocked convolution's, so the next convolution (or max pool) reads it
// without a conversion. useBlocked takes such a convolution on the
// float32 backend only, without a residual, and only with windows of at
// most nchwTileMaxCols values.
func blockedNCHWInput(c ops.Conv2d) bool { return c.InChans%kern.BlockLanes != 0 }

// nchwTileMaxCols is the most window values (channels × taps) of a
// convolution on an NCHW image that runs blocked (kern.ConvNCHWTile): the
// ResNet-50 stem of DETR and VOLO (3 channels by 7×7, 147), whose direct
// path wrote NCHW for a max pool or a convolution that then converted it
// (the max pool after it reads the blocked layout: maxPoolBlocked), and
// CLIP RN50's (3 by 3×3, 27), where the direct path's product is also
// too shallow for the GEMM's tiles.
const nchwTileMaxCols = 160

// nchwTiles lets a convolution on an NCHW image run blocked
// (blockedNCHWInput; A/B timing turns it off).
var nchwTiles = true

// blockedWeight is a convolution's weight (BatchNorm folded in) for
// kern.ConvBlockedTile: the output channels in groups of up to
// kern.ConvBlockedMaxBlocks blocks of 16, each group laid out
// [tap][input block][channel][its blocks × 16 output channels].
type blockedWeight struct {
	w      []float32
	pairs  []uint32 // on cpu-bf16, w rounded to pairs of input channels (kern.BlockedPairs) instead of w
	starts []int    // group g's weight is w[starts[g]:starts[g+1]]
	bias   []float32
	plan   *blockedPlan // the tiles of the geometry last run
	// winograd says w holds the 16 transformed weights of a 3×3 window
	// (blockedWinogradWeight) as the taps of a 4×4 one.
	winograd bool
}

// blockedConvWeight packs the folded weight wf [O, C, KH, KW] for the
// blocked convolution c.
func blockedConvWeight(c ops.Conv2d, wf, bias []float32) *blockedWeight {
	const l = kern.BlockLanes
	taps, cin := c.KernelH*c.KernelW, c.InChans
	blocks := c.OutChans / l
	bw := &blockedWeight{w: make([]float32, len(wf)), bias: bias}
	at := 0
	for ob0 := 0; ob0 < blocks; ob0 += kern.ConvBlockedMaxBlocks {
		nb := min(kern.ConvBlockedMaxBlocks, blocks-ob0)
		bw.starts = append(bw.starts, at)
		for t := 0; t < taps; t++ {
			for ch := 0; ch < cin; ch++ {
				for o := ob0 * l; o < (ob0+nb)*l; o++ {
					bw.w[at] = wf[(o*cin+ch)*taps+t]
					at++
				}
			}
		}
	}
	bw.starts = append(bw.starts, at)
	return bw
}

func (bw *blockedWeight) bytes() int64 { return int64(len(bw.w)+len(bw.pairs)+len(bw.bias)) * 4 }

// roundPairs replaces the weight of blocks output blocks by its bf16
// pairs, for kern.ConvBlockedTileBF16.
func (bw *blockedWeight) roundPairs(blocks int) {
	bw.pairs = kern.BlockedPairs(bw.w, bw.starts, blocks)
	bw.w = nil
}

// blockedGeom is a blocked convolution's geometry with a 1×1 stride-1
// convolution's image seen as one row of H·W pixels (it has no padding,
// and a block's pixels are contiguous).
type blockedGeom struct {
	h, w, oh, ow, sh, sw, ph, pw, dh, dw, kh, kw int
	flat                                         bool // a 1×1 stride-1 image as one row
	// unit is the floats per input pixel of a plane: kern.BlockLanes in
	// the blocked layout, 1 for an NCHW image (blockedNCHWInput).
	unit int
}

func newBlockedGeom(c ops.Conv2d) blockedGeom {
	g := blockedGeom{h: c.Height, w: c.Width, oh: c.OutH(), ow: c.OutW(), sh: c.StrideH, sw: c.StrideW,
		ph: c.PadH, pw: c.PadW, dh: max(1, c.DilationH), dw: max(1, c.DilationW), kh: c.KernelH, kw: c.KernelW,
		unit: kern.BlockLanes}
	if blockedNCHWInput(c) {
		g.unit = 1
	}
	if g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 {
		g.w, g.ow = g.h*g.w, g.oh*g.ow
		g.h, g.oh, g.flat = 1, 1, true
	}
	return g
}

// span is a run [lo, hi) of output rows or columns whose windows have
// the same rows or columns inside the image (bit k of mask).
type span struct {
	lo, hi int
	mask   uint64
}

// spans splits n outputs of stride s, padding p and dilation d over an
// input of size in with a window of k into runs of equal valid taps.
func spans(n, in, k, s, p, d int) []span {
	var runs []span
	for o := 0; o < n; o++ {
		var m uint64
		for t := 0; t < k; t++ {
			if i := o*s - p + t*d; i >= 0 && i < in {
				m |= 1 << t
			}
		}
		if last := len(runs) - 1; last >= 0 && runs[last].mask == m {
			runs[last].hi = o + 1
			continue
		}
		runs = append(runs, span{o, o + 1, m})
	}
	return runs
}

// conv2dBlocked runs conv c on the blocked image x (residual res, nil
// without one) into the blocked output y, in tiles (blockedGeom.tiles);
// on cpu-bf16 (bw.pairs) on xp, x rounded to pairs (kern.PackPairs),
// through kern.ConvBlockedTileBF16, with the same tiles and offsets.
// The work is (group of output blocks, chunk of output rows) tasks,
// numbered group, then chunk, so a worker's consecutive tasks share a
// group's weight, and each task runs its rows in every image of the
// batch with that weight (a small map's weight is read from memory once,
// not once per image); a 1×1 stride-1 image (one row) is chunked by
// columns instead.
func (b *Backend) conv2dBlocked(c ops.Conv2d, bw *blockedWeight, x []float32, xp []uint32, y, res []float32) {
	const l = kern.BlockLanes
	pl := bw.planFor(c, b.threads)
	g := pl.g
	nchw := g.unit == 1 // an NCHW image: each input channel is a block of its own
	cib := c.InChans / l
	if nchw {
		cib = c.InChans
	}
	groups := len(bw.starts) - 1
	inImg, outImg := c.InChans*g.h*g.w, c.OutChans*g.oh*g.ow
	xBlock, outStride := g.h*g.w*g.unit, g.oh*g.ow*l
	flags := kern.ConvBias
	if res != nil {
		flags |= kern.ConvResidual
	}
	if c.ReLU {
		flags |= kern.ConvReLU
	}
	parallelFor(b.threads, pl.tasks(groups), 1, func(lo, hi int) {
		for task := lo; task < hi; task++ {
			grp, part := pl.task(task, groups)
			img0, imgs := pl.image(task, groups)
			ob0 := grp * kern.ConvBlockedMaxBlocks
			nb := groupBlocks(c, grp)
			w0, bias := bw.starts[grp], bw.bias[ob0*l:]
			tiles, pool := pl.tiles[pl.partStart[part]:pl.partStart[part+1]], pl.pools[nb]
			batch := blockedBatch(c, nb, xp != nil)
			// The float32 tile calls prefetch the weight the worker reads
			// next (prefetchNextMax): in one pass, a share of its next
			// group's; in input batches, the next batch's.
			prefetch := xp == nil && prefetchWeights && !nchw
			calls := imgs * pl.calls[part] // per batch
			var pf weightPrefetch
			if g2, k, run := pl.nextGroup(task, lo, hi, groups); g2 >= 0 && prefetch && batch == cib {
				n := bw.starts[g2+1] - bw.starts[g2]
				if 4*(n+bw.starts[grp+1]-bw.starts[grp]) <= prefetchNextMax {
					from, to := bw.starts[g2]+k*n/run, bw.starts[g2]+(k+1)*n/run
					pf = newWeightPrefetch(from, to-from, 0, 1, calls)
				}
			}
			for cb0 := 0; cb0 < cib; cb0 += batch {
				nc := min(batch, cib-cb0)
				if prefetch && batch < cib {
					pf = bw.nextBatch(c, pl, task, hi, groups, cb0+nc, calls)
				}
				fl := 0 // a later batch adds to the partial sums; the last finishes
				if cb0 > 0 {
					fl |= kern.ConvAccumulate
				}
				if cb0+nc == cib {
					fl |= flags
				}
				wb := w0 + cb0*l*nb*l // the batch's weight, in floats of w
				for img := img0; img < img0+imgs; img++ {
					xb := img*inImg + cb0*xBlock // its image, in floats of x
					oi := img*outImg + ob0*outStride
					var ri []float32
					if res != nil {
						ri = res[oi:]
					}
					yi := y[oi:]
					for _, t := range tiles {
						if t.ntaps == 0 {
							if cb0+nc == cib {
								for oy := t.oy; oy < t.oy+t.rows; oy++ {
									blockedBiasOnly(nb, t.n, bias, ri, yi, oy*g.ow+t.ox, outStride, c.ReLU)
								}
							}
							continue
						}
						var r []float32
						if ri != nil {
							r = ri[t.at:]
						}
						taps := pool[t.tap0 : t.tap0+2*t.ntaps]
						if nchw {
							kern.ConvNCHWTile(nb, t.n, x[xb+t.shift:], taps, t.ntaps, nc, xBlock, t.pixStride,
								bw.w[wb:], bias, r, yi[t.at:], outStride, t.outPix, fl)
							continue
						}
						p0, p1 := pf.next()
						if xp != nil {
							kern.ConvBlockedTileBF16(nb, t.n, xp[(xb+t.shift)/2:], taps, t.ntaps, nc, xBlock, t.pixStride,
								bw.pairs[wb/2:], bias, r, yi[t.at:], outStride, t.outPix, fl)
							continue
						}
						kern.ConvBlockedTile(nb, t.n, x[xb+t.shift:], taps, t.ntaps, nc, xBlock, t.pixStride,
							bw.w[wb:], bias, r, yi[t.at:], outStride, t.outPix, fl, bw.w[p0:p1])
					}
				}
			}
		}
	})
}

// task returns the group of output blocks and the part of the tiles of
// task number task of a convolution with groups groups: numbered group,
// then part, or part, then group when pixelMajor; with perImage the
// tasks of image i follow those of image i-1 (image returns which).
func (p *blockedPlan) task(task, groups int) (grp, part int) {
	if p.perImage {
		task %= groups * p.parts()
	}
	if p.pixelMajor {
		return task % groups, task / groups
	}
	return task / p.parts(), task % p.parts()
}

// parts is how many parts the tiles are split into.
func (p *blockedPlan) parts() int { return len(p.partStart) - 1 }

// tasks is how many tasks the convolution runs with groups groups: every
// (group, part), once per image with perImage.
func (p *blockedPlan) tasks(groups int) int {
	if p.perImage {
		return groups * p.parts() * p.c.Batch
	}
	return groups * p.parts()
}

// nextGroup returns, for task task of a worker's tasks [lo, hi), the
// group g of the first later task of another group (-1 if none), and
// this task's place k in the run of run tasks of its own group it takes
// before that one, so that task k of the run prefetches the k-th of run
// equal shares of group g's weight.
func (p *blockedPlan) nextGroup(task, lo, hi, groups int) (g, k, run int) {
	grp, _ := p.task(task, groups)
	first, end := task, task+1
	for first > lo {
		if g0, _ := p.task(first-1, groups); g0 != grp {
			break
		}
		first--
	}
	for end < hi {
		if g1, _ := p.task(end, groups); g1 != grp {
			return g1, task - first, end - first
		}
		end++
	}
	return -1, 0, 0
}

// groupBlocks is the output blocks of group grp of the blocked
// convolution c: ConvBlockedMaxBlocks, fewer in a last group.
func groupBlocks(c ops.Conv2d, grp int) int {
	return min(kern.ConvBlockedMaxBlocks, c.OutChans/kern.BlockLanes-grp*kern.ConvBlockedMaxBlocks)
}

// blockedCalls is how many kern.ConvBlockedTile calls tiles make per
// image and input batch: those with at least one tap.
func blockedCalls(tiles []blockedTile) int {
	n := 0
	for _, t := range tiles {
		if t.ntaps > 0 {
			n++
		}
	}
	return n
}

// weightPrefetch spreads the prefetch of some of a weight over tile
// calls: pieces runs of piece floats, the first at base and each stride
// floats after the one before (one run of a group's weight, or one per
// tap of an input batch's), dealt out per call in the next per floats
// (whole 64-byte lines) of the current run, until none are left.
type weightPrefetch struct{ base, piece, stride, pieces, at, per int }

// newWeightPrefetch spreads pieces runs of piece floats from base, stride
// floats apart, over calls calls.
func newWeightPrefetch(base, piece, stride, pieces, calls int) weightPrefetch {
	if calls == 0 || piece <= 0 || pieces <= 0 {
		return weightPrefetch{}
	}
	const line = 16
	return weightPrefetch{base: base, piece: piece, stride: stride, pieces: pieces,
		per: ceilDiv(ceilDiv(piece*pieces, calls), line) * line}
}

// next returns the floats [lo, hi) of the weight the next call prefetches
// (empty when none are left): at most per, within one run.
func (p *weightPrefetch) next() (lo, hi int) {
	if p.per == 0 || p.at >= p.piece*p.pieces {
		return 0, 0
	}
	run, off := p.at/p.piece, p.at%p.piece
	n := min(p.per, p.piece-off)
	p.at += n
	lo = p.base + run*p.stride + off
	return lo, lo + n
}

// nextBatch is the prefetch of the calls of task's input batch that
// ends at input block cb1 (calls of them), for a convolution that takes
// its input blocks in batches (blockedBatch): the next batch of the same
// group, or after the last the first batch of the worker's next task
// (none when task is the last before hi). A batch's weight is, per tap,
// a run of its blocks' rows.
func (bw *blockedWeight) nextBatch(c ops.Conv2d, pl *blockedPlan, task, hi, groups, cb1, calls int) weightPrefetch {
	const l = kern.BlockLanes
	cib, taps := c.InChans/l, c.KernelH*c.KernelW
	grp, _ := pl.task(task, groups)
	if cb1 >= cib {
		if task+1 >= hi {
			return weightPrefetch{}
		}
		grp, _ = pl.task(task+1, groups)
		cb1 = 0
	}
	nb := groupBlocks(c, grp)
	nc := min(blockedBatch(c, nb, false), cib-cb1)
	return newWeightPrefetch(bw.starts[grp]+cb1*l*nb*l, nc*l*nb*l, cib*l*nb*l, taps, calls)
}

// prefetchWeights lets a blocked convolution's float32 tiles prefetch
// the weight their worker reads next (tests and A/B timing turn it off).
var prefetchWeights = true

// prefetchNextMax bounds the prefetch of the next group's weight: a
// blocked convolution's tiles of one group (output blocks) read that
// group's weight again and again from L2, and while they do, they
// prefetch the weight of the worker's next group into L2 (in a network it
// comes from memory), in equal shares over the group's tile calls, when
// the two groups' weights together take at most this many bytes. Larger
// ones (512-channel 3×3 convolutions: 1.2 MB a group) would push the
// group's own weight out of a 2 MiB L2 (that prefetch measured within
// noise): those take their input blocks in batches (windowBatchBlocks),
// each batch's tiles prefetching the next batch (nextBatch).
const prefetchNextMax = 1 << 20

// blockedPlan is a blocked convolution's tiles, split into parts of
// output rows (or, for a 1×1 stride-1 image, columns) that workers take
// with each group of output blocks, built once per geometry and number
// of workers.
type blockedPlan struct {
	c         ops.Conv2d
	threads   int
	tile      int // the most pixels of a tile
	g         blockedGeom
	tiles     []blockedTile
	partStart []int // part p's tiles are tiles[partStart[p]:partStart[p+1]]
	calls     []int // part p's tile calls per image and input batch (blockedCalls)
	// pools[nb] holds the tiles' taps (xOff, wOff) for a group of nb
	// output blocks, whose weight has its own floats per tap.
	pools [kern.ConvBlockedMaxBlocks + 1][]int
	// pixelMajor numbers the tasks part, then group (pixelMajorConv).
	pixelMajor bool
	// perImage makes each image of a batch tasks of its own, the image
	// before the part and the group (perImageTasks).
	perImage bool
}

// perImageTasks reports whether the pixel-major blocked convolution c runs
// each image of its batch as tasks of its own, image by image, instead of
// every image in each task. With the images inside the task, a group
// reads its part of every image before the next group reads that part
// again, which at batch 8 no longer fits in L2, so the image comes from
// memory once per group. Cold on two threads (TestConvColdAB, the 2-vCPU
// Xeon, batch 8), image inside/by image: 256→64 at 56² 1.06×, 512→128 at
// 28² 1.09×, the expanding 1×1 and the 3×3 ones unchanged (their time is
// the output's traffic). Whole networks at batch 8, the two orders
// alternating run by run in one process (16 pairs, three runs; the same
// harness switching nothing read 1.010, 0.998 and 1.001): clip_rn50
// 1.019, 1.008, 1.017; detr_r50_small_b2 1.035, 1.018, 1.025.
func perImageTasks(c ops.Conv2d) bool {
	return c.Batch > 1 && pixelMajorConv(c) && imageTasks
}

// imageTasks lets pixel-major convolutions of a batch run image by image
// (perImageTasks; A/B timing turns it off).
var imageTasks = true

// image returns the image of task number task (0 unless perImage) and the
// images it covers.
func (p *blockedPlan) image(task, groups int) (img, n int) {
	if !p.perImage {
		return 0, p.c.Batch
	}
	return task / (groups * p.parts()), 1
}

// pixelMajorConv reports whether the blocked convolution c numbers its
// tasks part, then group, so that each worker's share is a range of
// output rows (or pixels) in every group, with at least one part per
// worker: when its weight is at most pixelMajorWeightBytes. Each worker
// then reads only the image rows of its share, and writes the rows the
// next convolution's same worker reads, whereas numbered group, then
// part, each worker computes some groups' channels at every pixel, so
// that half of the next convolution's image comes from the other
// worker's cache; but each worker reads every group's weight, which
// doubles the weight's traffic. On cpu-bf16 the image's rounding to pairs
// is split the same way (roundPairsByPixels). CLIP RN50's stem and layers
// 1 and 2 (maps of 112² to 28², weights up to 590 KB) gain, layers 3 and
// 4 (1 to 9 MB of weight, maps of 14² and 7²) lose: both orders
// alternating run by run on the Zen 5 guest, 60 pairs each, float32
// clip_rn50 1.036× and 1.021× with a limit of 600 KB, 1.023× with 300 KB,
// 1.012× with 2.5 MB; detr_r50_small_b2 (maps of 25×33 and smaller)
// 1.001×, 1.008× and 0.973×; vq_encoder_small 1.005×, vq_decoder_small
// 0.997×; with this limit, 80 pairs, clip_rn50 1.026×, detr_r50_small_b2
// 0.993×, vq_encoder_small 0.994×. On cpu-bf16, 80 pairs, two runs:
// clip_rn50 1.021× and 1.021×, detr_r50_small_b2 0.999× and 1.017×,
// vq_encoder_small 0.998× (the pairs rounded by channel blocks instead,
// as roundPairs splits them: clip_rn50 0.990×, detr_r50_small_b2 0.985×).
func pixelMajorConv(c ops.Conv2d) bool {
	return int64(c.InChans)*int64(c.OutChans)*int64(c.KernelH*c.KernelW)*4 <= pixelMajorWeightBytes
}

// pixelMajorWeightBytes is the largest weight (in float32) of a
// pixel-major blocked convolution (pixelMajorConv): CLIP RN50's layer-2
// 3×3 (590 KB) in, its layer-3 1×1 ones (1 MiB) out.
const pixelMajorWeightBytes = 640 << 10

// tilePixels is the most pixels of a tile of the blocked convolution c:
// kern.ConvTilePixels of its largest group on the float32 tiles (with
// wideTiles), kern.ConvBlockedMaxPixels on the bf16 ones.
func (bw *blockedWeight) tilePixels(c ops.Conv2d) int {
	if bw.pairs != nil || !wideTiles {
		return kern.ConvBlockedMaxPixels
	}
	return kern.ConvTilePixels(groupBlocks(c, 0))
}

// wideTiles lets the float32 tiles of one or two output blocks take up to
// 12 pixels (kern.ConvTilePixels) instead of 6 (A/B timing turns it off).
var wideTiles = true

// planFor returns the plan of conv c on threads workers, built on first
// use and kept with the weight.
func (bw *blockedWeight) planFor(c ops.Conv2d, threads int) *blockedPlan {
	if p := bw.plan; p != nil && p.c == c && p.threads == threads && p.tile == bw.tilePixels(c) && p.perImage == perImageTasks(c) {
		return p
	}
	pixelMajor := pixelMajorConv(c)
	const l = kern.BlockLanes
	tile := bw.tilePixels(c)
	g := newBlockedGeom(c)
	rows, cols := spans(g.oh, g.h, g.kh, g.sh, g.ph, g.dh), spans(g.ow, g.w, g.kw, g.sw, g.pw, g.dw)
	groups := len(bw.starts) - 1
	// About four tasks per worker in all.
	parts := min(max(1, ceilDiv(4*threads, groups)), ceilDiv(max(g.oh, g.ow), tile))
	if pixelMajor {
		parts = max(parts, min(threads, ceilDiv(max(g.oh, g.ow), tile)))
	}
	chunks, units := parts, 1
	if g.flat {
		chunks, units = 1, parts
	}
	rowsPer := ceilDiv(g.oh, chunks)
	chunks = ceilDiv(g.oh, rowsPer)
	colsPer := ceilDiv(ceilDiv(g.ow, units), tile) * tile
	units = ceilDiv(g.ow, colsPer)
	p := &blockedPlan{c: c, threads: threads, g: g, pixelMajor: pixelMajor, tile: tile, perImage: perImageTasks(c)}
	var idx []int // (xOff, tap index) pairs
	for chunk := 0; chunk < chunks; chunk++ {
		for unit := 0; unit < units; unit++ {
			p.partStart = append(p.partStart, len(p.tiles))
			p.tiles, idx = g.tiles(rows, cols, chunk*rowsPer, min(g.oh, (chunk+1)*rowsPer),
				unit*colsPer, min(g.ow, (unit+1)*colsPer), tile, p.tiles, idx)
		}
	}
	p.partStart = append(p.partStart, len(p.tiles))
	for part := 0; part+1 < len(p.partStart); part++ {
		p.calls = append(p.calls, blockedCalls(p.tiles[p.partStart[part]:p.partStart[part+1]]))
	}
	for grp := 0; grp < groups; grp++ {
		nb := groupBlocks(c, grp)
		if p.pools[nb] != nil {
			continue
		}
		tapW := c.InChans * nb * l // weight floats per tap
		pool := make([]int, len(idx))
		for i := 0; i < len(idx); i += 2 {
			pool[i], pool[i+1] = idx[i], idx[i+1]*tapW
		}
		p.pools[nb] = pool
	}
	bw.plan = p
	return p
}

// blockedBatch is the input blocks a group of nb output blocks of conv c
// takes per pass over a task's tiles: a 1×1 convolution takes its input
// blocks in batches whose weights stay in L1 while the tiles go by
// (blockedBatchBytes), one with a window in batches of windowBatchBlocks
// when its group's weight is too large to prefetch the next one beside it
// (512 channels by 3×3: 1.2 MB; float32 only, pairs false: the bf16
// tiles do not prefetch), the outputs holding the partial sums between
// batches; any other (and an NCHW image's channels) takes them all in one
// pass.
func blockedBatch(c ops.Conv2d, nb int, pairs bool) int {
	const l = kern.BlockLanes
	if blockedNCHWInput(c) {
		return c.InChans
	}
	cib := c.InChans / l
	if c.KernelH*c.KernelW > 1 {
		if taps := c.KernelH * c.KernelW; !pairs && 2*taps*cib*l*nb*l*4 > prefetchNextMax {
			return min(cib, windowBatchBlocks)
		}
		return cib
	}
	return max(1, min(cib, blockedBatchBytes/(l*nb*l*4)))
}

// blockedSumsInPlace reports whether the blocked convolution c may write
// its output over its residual: when it reads each residual value in the
// same tile call that writes the output there, that is, when it runs as
// tiles (not as a Winograd convolution) and every group takes its input
// blocks in one pass (blockedBatch, of pairs or not; a group of fewer
// blocks takes as many).
func blockedSumsInPlace(c ops.Conv2d, winograd, pairs bool) bool {
	const l = kern.BlockLanes
	return !winograd && blockedBatch(c, min(kern.ConvBlockedMaxBlocks, c.OutChans/l), pairs) == c.InChans/l
}

// windowBatchBlocks is the input blocks per batch of a convolution with a
// window (3×3) whose group weight is so large that two would not fit
// prefetchNextMax: 8 blocks of a 3×3 window over four output blocks are
// 288 KiB, so that a batch's tiles can prefetch the next batch's weight
// into L2 while they read their own from it.
const windowBatchBlocks = 8

// blockedBatchBytes is the most bytes of a group's weight a 1×1
// convolution reads per pass over a task's tiles: 16 input blocks of a
// group of four output blocks. Cold on two threads (TestConvColdAB, a
// 2-vCPU Xeon), unbatched/batched: 1.15× for 1024→256 at 14×14, 1.10×
// for 2048→512 at 7×7, 1.19× for 512→128 at 28×28, 1.0-1.04× for the
// expanding ones (64→256, 128→512, 256→1024) and 256→64. A 3×3 window's
// batch of even one block holds 36 KiB of weight and its calls became so
// short that the convolutions ran 5-8% slower, so those are not batched.
const blockedBatchBytes = 64 << 10

// evenTile is the size of tile k when n pixels go in as few tiles of at
// most most as they fit, of sizes that differ by at most one: 49 pixels
// are four tiles of 6 and five of 5, not eight of 6 and one of 1 (whose
// four accumulators wait on each FMA's latency).
func evenTile(n, most, k int) int {
	tiles := ceilDiv(n, most)
	if k < n%tiles {
		return n/tiles + 1
	}
	return n / tiles
}

// blockedTile is one call of kern.ConvBlockedTile in a task: n pixels
// from output (oy, ox), at output offset at and input offset shift, its
// taps at tap0 in the task's pool; a rectangle with no tap at all
// (ntaps 0) holds rows × n outputs of bias alone.
type blockedTile struct {
	oy, ox, n, rows, at, shift, pixStride, outPix, tap0, ntaps int
}

// tiles appends the tiles of output rows [r0, r1) and columns [c0, c1)
// and their taps (input offset, tap index) to pool: the output splits into
// rectangles of equal valid taps (rows × columns spans: for a 3×3
// window with padding, the corners, the edges and the inside). A
// rectangle at least as wide as tall, or most wide, goes in tiles along
// its rows; a narrow one (an edge column) in tiles down its columns, so
// that the edges run in tiles of several pixels too. A tile takes at most
// most pixels (blockedWeight.tilePixels); the input offsets are in units
// of g.unit floats per pixel.
func (g blockedGeom) tiles(rows, cols []span, r0, r1, c0, c1, most int, tiles []blockedTile, pool []int) ([]blockedTile, []int) {
	const l = kern.BlockLanes
	u := g.unit
	for _, rs := range rows {
		y0, y1 := max(rs.lo, r0), min(rs.hi, r1)
		if y0 >= y1 {
			continue
		}
		for _, cs := range cols {
			x0, x1 := max(cs.lo, c0), min(cs.hi, c1)
			if x0 >= x1 {
				continue
			}
			// The rectangle's taps, from its first pixel's window.
			tap0 := len(pool)
			for ky := 0; ky < g.kh; ky++ {
				for kx := 0; kx < g.kw; kx++ {
					if rs.mask&(1<<ky) != 0 && cs.mask&(1<<kx) != 0 {
						iy, ix := y0*g.sh-g.ph+ky*g.dh, x0*g.sw-g.pw+kx*g.dw
						pool = append(pool, (iy*g.w+ix)*u, ky*g.kw+kx)
					}
				}
			}
			ntaps := (len(pool) - tap0) / 2
			if ntaps == 0 {
				tiles = append(tiles, blockedTile{oy: y0, ox: x0, n: x1 - x0, rows: y1 - y0})
				continue
			}
			add := func(oy, ox, n, pixStride, outPix int) {
				tiles = append(tiles, blockedTile{oy: oy, ox: ox, n: n, rows: 1, at: (oy*g.ow + ox) * l,
					shift: ((oy-y0)*g.sh*g.w + (ox-x0)*g.sw) * u, pixStride: pixStride, outPix: outPix, tap0: tap0, ntaps: ntaps})
			}
			if w, h := x1-x0, y1-y0; w >= min(h, most) {
				for oy := y0; oy < y1; oy++ {
					for ox, k := x0, 0; ox < x1; k++ {
						n := evenTile(x1-x0, most, k)
						add(oy, ox, n, g.sw*u, l)
						ox += n
					}
				}
				continue
			}
			for ox := x0; ox < x1; ox++ {
				for oy, k := y0, 0; oy < y1; k++ {
					n := evenTile(y1-y0, most, k)
					add(oy, ox, n, g.sh*g.w*u, g.ow*l)
					oy += n
				}
			}
		}
	}
	return tiles, pool
}

// blockedBiasOnly writes the outputs of a run of n pixels (from pixel
// p0 of a row-major output plane) whose windows hold no pixel of the
// image: the bias, plus the residual, through the ReLU.
func blockedBiasOnly(nb, n int, bias, res, y []float32, p0, outStride int, relu bool) {
	const l = kern.BlockLanes
	for j := 0; j < nb; j++ {
		for p := p0; p < p0+n; p++ {
			for i := 0; i < l; i++ {
				at := j*outStride + p*l + i
				v := bias[j*l+i]
				if res != nil {
					v += res[at]
				}
				if relu {
					v = max(v, 0)
				}
				y[at] = v
			}
		}
	}
}

// conv2dBlockedTensors runs the blocked convolution c from tensors: an
// image (but one that the NCHW tiles read in place, blockedNCHWInput) or
// residual still in NCHW is converted into scratch first (the tensor
// itself is left as it is), and the output is marked blocked.
func (b *Backend) conv2dBlockedTensors(c ops.Conv2d, bw *blockedWeight, in, out, res *tensor) {
	need := 0
	convertIn := !in.blocked && !blockedNCHWInput(c)
	if convertIn {
		need += len(in.data)
	}
	if res != nil && !res.blocked {
		need += len(res.data)
	}
	// The output is the residual's buffer (InPlace) on a path that would
	// overwrite residual values before reading them: a copy in scratch.
	copyRes := res != nil && res == out && res.blocked && !blockedSumsInPlace(c, bw.winograd, b.bf16)
	if copyRes {
		need += len(res.data)
	}
	var tmp []float32
	if need > 0 {
		var release func()
		tmp, release = b.scratch(need)
		defer release()
	}
	x := in.data
	if convertIn {
		n, ch, hw := blockedDims(in.shape)
		x, tmp = tmp[:len(in.data)], tmp[len(in.data):]
		b.toBlocked(n, ch, hw, in.data, x)
	}
	var r []float32
	if res != nil {
		r = res.data
		switch {
		case !res.blocked:
			n, ch, hw := blockedDims(res.shape)
			r = tmp[:len(res.data)]
			b.toBlocked(n, ch, hw, res.data, r)
		case copyRes:
			r = tmp[:len(res.data)]
			copy(r, res.data)
		}
	}
	b.runBlocked(c, bw, x, out.data, r)
	out.blocked = true
}

// runBlocked runs the blocked convolution c on the blocked image x (and
// residual r) into y by the method bw is packed for: Winograd, bf16 tiles
// on x rounded to pairs, or float32 tiles.
func (b *Backend) runBlocked(c ops.Conv2d, bw *blockedWeight, x, y, r []float32) {
	switch {
	case bw.winograd:
		b.conv2dBlockedWinograd(c, bw, x, y, r)
	case bw.pairs != nil:
		xp, release := b.pairScratch((len(x) + 1) / 2)
		defer release()
		if bw.planFor(c, b.threads).pixelMajor {
			b.roundPairsByPixels(c, x, xp)
		} else {
			b.roundPairs(x, xp)
		}
		b.conv2dBlocked(c, bw, nil, xp, y, r)
	default:
		b.conv2dBlocked(c, bw, x, nil, y, r)
	}
}

// roundPairsByPixels is roundPairs for the image x of the pixel-major
// convolution c: each worker rounds the same share of every block's
// pixels (static halves of each image's H·W), the rows its tasks read.
func (b *Backend) roundPairsByPixels(c ops.Conv2d, x []float32, xp []uint32) {
	const l = kern.BlockLanes
	hw := c.Height * c.Width
	planes := c.Batch * c.InChans / l
	parallelChunks(b.conversionThreads(len(x)), hw, 1, func(_, lo, hi int) {
		for q := range planes {
			at := (q*hw + lo) * l
			kern.PackPairs(xp[at/2:], x[at:at+(hi-lo)*l])
		}
	})
}

// roundPairs rounds the blocked image x to bf16 pairs in xp
// (kern.PackPairs), the workers taking runs of 64 KiB.
func (b *Backend) roundPairs(x []float32, xp []uint32) {
	const run = 16 << 10 // floats
	parallelFor(b.conversionThreads(len(x)), ceilDiv(len(x), run), 1, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			kern.PackPairs(xp[k*run/2:], x[k*run:min(len(x), (k+1)*run)])
		}
	})
}
