package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// copyRows queues dst[r·dld + c] = src[(r mod srcRows)·sld + c] for
// r < rows, c < cols (srcRows 0: no wrap).
func (b *Backend) copyRows(dst uint64, dld int64, src uint64, sld, rows, cols, srcRows int64) error {
	return b.launch1D("elementwise.cu", "copy_rows_f32", rows*cols, dst, dld, src, sld, rows, cols, srcRows)
}

// transpose queues, for each of batch matrices, dst[c·R + r] = src[r·C + c]
// (src R×C row-major, dst C×R), batch strides in elements.
func (b *Backend) transpose(dst uint64, dbs int64, src uint64, sbs int64, batch, r, c int) error {
	if batch == 0 || r == 0 || c == 0 {
		return nil
	}
	grid := dim3{uint32((c + 31) / 32), uint32((r + 31) / 32), uint32(batch)}
	if grid.y > 65535 || grid.z > 65535 {
		return fmt.Errorf("transpose of %d×%d×%d exceeds the grid", batch, r, c)
	}
	return b.launch("elementwise.cu", "transpose_f32", grid, dim3{32, 8, 1}, 0, dst, dbs, src, sbs, i32(r), i32(c))
}

// dataNode runs the elementwise and data-movement nodes.
func (b *Backend) dataNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.Add:
		e := int64(n.Elems)
		if err := elems2("add", in, out, 2, e); err != nil {
			return nil, err
		}
		return func() error { return b.launch1D("elementwise.cu", "add_f32", e, in[0].ptr, in[1].ptr, out[0].ptr, e) }, nil
	case ops.Average:
		e := n.Shape.Elems()
		if err := elems2("average", in, out, 2, e); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("elementwise.cu", "average_f32", e, in[0].ptr, in[1].ptr, out[0].ptr, e)
		}, nil
	case ops.Sigmoid:
		e := int64(n.Elems)
		if err := elems2("sigmoid", in, out, 1, e); err != nil {
			return nil, err
		}
		return func() error { return b.launch1D("elementwise.cu", "sigmoid_f32", e, in[0].ptr, out[0].ptr, e) }, nil
	case ops.ReLU:
		e := int64(n.Elems)
		if err := elems2("relu", in, out, 1, e); err != nil {
			return nil, err
		}
		return func() error { return b.launch1D("elementwise.cu", "relu_f32", e, in[0].ptr, out[0].ptr, e) }, nil
	case ops.Reshape:
		if n.From.Elems() != n.To.Elems() {
			return nil, fmt.Errorf("cuda: reshape from %v to %v changes the element count", n.From, n.To)
		}
		e := n.From.Elems()
		if err := elems2("reshape", in, out, 1, e); err != nil {
			return nil, err
		}
		return func() error {
			if e == 0 {
				return nil
			}
			return b.copyDtoD(out[0].ptr, in[0].ptr, e*4)
		}, nil
	case ops.TokensPrefix:
		bsz, np, e, p := int64(n.Batch), int64(n.Patches), int64(n.Dim), int64(n.Prefix)
		want := []int64{bsz * np * e, e}
		if p == 2 {
			want = append(want, e)
		}
		want = append(want, (np+p)*e)
		if err := checkElems("tokens_prefix", "input", in, want...); err != nil {
			return nil, err
		}
		if err := checkElems("tokens_prefix", "output", out, bsz*(np+p)*e); err != nil {
			return nil, err
		}
		dist := uint64(0)
		if p == 2 {
			dist = in[2].ptr
		}
		return func() error {
			return b.launch1D("elementwise.cu", "tokens_prefix_f32", bsz*(np+p)*e, in[0].ptr, in[1].ptr, dist, in[len(in)-1].ptr,
				out[0].ptr, i32(n.Batch), i32(n.Patches), i32(n.Dim), i32(n.Prefix))
		}, nil
	case ops.TakeToken:
		bsz, t, d := int64(n.Batch), int64(n.Tokens), int64(n.Dim)
		if n.Index < 0 || n.Index >= n.Tokens {
			return nil, fmt.Errorf("cuda: take_token %d of %d tokens", n.Index, n.Tokens)
		}
		if err := checkElems("take_token", "input", in, bsz*t*d); err != nil {
			return nil, err
		}
		if err := checkElems("take_token", "output", out, bsz*d); err != nil {
			return nil, err
		}
		return func() error { return b.copyRows(out[0].ptr, d, at(in[0], int64(n.Index)*d), t*d, bsz, d, 0) }, nil
	case ops.TokensToImage:
		hw := n.Height * n.Width
		all := int64(n.Batch) * int64(hw) * int64(n.Chans)
		if err := elems2("tokens_to_image", in, out, 1, all); err != nil {
			return nil, err
		}
		return func() error {
			return b.transpose(out[0].ptr, int64(hw)*int64(n.Chans), in[0].ptr, int64(hw)*int64(n.Chans), n.Batch, hw, n.Chans)
		}, nil
	case ops.QueryEmbed:
		q, d, bsz := int64(n.Queries), int64(n.Dim), int64(n.Batch)
		if err := checkElems("query_embed", "input", in, q*2*d); err != nil {
			return nil, err
		}
		if err := checkElems("query_embed", "output", out, bsz*q*d, bsz*q*d); err != nil {
			return nil, err
		}
		return func() error {
			if err := b.copyRows(out[0].ptr, d, in[0].ptr, 2*d, bsz*q, d, q); err != nil {
				return err
			}
			return b.copyRows(out[1].ptr, d, at(in[0], d), 2*d, bsz*q, d, q)
		}, nil
	case ops.MergeQKV:
		rows, d := int64(n.Batch)*int64(n.Tokens), int64(n.Dim)
		if err := checkElems("merge_qkv", "input", in, rows*3*d, rows*3*d); err != nil {
			return nil, err
		}
		if err := checkElems("merge_qkv", "output", out, rows*3*d); err != nil {
			return nil, err
		}
		return func() error {
			if err := b.copyRows(out[0].ptr, 3*d, in[0].ptr, 3*d, rows, 2*d, 0); err != nil {
				return err
			}
			return b.copyRows(at(out[0], 2*d), 3*d, at(in[1], 2*d), 3*d, rows, d, 0)
		}, nil
	case ops.SplitColumns:
		rows, d := int64(n.Batch)*int64(n.Rows), int64(n.Dim)
		if err := checkElems("split_columns", "input", in, rows*2*d); err != nil {
			return nil, err
		}
		if err := checkElems("split_columns", "output", out, rows*d, rows*d); err != nil {
			return nil, err
		}
		return func() error {
			if err := b.copyRows(out[0].ptr, d, in[0].ptr, 2*d, rows, d, 0); err != nil {
				return err
			}
			return b.copyRows(out[1].ptr, d, at(in[0], d), 2*d, rows, d, 0)
		}, nil
	case ops.FlattenLevels:
		s := int64(ops.MSDeformCore{Levels: n.Levels}.Values())
		want := make([]int64, len(n.Levels))
		for i, lv := range n.Levels {
			want[i] = int64(n.Batch) * int64(n.Chans) * int64(lv.H*lv.W)
		}
		if err := checkElems("flatten_levels", "input", in, want...); err != nil {
			return nil, err
		}
		if err := checkElems("flatten_levels", "output", out, int64(n.Batch)*s*int64(n.Chans)); err != nil {
			return nil, err
		}
		return func() error {
			for i, lv := range n.Levels {
				hw := lv.H * lv.W
				if err := b.transpose(at(out[0], int64(lv.Start)*int64(n.Chans)), s*int64(n.Chans), in[i].ptr,
					int64(n.Chans)*int64(hw), n.Batch, n.Chans, hw); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case ops.LevelEmbed:
		lv, err := levelsOf(n.Levels)
		if err != nil {
			return nil, err
		}
		s := int64(ops.MSDeformCore{Levels: n.Levels}.Values())
		all := int64(n.Batch) * s * int64(n.Dim)
		if err := checkElems("level_embed", "input", in, all, int64(len(n.Levels))*int64(n.Dim)); err != nil {
			return nil, err
		}
		if err := checkElems("level_embed", "output", out, all); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("elementwise.cu", "level_embed_f32", all, in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Batch), i32(n.Dim), lv)
		}, nil
	}
	return nil, fmt.Errorf("cuda: no data kernel for %T", node)
}

// elems2 checks an elementwise node: nIn inputs and one output of e values.
func elems2(op string, in, out []*tensor, nIn int, e int64) error {
	want := make([]int64, nIn)
	for i := range want {
		want[i] = e
	}
	if err := checkElems(op, "input", in, want...); err != nil {
		return err
	}
	return checkElems(op, "output", out, e)
}

// copyDtoD queues a device-to-device copy of n bytes on the stream.
func (b *Backend) copyDtoD(dst, src uint64, n int64) error {
	if b.dry != nil {
		b.dry.copies++
		return nil
	}
	return b.drv.check("cuMemcpyDtoDAsync_v2", b.drv.cuMemcpyDtoDAsync(dst, src, uint64(n), b.stream))
}
