package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// iptNode runs IPT's nodes (ipt.cu).
func (b *Backend) iptNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.MeanShift:
		px := int64(n.Batch) * int64(n.Chans) * int64(n.Pixels)
		c := int64(n.Chans)
		if err := checkElems("mean_shift", "input", in, px, c*c, c); err != nil {
			return nil, err
		}
		if err := checkElems("mean_shift", "output", out, px); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("ipt.cu", "mean_shift_f32", px, in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr,
				i32(n.Batch), i32(n.Chans), int64(n.Pixels))
		}, nil
	case ops.PixelShuffle:
		e := int64(n.Batch) * int64(n.Chans) * int64(n.Height) * int64(n.Width) * int64(n.R) * int64(n.R)
		if err := checkElems("pixel_shuffle", "input", in, e); err != nil {
			return nil, err
		}
		if err := checkElems("pixel_shuffle", "output", out, e); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("ipt.cu", "pixel_shuffle_f32", e, in[0].ptr, out[0].ptr, i32(n.Batch*n.Chans),
				i32(n.Height), i32(n.Width), i32(n.R))
		}, nil
	case ops.ChopTiles:
		c := n.Chop
		img := int64(c.Batch) * int64(c.Chans) * int64(c.Height) * int64(c.Width)
		tiles := int64(c.Batch) * int64(c.Tiles()) * int64(c.Chans) * int64(c.Patch) * int64(c.Patch)
		if err := checkElems("chop_tiles", "input", in, img); err != nil {
			return nil, err
		}
		if err := checkElems("chop_tiles", "output", out, tiles); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("ipt.cu", "chop_tiles_f32", tiles, in[0].ptr, out[0].ptr, i32(c.Batch), i32(c.Chans),
				i32(c.Height), i32(c.Width), i32(c.Patch))
		}, nil
	case ops.ChopStitch:
		c := n.Chop
		ps := int64(c.Patch) * int64(c.Scale)
		tiles := int64(c.Batch) * int64(c.Tiles()) * int64(c.Chans) * ps * ps
		img := int64(c.Batch) * int64(c.Chans) * int64(c.Height*c.Scale) * int64(c.Width*c.Scale)
		if err := checkElems("chop_stitch", "input", in, tiles); err != nil {
			return nil, err
		}
		if err := checkElems("chop_stitch", "output", out, img); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("ipt.cu", "chop_stitch_f32", img, in[0].ptr, out[0].ptr, i32(c.Batch), i32(c.Chans),
				i32(c.Height), i32(c.Width), i32(c.Patch), i32(c.Scale))
		}, nil
	}
	return nil, fmt.Errorf("cuda: iptNode given %T", node)
}
