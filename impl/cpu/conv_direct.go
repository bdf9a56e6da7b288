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
// of Hq×Wq = ⌈(H+2PH)/SH⌉×⌈(W+2PW)/SW⌉ values. Output position (oy, q) —
// q running over the whole plane width Wq, the columns past OW being
// discarded — reads tap (ch, ky, kx), with ky·DH = dy·SH + py and
// kx·DW = dx·SW + px, at Q[ch, py, px][oy + dy, q + dx], so a block of
// neighbouring positions reads neighbouring values. With stride 1 there
// is one phase: the padded image itself. The planes are written a band
// of output rows at a time (directBands), each band's rows into a buffer
// of its own followed by a plane of ones (the bias tap).
type directGeom struct {
	c         ops.Conv2d
	hq, wq, n int // n: wide output positions OH·Wq
	phases    int // SH·SW planes per channel
	bands     directBands
}

// newDirectGeom is conv c's geometry with its bands planned for threads
// workers and a product of rows rows (row tile tile).
func newDirectGeom(c ops.Conv2d, threads, rows, tile int) directGeom {
	hp, wp := c.Height+2*c.PadH, c.Width+2*c.PadW
	g := directGeom{c: c, hq: (hp + c.StrideH - 1) / c.StrideH, wq: (wp + c.StrideW - 1) / c.StrideW,
		phases: c.StrideH * c.StrideW}
	g.n = c.OutH() * g.wq
	g.bands = newDirectBands(c, g, threads, rows, tile)
	return g
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
