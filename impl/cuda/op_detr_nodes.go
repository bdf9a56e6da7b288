package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// detrTransformerNode runs the small nodes of the original DETR: the
// decoder's queries (detr.cu), the stack of the decoder layers' outputs
// and the in_proj row blocks (device copies) and the post-processing
// (detr.cu).
func (b *Backend) detrTransformerNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.Concat:
		if len(in) != n.Parts {
			return nil, fmt.Errorf("cuda: concat of %d parts got %d inputs", n.Parts, len(in))
		}
		e := int64(n.Elems)
		want := make([]int64, n.Parts)
		for i := range want {
			want[i] = e
		}
		if err := checkElems("concat", "input", in, want...); err != nil {
			return nil, err
		}
		if err := checkElems("concat", "output", out, int64(n.Parts)*e); err != nil {
			return nil, err
		}
		return func() error {
			for p, t := range in {
				if err := b.copyDtoD(out[0].ptr+uint64(int64(p)*e*4), t.ptr, e*4); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case ops.RowSlice:
		lo, cnt := int64(n.Off)*int64(n.Cols), int64(n.Rows)*int64(n.Cols)
		if len(in) != 1 || n.Off < 0 || in[0].shape.Elems() < lo+cnt {
			return nil, fmt.Errorf("cuda: row_slice of rows [%d, %d) of %d columns from %d tensors", n.Off, n.Off+n.Rows, n.Cols, len(in))
		}
		if err := checkElems("row_slice", "output", out, cnt); err != nil {
			return nil, err
		}
		return func() error { return b.copyDtoD(out[0].ptr, in[0].ptr+uint64(lo*4), cnt*4) }, nil
	case ops.DETRQueries:
		qd := int64(n.Queries) * int64(n.Dim)
		if err := checkElems("detr_queries", "input", in, qd); err != nil {
			return nil, err
		}
		if err := checkElems("detr_queries", "output", out, int64(n.Batch)*qd, int64(n.Batch)*qd); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "detr_queries_f32", int64(n.Batch)*qd, in[0].ptr, out[0].ptr, out[1].ptr, int64(n.Batch)*qd, qd)
		}, nil
	case ops.DETRPostProcess:
		rows := int64(n.Batch) * int64(n.Queries)
		want := []int64{rows * int64(n.Classes+1), rows * 4}
		if n.Masked {
			want = append(want, int64(n.Batch)*int64(n.Height)*int64(n.Width))
		}
		if err := checkElems("detr_post_process", "input", in, want...); err != nil {
			return nil, err
		}
		if err := checkElems("detr_post_process", "output", out, rows, rows, rows*4); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "detr_post_process_f32", rows, in[0].ptr, in[1].ptr, maskOf(in, n.Masked, 2),
				out[0].ptr, out[1].ptr, out[2].ptr, i32(n.Batch), i32(n.Queries), i32(n.Classes), i32(n.Height), i32(n.Width))
		}, nil
	}
	return nil, fmt.Errorf("cuda: no DETR kernel for %T", node)
}
