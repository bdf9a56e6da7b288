package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// unfold runs nn.Unfold + transpose(1, 2), split over (image, window) rows.
func (b *Backend) unfold(u ops.Unfold, in, out []*tensor) error {
	if err := checkShapes("soft_split", in, []bench.Shape{{u.Batch, u.InChans, u.Height, u.Width}}); err != nil {
		return err
	}
	windows, cols := u.OutH()*u.OutW(), u.Cols()
	if err := checkShapes("soft_split", out, []bench.Shape{{u.Batch, windows, cols}}); err != nil {
		return err
	}
	geom := kern.UnfoldGeom{C: u.InChans, H: u.Height, W: u.Width, KH: u.KernelH, KW: u.KernelW,
		SH: u.StrideH, SW: u.StrideW, PH: u.PadH, PW: u.PadW, DH: u.DilationH, DW: u.DilationW,
		OH: u.OutH(), OW: u.OutW()}
	x, y := in[0].data, out[0].data
	plane := u.InChans * u.Height * u.Width
	// Small images are copied on one worker: waking another costs more.
	threads := b.threads
	if u.Batch*windows*cols < 1<<16 {
		threads = 1
	}
	parallelFor(threads, u.Batch*windows, 16, func(lo, hi int) {
		for r := lo; r < hi; {
			img, l := r/windows, r%windows
			end := min(hi, (img+1)*windows)
			kern.UnfoldRows(geom, x[img*plane:(img+1)*plane], y[r*cols:], l, l+end-r)
			r = end
		}
	})
	return nil
}
