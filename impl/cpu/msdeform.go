package cpu

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// msdeformSampler turns sampling points into the corner rows and weights
// of kern.WeightedRows for one (image, query, head): the fused,
// channel-vectorized form of Deformable DETR's im2col kernel, where each
// location and its four corner weights are computed once and then applied
// to all D channels of the head at once.
type msdeformSampler struct {
	headDim int       // D
	stride  int       // floats between consecutive value rows
	col     int       // the head's first channel within a value row
	mask    []float32 // padding mask of the image [S] (nonzero = padding), or nil
	offs    []int32
	w       []float32
}

func newSampler(c ops.MSDeformCore, stride int) *msdeformSampler {
	taps := 4 * len(c.Levels) * c.Points
	return &msdeformSampler{headDim: c.HeadDim, stride: stride, offs: make([]int32, 0, taps), w: make([]float32, 0, taps)}
}

// add appends the corners of the point (locX, locY) on level lv, weighted
// by a: the pixel is (locY·H − 0.5, locX·W − 0.5); a point with a
// coordinate ≤ −1 or ≥ the size contributes nothing, and each corner
// outside the map (or on a padded row) is left out, as zero padding does.
func (s *msdeformSampler) add(lv ops.Level, locX, locY, a float32) {
	fh, fw := float32(lv.H), float32(lv.W)
	h := locY*fh - 0.5
	w := locX*fw - 0.5
	if !(h > -1 && w > -1 && h < fh && w < fw) {
		return
	}
	// −1 < h, w: truncation is floor except on (−1, 0).
	hl, wl := int(h), int(w)
	if h < 0 {
		hl = -1
	}
	if w < 0 {
		wl = -1
	}
	lh, lw := h-float32(hl), w-float32(wl)
	hh, hw := 1-lh, 1-lw
	row := lv.Start + hl*lv.W + wl
	at := int32(row*s.stride + s.col)
	st := int32(s.stride)
	if hl >= 0 && wl >= 0 && hl+1 < lv.H && wl+1 < lv.W && s.mask == nil {
		down := int32(lv.W) * st
		s.offs = append(s.offs, at, at+st, at+down, at+down+st)
		s.w = append(s.w, hh*hw*a, hh*lw*a, lh*hw*a, lh*lw*a)
		return
	}
	s.corner(lv, hl, wl, row, hh*hw*a)
	s.corner(lv, hl, wl+1, row+1, hh*lw*a)
	s.corner(lv, hl+1, wl, row+lv.W, lh*hw*a)
	s.corner(lv, hl+1, wl+1, row+lv.W+1, lh*lw*a)
}

// corner appends the value row of pixel (y, x) of level lv with weight w,
// unless it lies outside the map or is padding.
func (s *msdeformSampler) corner(lv ops.Level, y, x, row int, w float32) {
	if y < 0 || x < 0 || y >= lv.H || x >= lv.W || (s.mask != nil && s.mask[row] != 0) {
		return
	}
	s.offs = append(s.offs, int32(row*s.stride+s.col))
	s.w = append(s.w, w)
}

// flush writes the head's output row and starts the next one.
func (s *msdeformSampler) flush(value, dst []float32) {
	kern.WeightedRows(s.headDim, value, s.offs, s.w, dst)
	s.offs, s.w = s.offs[:0], s.w[:0]
}

// checkValueSize refuses value tensors whose row offsets would not fit
// the int32 offsets of kern.WeightedRows.
func checkValueSize(op string, c ops.MSDeformCore) error {
	if int64(c.Values())*int64(c.Heads)*int64(c.HeadDim) >= math.MaxInt32 {
		return fmt.Errorf("cpu: %s: one image's value tensor [%d, %d, %d] has more than 2³¹ elements", op, c.Values(), c.Heads, c.HeadDim)
	}
	return nil
}

// msDeformCore computes ops.MSDeformCore: query rows are split between
// workers; each (image, query, head) gathers its L·P·4 corner rows into
// one output row.
func (b *Backend) msDeformCore(c ops.MSDeformCore, in, out []*tensor) error {
	s, l, m, d, p := c.Values(), len(c.Levels), c.Heads, c.HeadDim, c.Points
	if err := checkShapes("ms_deform_attn_core", in, []bench.Shape{{c.Batch, s, m, d},
		{c.Batch, c.Queries, m, l, p, 2}, {c.Batch, c.Queries, m, l, p}}); err != nil {
		return err
	}
	if err := checkShapes("ms_deform_attn_core", out, []bench.Shape{{c.Batch, c.Queries, m * d}}); err != nil {
		return err
	}
	if err := checkValueSize("ms_deform_attn_core", c); err != nil {
		return err
	}
	value, loc, attn, y := in[0].data, in[1].data, in[2].data, out[0].data
	rows := c.Batch * c.Queries
	parallelFor(b.threads, rows, 16, func(lo, hi int) {
		smp := newSampler(c, m*d)
		for r := lo; r < hi; r++ {
			img := r / c.Queries
			v := value[img*s*m*d : (img+1)*s*m*d]
			for head := 0; head < m; head++ {
				smp.col = head * d
				k := (r*m + head) * l * p
				for li, lv := range c.Levels {
					for pt := 0; pt < p; pt++ {
						j := k + li*p + pt
						smp.add(lv, loc[2*j], loc[2*j+1], attn[j])
					}
				}
				smp.flush(v, y[(r*m+head)*d:(r*m+head+1)*d])
			}
		}
	})
	return nil
}

// msDeformSample computes ops.MSDeformSample: per (image, query, head) the
// softmax of the L·P attention logits, the sampling locations from the
// reference points and offsets, and the sampling, without storing the
// locations or weights.
func (b *Backend) msDeformSample(n ops.MSDeformSample, in, out []*tensor) error {
	c := n.MSDeformCore
	s, l, m, d, p := c.Values(), len(c.Levels), c.Heads, c.HeadDim, c.Points
	lp := l * p
	want := []bench.Shape{{c.Batch, s, m * d}, {c.Batch, c.Queries, l, n.RefDims},
		{c.Batch, c.Queries, m * lp * 2}, {c.Batch, c.Queries, m * lp}}
	if n.Masked {
		want = append(want, bench.Shape{c.Batch, s})
	}
	if err := checkShapes("ms_deform_attn", in, want); err != nil {
		return err
	}
	if err := checkShapes("ms_deform_attn", out, []bench.Shape{{c.Batch, c.Queries, m * d}}); err != nil {
		return err
	}
	if err := checkValueSize("ms_deform_attn", c); err != nil {
		return err
	}
	value, ref, off, logits, y := in[0].data, in[1].data, in[2].data, in[3].data, out[0].data
	rows := c.Batch * c.Queries
	r4 := n.RefDims == 4
	invP := float32(p)
	parallelFor(b.threads, rows, 16, func(lo, hi int) {
		smp := newSampler(c, m*d)
		attn := make([]float32, m*lp)
		for r := lo; r < hi; r++ {
			img := r / c.Queries
			v := value[img*s*m*d : (img+1)*s*m*d]
			if n.Masked {
				smp.mask = in[4].data[img*s : (img+1)*s]
			}
			kern.Softmax(m, lp, logits[r*m*lp:], lp, attn, lp, 1)
			rr := ref[r*l*n.RefDims : (r+1)*l*n.RefDims]
			o := off[r*m*lp*2 : (r+1)*m*lp*2]
			for head := 0; head < m; head++ {
				smp.col = head * d
				for li, lv := range c.Levels {
					rx, ry := rr[li*n.RefDims], rr[li*n.RefDims+1]
					for pt := 0; pt < p; pt++ {
						j := (head*l+li)*p + pt
						ox, oy := o[2*j], o[2*j+1]
						var x, yy float32
						if r4 {
							// ref[..., :2] + off / P · ref[..., 2:] · 0.5, in PyTorch's order.
							x = rx + ox/invP*rr[li*4+2]*0.5
							yy = ry + oy/invP*rr[li*4+3]*0.5
						} else {
							// The offset normalizer is (W, H).
							x = rx + ox/float32(lv.W)
							yy = ry + oy/float32(lv.H)
						}
						smp.add(lv, x, yy, attn[j])
					}
				}
				smp.flush(v, y[(r*m+head)*d:(r*m+head+1)*d])
			}
		}
	})
	return nil
}
