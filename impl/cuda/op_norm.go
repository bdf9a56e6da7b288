package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// normThreads is the block size of the row-per-block kernels: a warp per
// 32 values up to 256 threads.
func normThreads(n int64) uint32 {
	return uint32(min(256, max(32, (n+31)/32*32)))
}

// layerNorm runs ops.LayerNorm, one block per row.
func (b *Backend) layerNorm(n ops.LayerNorm, in, out []*tensor) (func() error, error) {
	rows := int64(n.Batch) * int64(n.Tokens)
	d := int64(n.Dim)
	if err := checkElems("layernorm", "input", in, rows*d, d, d); err != nil {
		return nil, err
	}
	if err := checkElems("layernorm", "output", out, rows*d); err != nil {
		return nil, err
	}
	return func() error {
		if rows == 0 {
			return nil
		}
		return b.launch("norm.cu", "layernorm_f32", dim3{uint32(rows), 1, 1}, dim3{normThreads(d / 4), 1, 1}, 0,
			in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr, i32(n.Dim), float32(n.Eps))
	}, nil
}

// groupNorm runs ops.GroupNorm, one block per (image, group).
func (b *Backend) groupNorm(n ops.GroupNorm, in, out []*tensor) (func() error, error) {
	if n.Groups <= 0 || n.Chans%n.Groups != 0 {
		return nil, fmt.Errorf("cuda: group_norm: %d channels in %d groups", n.Chans, n.Groups)
	}
	hw := int64(n.Height) * int64(n.Width)
	all := int64(n.Batch) * int64(n.Chans) * hw
	if err := checkElems("group_norm", "input", in, all, int64(n.Chans), int64(n.Chans)); err != nil {
		return nil, err
	}
	if err := checkElems("group_norm", "output", out, all); err != nil {
		return nil, err
	}
	return func() error {
		return b.launch("norm.cu", "group_norm_f32", dim3{uint32(n.Batch * n.Groups), 1, 1}, dim3{256, 1, 1}, 0,
			in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr, i32(n.Groups), i32(n.Chans/n.Groups), hw, n.Eps, boolI32(n.Swish))
	}, nil
}
