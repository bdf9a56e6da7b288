package cuda

import "vitbench/bench/ops"

// unfold runs ops.Unfold (soft_split) token-major.
func (b *Backend) unfold(u ops.Unfold, in, out []*tensor) (func() error, error) {
	img := int64(u.Batch) * int64(u.InChans) * int64(u.Height) * int64(u.Width)
	n := int64(u.Batch) * int64(u.OutH()*u.OutW()) * int64(u.Cols())
	if err := checkElems("soft_split", "input", in, img); err != nil {
		return nil, err
	}
	if err := checkElems("soft_split", "output", out, n); err != nil {
		return nil, err
	}
	return func() error {
		return b.launch1D("windows.cu", "unfold_tokens_f32", n, in[0].ptr, out[0].ptr, i32(u.Batch), geomOf(u))
	}, nil
}

// fold runs ops.Fold as a gather per output pixel.
func (b *Backend) fold(f ops.Fold, in, out []*tensor) (func() error, error) {
	u := f.Unfold
	img := int64(u.Batch) * int64(u.InChans) * int64(u.Height) * int64(u.Width)
	if err := checkElems("fold", "input", in, int64(u.Batch)*int64(u.OutH()*u.OutW())*int64(u.Cols())); err != nil {
		return nil, err
	}
	if err := checkElems("fold", "output", out, img); err != nil {
		return nil, err
	}
	return func() error {
		return b.launch1D("windows.cu", "fold_f32", img, in[0].ptr, out[0].ptr, i32(u.Batch), geomOf(u))
	}, nil
}

// avgPool runs ops.AvgPool2d.
func (b *Backend) avgPool(a ops.AvgPool2d, in, out []*tensor) (func() error, error) {
	planes := int64(a.Batch) * int64(a.Chans)
	if err := checkElems("avg_pool2d", "input", in, planes*int64(a.Height)*int64(a.Width)); err != nil {
		return nil, err
	}
	n := planes * int64(a.OutH()) * int64(a.OutW())
	if err := checkElems("avg_pool2d", "output", out, n); err != nil {
		return nil, err
	}
	g := &geomArg{C: i32(a.Chans), H: i32(a.Height), W: i32(a.Width), KH: i32(a.KH), KW: i32(a.KW), SH: i32(a.SH), SW: i32(a.SW),
		PH: i32(a.PH), PW: i32(a.PW), DH: 1, DW: 1, OH: i32(a.OutH()), OW: i32(a.OutW())}
	inc := int32(0)
	if a.CountIncludePad {
		inc = 1
	}
	return func() error {
		return b.launch1D("windows.cu", "avg_pool_f32", n, in[0].ptr, out[0].ptr, planes, g, inc)
	}, nil
}

// maxPool runs ops.MaxPool2d.
func (b *Backend) maxPool(m ops.MaxPool2d, in, out []*tensor) (func() error, error) {
	planes := int64(m.Batch) * int64(m.Chans)
	if err := checkElems("max_pool2d", "input", in, planes*int64(m.Height)*int64(m.Width)); err != nil {
		return nil, err
	}
	n := planes * int64(m.OutH()) * int64(m.OutW())
	if err := checkElems("max_pool2d", "output", out, n); err != nil {
		return nil, err
	}
	g := &geomArg{C: i32(m.Chans), H: i32(m.Height), W: i32(m.Width), KH: i32(m.Kernel), KW: i32(m.Kernel),
		SH: i32(m.Stride), SW: i32(m.Stride), PH: i32(m.Pad), PW: i32(m.Pad), DH: 1, DW: 1, OH: i32(m.OutH()), OW: i32(m.OutW())}
	return func() error {
		return b.launch1D("windows.cu", "max_pool_f32", n, in[0].ptr, out[0].ptr, planes, g)
	}, nil
}
