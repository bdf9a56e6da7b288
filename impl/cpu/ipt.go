package cpu

import (
	"fmt"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// The nodes of IPT; see package ops for what each computes. They are
// plain loops (the mean shift is 9 multiply-adds a pixel, the others move
// data), but for the pixel shuffle by 2, which merges row pairs with
// kern.Interleave.

func (b *Backend) meanShift(n ops.MeanShift, in, out []*tensor) error {
	c := n.Chans
	// x and out are images [B, C, H, W]: only their sizes are checked.
	if len(in) != 3 || len(out) != 1 || len(in[0].data) != n.Batch*c*n.Pixels || len(out[0].data) != n.Batch*c*n.Pixels {
		return fmt.Errorf("cpu: mean_shift wants x and out of %d×%d×%d values", n.Batch, c, n.Pixels)
	}
	if err := checkShapes("mean_shift", in[1:], []bench.Shape{{c, c, 1, 1}, {c}}); err != nil {
		return err
	}
	x, w, bias, y := in[0].data, in[1].data, in[2].data, out[0].data
	parallelFor(b.threads, n.Batch*c, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			img, o := r/c, r%c
			dst := y[r*n.Pixels : (r+1)*n.Pixels]
			for p := range dst {
				acc := bias[o]
				for k := 0; k < c; k++ {
					acc += w[o*c+k] * x[(img*c+k)*n.Pixels+p]
				}
				dst[p] = acc
			}
		}
	})
	return nil
}

func (b *Backend) pixelShuffle(n ops.PixelShuffle, in, out []*tensor) error {
	r, h, w := n.R, n.Height, n.Width
	if err := checkShapes("pixel_shuffle", in, []bench.Shape{{n.Batch, n.Chans * r * r, h, w}}); err != nil {
		return err
	}
	if err := checkShapes("pixel_shuffle", out, []bench.Shape{{n.Batch, n.Chans, h * r, w * r}}); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	plane := h * w
	parallelFor(b.threads, n.Batch*n.Chans*h*r, 1, func(lo, hi int) {
		for row := lo; row < hi; row++ {
			bc, oy := row/(h*r), row%(h*r)
			iy, i := oy/r, oy%r
			// Output row oy of channel bc interleaves row iy of the r
			// input channels bc·r² + i·r + q, q < r.
			dst := y[row*w*r : (row+1)*w*r]
			at := (bc*r*r+i*r)*plane + iy*w
			if r == 2 {
				kern.Interleave(w, x[at:at+w], x[at+plane:at+plane+w], dst)
				continue
			}
			for q := 0; q < r; q++ {
				for j, v := range x[at+q*plane : at+q*plane+w] {
					dst[j*r+q] = v
				}
			}
		}
	})
	return nil
}

func (b *Backend) chopTiles(n ops.ChopTiles, in, out []*tensor) error {
	c, t, p := n.Chans, n.Tiles(), n.Patch
	if err := checkShapes("chop_tiles", in, []bench.Shape{{n.Batch, c, n.Height, n.Width}}); err != nil {
		return err
	}
	if err := checkShapes("chop_tiles", out, []bench.Shape{{n.Batch * t, c, p, p}}); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	parallelFor(b.threads, n.Batch*t, 1, func(lo, hi int) {
		for bt := lo; bt < hi; bt++ {
			img, tile := bt/t, bt%t
			y0, x0 := n.TileOrigin(tile)
			for ch := 0; ch < c; ch++ {
				for r := 0; r < p; r++ {
					src := x[((img*c+ch)*n.Height+y0+r)*n.Width+x0:]
					copy(y[((bt*c+ch)*p+r)*p:((bt*c+ch)*p+r+1)*p], src[:p])
				}
			}
		}
	})
	return nil
}

func (b *Backend) chopStitch(n ops.ChopStitch, in, out []*tensor) error {
	c, t, s := n.Chans, n.Tiles(), n.Scale
	p, oh, ow := n.Patch*s, n.Height*s, n.Width*s
	if err := checkShapes("chop_stitch", in, []bench.Shape{{n.Batch * t, c, p, p}}); err != nil {
		return err
	}
	if err := checkShapes("chop_stitch", out, []bench.Shape{{n.Batch, c, oh, ow}}); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	parallelFor(b.threads, oh, 1, func(lo, hi int) {
		var src []int
		for oy := lo; oy < hi; oy++ {
			for ox := 0; ox < ow; ox++ {
				src = n.Sources(oy, ox, src[:0])
				for img := 0; img < n.Batch; img++ {
					for ch := 0; ch < c; ch++ {
						var sum float32
						for _, tile := range src {
							ty, tx := n.SourceOrigin(tile)
							sum += x[(((img*t+tile)*c+ch)*p+oy-ty)*p+ox-tx]
						}
						y[((img*c+ch)*oh+oy)*ow+ox] = sum / float32(len(src))
					}
				}
			}
		}
	})
	return nil
}
