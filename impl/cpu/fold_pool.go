package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// fold sums token-major windows back into images, one (image, channel)
// plane per task so that no two workers add into the same pixels.
func (b *Backend) fold(f ops.Fold, in, out []*tensor) error {
	u := f.Unfold
	windows, cols := u.OutH()*u.OutW(), u.Cols()
	if err := checkShapes("fold", in, []bench.Shape{{u.Batch, windows, cols}}); err != nil {
		return err
	}
	if err := checkShapes("fold", out, []bench.Shape{{u.Batch, u.InChans, u.Height, u.Width}}); err != nil {
		return err
	}
	g := kern.UnfoldGeom{C: u.InChans, H: u.Height, W: u.Width, KH: u.KernelH, KW: u.KernelW,
		SH: u.StrideH, SW: u.StrideW, PH: u.PadH, PW: u.PadW, DH: u.DilationH, DW: u.DilationW,
		OH: u.OutH(), OW: u.OutW()}
	x, y, plane := in[0].data, out[0].data, u.Height*u.Width
	threads := b.threads
	if u.Batch*windows*cols < 1<<16 {
		threads = 1
	}
	parallelFor(threads, u.Batch*u.InChans, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			img, c := p/u.InChans, p%u.InChans
			kern.FoldChannel(g, x[img*windows*cols:(img+1)*windows*cols], c, y[p*plane:(p+1)*plane])
		}
	})
	return nil
}

// avgPool averages every (image, channel) plane.
func (b *Backend) avgPool(a ops.AvgPool2d, in, out []*tensor) error {
	oh, ow := a.OutH(), a.OutW()
	if err := checkShapes("avg_pool2d", in, []bench.Shape{{a.Batch, a.Chans, a.Height, a.Width}}); err != nil {
		return err
	}
	if err := checkShapes("avg_pool2d", out, []bench.Shape{{a.Batch, a.Chans, oh, ow}}); err != nil {
		return err
	}
	if in[0].blocked {
		b.avgPoolBlocked(a, in[0].data, out[0].data)
		out[0].blocked = true
		return nil
	}
	out[0].blocked = false
	g := kern.PoolGeom{H: a.Height, W: a.Width, KH: a.KH, KW: a.KW, SH: a.SH, SW: a.SW, PH: a.PH, PW: a.PW,
		OH: oh, OW: ow, CountIncludePad: a.CountIncludePad}
	x, y := in[0].data, out[0].data
	planes, hw := a.Batch*a.Chans, a.Height*a.Width
	threads := b.threads
	if planes*hw < 1<<16 {
		threads = 1
	}
	parallelFor(threads, planes, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			kern.AvgPoolPlane(g, x[p*hw:(p+1)*hw], y[p*oh*ow:(p+1)*oh*ow])
		}
	})
	return nil
}
