package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// vqganNode runs VQGAN's nodes (vqgan.cu).
func (b *Backend) vqganNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.PadRightBottom:
		planes := int64(n.Batch) * int64(n.Chans)
		if err := checkElems("pad_right_bottom", "input", in, planes*int64(n.Height)*int64(n.Width)); err != nil {
			return nil, err
		}
		total := planes * int64(n.Height+1) * int64(n.Width+1)
		if err := checkElems("pad_right_bottom", "output", out, total); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("vqgan.cu", "pad_right_bottom_f32", total, in[0].ptr, out[0].ptr, planes, i32(n.Height), i32(n.Width))
		}, nil
	case ops.UpsampleNearest2x:
		planes := int64(n.Batch) * int64(n.Chans)
		if err := checkElems("upsample_nearest2x", "input", in, planes*int64(n.Height)*int64(n.Width)); err != nil {
			return nil, err
		}
		total := planes * 4 * int64(n.Height) * int64(n.Width)
		if err := checkElems("upsample_nearest2x", "output", out, total); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("vqgan.cu", "upsample_nearest2x_f32", total, in[0].ptr, out[0].ptr, planes, i32(n.Height), i32(n.Width))
		}, nil
	case ops.VectorQuantize:
		if n.Codes < 1 || n.Codes > 1<<24 {
			return nil, fmt.Errorf("cuda: vector_quantize: %d codes (indices must be exact in float32)", n.Codes)
		}
		hw := int64(n.Height) * int64(n.Width)
		pos := int64(n.Batch) * hw
		c := int64(n.Chans)
		if err := checkElems("vector_quantize", "input", in, pos*c, int64(n.Codes)*c); err != nil {
			return nil, err
		}
		if err := checkElems("vector_quantize", "output", out, pos*c, pos); err != nil {
			return nil, err
		}
		threads := uint32(32)
		for threads < 256 && int(threads) < n.Codes {
			threads *= 2
		}
		return func() error {
			if pos == 0 {
				return nil
			}
			return b.launch("vqgan.cu", "vector_quantize_f32", dim3{uint32(pos), 1, 1}, dim3{threads, 1, 1}, 0,
				in[0].ptr, in[1].ptr, out[0].ptr, out[1].ptr, i32(n.Chans), i32(int(hw)), i32(n.Codes))
		}, nil
	}
	return nil, fmt.Errorf("cuda: not a VQGAN node: %T", node)
}

// boolI32 is a kernel's int flag: 1 for true.
func boolI32(v bool) int32 {
	if v {
		return 1
	}
	return 0
}
