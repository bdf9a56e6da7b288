package cpu

import (
	"os"
	"slices"
	"strings"

	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// directBlock is the number of output positions one direct-convolution
// GEMM call covers: a multiple of every microkernel's column tile, and a
// tile of C (O rows × directBlock) that stays in cache for the epilogue.
const directBlock = 128

// convPath is VITBENCH_CONV, read once, a comma-separated list for A/B
// timing: "windows", "direct", "winograd" or "pointwise" forces that
// convolution path where it applies (all but windows need SIMD, Winograd a
// 3×3 stride-1 kernel, pointwise a 1×1 stride-1 one without padding);
// "pointwisetaps" forces the pointwise product that reads the image in
// place where its weight was packed for it (conv2dPointwiseTaps);
// "nowinograd" and "nopointwise" turn those two off and let the rules
// choose among the rest; "winoblocks" and "winoplanes" make the Winograd
// path transform its tiles per work item or all at once
// (winogradBlocksMinBytes). Empty (or anything else): the rules choose.
var convPath = os.Getenv("VITBENCH_CONV")

// convForced reports whether convPath lists mode.
func convForced(mode string) bool { return slices.Contains(strings.Split(convPath, ","), mode) }

// useDirect reports whether conv c runs as a direct convolution: a
// kernel larger than 1×1, on a SIMD path (a 1×1 convolution's windows are
// the image itself, which the implicit GEMM packs as cheaply as the padded
// copy would cost), unless convPath forces a path, except for tiny maps
// in a batch with a large window (directTinyOutputs, directMaxCols).
//
// It used to take small maps only up to directMaxCols window values,
// because a map of one block of outputs left the second worker idle; since
// the output channels are split between the workers there (channelParts)
// it is faster than the implicit GEMM at batch 1 on every shape measured:
// windows/direct on two threads (TestResNetConvPathAB, a 2-vCPU Xeon, 3×3
// with BN and ReLU) 1.36× for 512→512 at 7×7, 1.56× for 384 at 7×7,
// 1.05× for 512 at 9×9, 1.26× for 512 at 14×14 stride 2, 1.03× at 28×28
// stride 2, 1.44× for 1024→256 at 28×28 stride 2, 1.21–1.57× for 2048→256
// stride 2 at 26×26 and 14×14 (Deformable DETR's input projection), where
// the implicit GEMM packed every window of 18432 values once per worker.
func useDirect(c ops.Conv2d) bool {
	if kern.Active() == kern.ISAGo {
		return false
	}
	switch {
	case convForced("windows"):
		return false
	case convForced("direct"):
		return true
	}
	return c.KernelH*c.KernelW > 1 && (c.Batch == 1 || c.OutH()*c.OutW() >= directTinyOutputs || c.Cols() <= directMaxCols)
}

// directTinyOutputs and directMaxCols bound the one case the implicit
// GEMM keeps: a batch of images of fewer than directTinyOutputs outputs
// each with windows of more than directMaxCols values. There each image is
// one block of the direct path, each worker's blocks stream the whole
// weight, while the implicit GEMM multiplies all the images' windows at
// once and its workers split the weight's columns: DETR's last stage at
// 4×5, batch 2 (512 channels, a 9.4 MB weight), made detr_r50_small_b2
// 1.03× slower on the direct path.
const (
	directTinyOutputs = 64
	directMaxCols     = 256 * 3 * 3
)

// directGeom is the padded image of a direct convolution, split into its
// stride phases so that every stride becomes stride 1. With the padded
// image P (H+2PH)×(W+2PW) of channel ch, phase (py, px) is the plane
//
//	Q[ch, py, px][i, j] = P[ch][i·SH + py, j·SW + px]      (zero past P)
//
// of Hq×Wq = ⌈(H+2PH)/SH⌉×⌈(W+2PW)/SW⌉ values; the planes are followed by
// one plane of ones (the bias tap) and a zero tail. Output position
// (oy, q) — q running over the whole plane width Wq, the columns past OW
// being discarded — reads tap (ch, ky, kx), with ky·DH = dy·SH + py and
// kx·DW = dx·SW + px, at
//
//	Q[ch, py, px][oy + dy, q + dx] = pad[oy·Wq + q + tap]
//
// so a block of neighbouring positions reads neighbouring values. With
// stride 1 there is one phase: the padded image itself.
type directGeom struct {
	c                ops.Conv2d
	hq, wq, plane, n int // n: wide output positions OH·Wq
	phases           int // SH·SW planes per channel
	ones             int // offset of the ones plane
	size             int // floats per padded image
	taps             []int
	bands            directBands // with a horizontal stride other than 2 (conv2dDirectBands)
}

func newDirectGeom(c ops.Conv2d) directGeom {
	hp, wp := c.Height+2*c.PadH, c.Width+2*c.PadW
	g := directGeom{c: c, hq: (hp + c.StrideH - 1) / c.StrideH, wq: (wp + c.StrideW - 1) / c.StrideW,
		phases: c.StrideH * c.StrideW}
	g.plane = g.hq * g.wq
	g.n = c.OutH() * g.wq
	g.ones = c.InChans * g.phases * g.plane
	g.size = g.ones + g.plane + g.wq + directBlock
	g.taps = make([]int, 0, c.Cols()+1)
	for ch := 0; ch < c.InChans; ch++ {
		for ky := 0; ky < c.KernelH; ky++ {
			dy, py := ky*c.DilationH/c.StrideH, ky*c.DilationH%c.StrideH
			for kx := 0; kx < c.KernelW; kx++ {
				dx, px := kx*c.DilationW/c.StrideW, kx*c.DilationW%c.StrideW
				g.taps = append(g.taps, ((ch*c.StrideH+py)*c.StrideW+px)*g.plane+dy*g.wq+dx)
			}
		}
	}
	g.taps = append(g.taps, g.ones) // the ones plane: the bias
	return g
}

// pad writes image x [C, H, W] into dst laid out as the geometry says,
// for a horizontal stride of 2 (padPairs); the other strides pad by bands
// (padBand).
func (g directGeom) pad(x, dst []float32, threads int) {
	g.padPairs(x, dst, threads)
	fill := dst[g.ones : g.ones+g.plane+directBlock]
	for i := range fill {
		fill[i] = 1
	}
	clear(dst[g.ones+g.plane+directBlock:])
}

// padRow writes row i (< hq) of phase plane p (channel p / phases) of
// image x into row (wq values).
func (g directGeom) padRow(x, row []float32, p, i int) {
	c := g.c
	ch, py, px := p/g.phases, p%g.phases/c.StrideW, p%c.StrideW
	// Plane columns j read image column j·SW + px − PW, inside for j in [j0, j1).
	j0 := max(0, ceilDiv(c.PadW-px, c.StrideW))
	j1 := min(g.wq, ceilDiv(c.Width+c.PadW-px, c.StrideW))
	y := i*c.StrideH + py - c.PadH
	if y < 0 || y >= c.Height || j0 >= j1 {
		clear(row)
		return
	}
	src := x[(ch*c.Height+y)*c.Width : (ch*c.Height+y+1)*c.Width]
	clear(row[:j0])
	if c.StrideW == 1 {
		copy(row[j0:j1], src[j0+px-c.PadW:])
	} else {
		for j := j0; j < j1; j++ {
			row[j] = src[j*c.StrideW+px-c.PadW]
		}
	}
	clear(row[j1:])
}

// padPairs is pad for a horizontal stride of 2: for every channel and
// vertical phase py, each plane row i is image row i·SH + py − PH placed
// at column PW of a zeroed row of 2·wq values and split into its even
// (px = 0) and odd (px = 1) columns, the two planes being adjacent. The
// kernel writes whole vectors past wq, into the next rows of its plane,
// which are written after it; the last rows of a plane, where those
// vectors would leave it, go through a buffer.
func (g directGeom) padPairs(x, dst []float32, threads int) {
	c := g.c
	wide := kern.RoundWidth() * ceilDiv(g.wq, kern.RoundWidth())
	parallelFor(threads, c.InChans*c.StrideH, 1, func(lo, hi int) {
		buf := make([]float32, 4*wide)
		row, lastEven, lastOdd := buf[:2*wide], buf[2*wide:3*wide], buf[3*wide:]
		inside := row[c.PadW : c.PadW+min(c.Width, 2*g.wq-c.PadW)]
		for pair := lo; pair < hi; pair++ {
			ch, py := pair/c.StrideH, pair%c.StrideH
			p := pair * 2 // planes p (px = 0) and p+1 (px = 1)
			even, odd := dst[p*g.plane:(p+1)*g.plane], dst[(p+1)*g.plane:(p+2)*g.plane]
			img := x[ch*c.Height*c.Width : (ch+1)*c.Height*c.Width]
			for i := 0; i < g.hq; i++ {
				y := i*c.StrideH + py - c.PadH
				e, o := even[i*g.wq:(i+1)*g.wq], odd[i*g.wq:(i+1)*g.wq]
				if y < 0 || y >= c.Height {
					clear(e)
					clear(o)
					continue
				}
				copy(inside, img[y*c.Width:])
				if (g.hq-i)*g.wq >= wide {
					kern.Deinterleave(g.wq, row, even[i*g.wq:], odd[i*g.wq:])
					continue
				}
				kern.Deinterleave(g.wq, row, lastEven, lastOdd)
				copy(e, lastEven)
				copy(o, lastOdd)
			}
		}
	})
}

// directWeight packs the folded weight [O, K] with the bias as one more
// column (the ones plane's tap).
func directWeight(o, k int, wf, bias []float32) *kern.PackedA {
	a := make([]float32, o*(k+1))
	for i := 0; i < o; i++ {
		copy(a[i*(k+1):i*(k+1)+k], wf[i*k:(i+1)*k])
		a[i*(k+1)+k] = bias[i]
	}
	return kern.PackA(o, k+1, a, k+1)
}

// conv2dDirect runs a convolution as a GEMM whose right operand is the
// padded image read in place (kern.SgemmTaps): no windows are packed.
// With a horizontal stride other than 2 it goes by bands of output rows
// (conv2dDirectBands). With a stride of 2, the whole image is padded
// first (padPairs deinterleaves its columns) and workers take blocks of
// output positions; each block's tile of C is written into the NCHW
// output, adding the residual and applying the ReLU on the way. An image
// with fewer than two blocks per worker is padded together with the next
// images of the batch and the workers share all their blocks; when that
// still leaves fewer blocks than workers (a small map at batch 1), the
// output channels are split into parts too (channelParts), each task one
// block and one part.
func (b *Backend) conv2dDirect(c ops.Conv2d, pa *kern.PackedA, g directGeom, x, y, res []float32) {
	if g.bands.taps != nil {
		b.conv2dDirectBands(c, pa, g, x, y, res)
		return
	}
	oh, ow, o := c.OutH(), c.OutW(), c.OutChans
	rows := pa.Rows()
	blocks := (g.n + directBlock - 1) / directBlock
	together := 1 // images padded and shared out at once
	if blocks < 2*b.threads {
		together = min(c.Batch, ceilDiv(2*b.threads, blocks))
	}
	parts, partRows := channelParts(b.threads, together*blocks, rows, pa.RowTile())
	threads := min(b.threads, together*blocks*parts)
	buf, release := b.scratch(together*g.size + threads*partRows*directBlock)
	defer release()
	padded, tiles := buf[:together*g.size], buf[together*g.size:]
	relu := c.ReLU
	inImage := c.InChans * c.Height * c.Width
	for first := 0; first < c.Batch; first += together {
		imgs := min(together, c.Batch-first)
		for i := 0; i < imgs; i++ {
			g.pad(x[(first+i)*inImage:], padded[i*g.size:(i+1)*g.size], b.threads)
		}
		tasks := imgs * blocks * parts
		parallelWorkers(min(threads, tasks), tasks, 1, func(w, lo, hi int) {
			tile := tiles[w*partRows*directBlock : (w+1)*partRows*directBlock]
			for task := lo; task < hi; task++ {
				img, blk, part := task/(blocks*parts), task/parts%blocks, task%parts
				base := (first + img) * o * oh * ow
				w0 := blk * directBlock
				nb := min(directBlock, g.n-w0)
				r0, r1 := part*partRows, min((part+1)*partRows, rows)
				kern.SgemmTapsRows(pa, r0, r1, padded[img*g.size+w0:(img+1)*g.size], g.taps, nb, tile, directBlock)
				storeBlock(tile, directBlock, w0, nb, g.wq, ow, r0, min(r1, o), y[base:], oh*ow, res, base, relu)
			}
		})
	}
}

// channelParts splits the rows of a convolution's product (its output
// channels, rounded up to the row tile) into parts of partRows, a multiple
// of tile, so that tasks blocks of outputs times the parts give every one
// of threads workers a task: one part when there are enough blocks. Each
// part's worker streams its rows of the weight only (the direct path and
// both pointwise products).
func channelParts(threads, tasks, rows, tile int) (parts, partRows int) {
	parts = 1
	if tasks < threads {
		parts = min(ceilDiv(threads, tasks), ceilDiv(rows, tile))
	}
	partRows = ceilDiv(ceilDiv(rows, parts), tile) * tile
	return ceilDiv(rows, partRows), partRows
}

// storeRun writes a run of finished outputs src into dst, adding res
// (same length) first when it is not nil and clamping at zero when relu:
//
//	dst[i] = relu?(src[i] + res[i])
//
// src and dst may be the same slice.
func storeRun(src, res, dst []float32, relu bool) {
	n := len(dst)
	switch {
	case res != nil:
		kern.BiasResidual(n, 0, src, res, dst, relu)
	case relu:
		kern.ReLU(n, src, dst)
	case n > 0 && &src[0] != &dst[0]:
		copy(dst, src)
	}
}
