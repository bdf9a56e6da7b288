package cpu

import (
	"os"

	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// directBlock is the number of output positions one direct-convolution
// GEMM call covers: a multiple of every microkernel's column tile, and a
// tile of C (O rows × directBlock) that stays in cache for the epilogue.
const directBlock = 128

// useDirect reports whether conv c runs as a direct convolution: stride
// 1 with a kernel larger than 1×1, on a SIMD path (a 1×1 convolution's
// windows are the image itself, which the implicit GEMM packs as cheaply
// as the padded copy would cost). VITBENCH_CONV=windows or =direct forces
// one path (for A/B timing; direct still needs stride 1 and SIMD).
func useDirect(c ops.Conv2d) bool {
	if c.StrideH != 1 || c.StrideW != 1 || kern.Active() == kern.ISAGo {
		return false
	}
	switch os.Getenv("VITBENCH_CONV") {
	case "windows":
		return false
	case "direct":
		return true
	}
	return c.KernelH*c.KernelW > 1
}

// directGeom is the padded image of a direct convolution: each channel
// plane is (H+2PH)×(W+2PW) with zero borders, followed by one plane of
// ones (the bias tap) and a zero tail, so that output position
// (oy, q) — q running over the whole padded width, the columns past OW
// being discarded — reads tap (c, ky, kx) at
//
//	pad[c·plane + (oy + ky·DH)·Wp + q + kx·DW] = pad[oy·Wp + q + tap]
//
// and a block of neighbouring positions reads neighbouring values.
type directGeom struct {
	c                ops.Conv2d
	hp, wp, plane, n int // n: wide output positions OH·Wp
	size             int // floats per padded image
	taps             []int
}

func newDirectGeom(c ops.Conv2d) directGeom {
	g := directGeom{c: c, hp: c.Height + 2*c.PadH, wp: c.Width + 2*c.PadW}
	g.plane = g.hp * g.wp
	g.n = c.OutH() * g.wp
	g.size = (c.InChans+1)*g.plane + g.wp + directBlock
	g.taps = make([]int, 0, c.Cols()+1)
	for ch := 0; ch < c.InChans; ch++ {
		for ky := 0; ky < c.KernelH; ky++ {
			for kx := 0; kx < c.KernelW; kx++ {
				g.taps = append(g.taps, ch*g.plane+ky*c.DilationH*g.wp+kx*c.DilationW)
			}
		}
	}
	g.taps = append(g.taps, c.InChans*g.plane) // the ones plane: the bias
	return g
}

// pad writes image x [C, H, W] into dst laid out as the geometry says.
func (g directGeom) pad(x, dst []float32, threads int) {
	c := g.c
	parallelFor(threads, c.InChans, 1, func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			plane := dst[ch*g.plane : (ch+1)*g.plane]
			clear(plane[:c.PadH*g.wp])
			for y := 0; y < c.Height; y++ {
				row := plane[(c.PadH+y)*g.wp : (c.PadH+y+1)*g.wp]
				clear(row[:c.PadW])
				copy(row[c.PadW:c.PadW+c.Width], x[(ch*c.Height+y)*c.Width:(ch*c.Height+y+1)*c.Width])
				clear(row[c.PadW+c.Width:])
			}
			clear(plane[(c.PadH+c.Height)*g.wp:])
		}
	})
	ones := dst[c.InChans*g.plane : (c.InChans+1)*g.plane+directBlock]
	for i := range ones {
		ones[i] = 1
	}
	clear(dst[(c.InChans+1)*g.plane+directBlock:])
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

// conv2dDirect runs a stride-1 convolution as a GEMM whose right operand
// is the padded image read in place (kern.SgemmTaps): no windows are
// packed. Workers take blocks of output positions; each block's tile of
// C (all output channels) is written into the NCHW output, adding the
// residual and applying the ReLU on the way.
func (b *Backend) conv2dDirect(c ops.Conv2d, pa *kern.PackedA, g directGeom, x, y, res []float32) {
	oh, ow, o := c.OutH(), c.OutW(), c.OutChans
	rows := pa.Rows()
	blocks := (g.n + directBlock - 1) / directBlock
	threads := min(b.threads, blocks)
	buf, release := b.scratch(g.size + threads*rows*directBlock)
	defer release()
	padded, tiles := buf[:g.size], buf[g.size:]
	relu := c.ReLU
	for img := 0; img < c.Batch; img++ {
		g.pad(x[img*c.InChans*c.Height*c.Width:], padded, b.threads)
		base := img * o * oh * ow
		parallelChunks(threads, blocks, 1, func(w, lo, hi int) {
			tile := tiles[w*rows*directBlock : (w+1)*rows*directBlock]
			for blk := lo; blk < hi; blk++ {
				w0 := blk * directBlock
				nb := min(directBlock, g.n-w0)
				kern.SgemmTaps(pa, padded[w0:], g.taps, nb, tile, directBlock)
				// Copy each output row's valid run of the block.
				for oy := w0 / g.wp; oy*g.wp < w0+nb; oy++ {
					q0, q1 := max(w0-oy*g.wp, 0), min(w0+nb-oy*g.wp, ow)
					if q0 >= q1 {
						continue
					}
					n := q1 - q0
					for ch := 0; ch < o; ch++ {
						src := tile[ch*directBlock+oy*g.wp+q0-w0:][:n]
						at := base + (ch*oh+oy)*ow + q0
						dst := y[at : at+n]
						switch {
						case res != nil:
							kern.Add(n, src, res[at:at+n], dst)
							if relu {
								kern.ReLU(n, dst, dst)
							}
						case relu:
							kern.ReLU(n, src, dst)
						default:
							copy(dst, src)
						}
					}
				}
			}
		})
	}
}
