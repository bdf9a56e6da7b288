package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// voloNode runs VOLO's nodes (volo.cu).
func (b *Backend) voloNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.AvgPoolNHWC:
		all := int64(n.Batch) * int64(n.Height) * int64(n.Width) * int64(n.Chans)
		res := int64(n.Batch) * int64(n.OutH()) * int64(n.OutW()) * int64(n.Chans)
		if err := checkElems("avg_pool_nhwc", "input", in, all); err != nil {
			return nil, err
		}
		if err := checkElems("avg_pool_nhwc", "output", out, res); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("volo.cu", "avg_pool_nhwc_f32", res, in[0].ptr, out[0].ptr, i32(n.Batch), i32(n.Height), i32(n.Width),
				i32(n.Chans), i32(n.K))
		}, nil
	case ops.PatchRowsNHWC:
		all := int64(n.Batch) * int64(n.Height) * int64(n.Width) * int64(n.Chans)
		res := int64(n.Batch) * int64(n.Height/n.P) * int64(n.Width/n.P) * int64(n.Chans*n.P*n.P)
		if err := checkElems("patch_rows_nhwc", "input", in, all); err != nil {
			return nil, err
		}
		if err := checkElems("patch_rows_nhwc", "output", out, res); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("volo.cu", "patch_rows_nhwc_f32", res, in[0].ptr, out[0].ptr, i32(n.Batch), i32(n.Height), i32(n.Width),
				i32(n.Chans), i32(n.P))
		}, nil
	case ops.OutlookCore:
		return b.outlookCore(n, in, out)
	case ops.AddBroadcast:
		all := int64(n.Batch) * int64(n.Elems)
		if err := checkElems("add_broadcast", "input", in, all, int64(n.Elems)); err != nil {
			return nil, err
		}
		if err := checkElems("add_broadcast", "output", out, all); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("volo.cu", "add_broadcast_f32", all, in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Batch), int64(n.Elems))
		}, nil
	case ops.PrependToken:
		e := int64(n.Dim)
		if err := checkElems("prepend_token", "input", in, int64(n.Batch)*int64(n.Tokens)*e, e); err != nil {
			return nil, err
		}
		res := int64(n.Batch) * int64(n.Tokens+1) * e
		if err := checkElems("prepend_token", "output", out, res); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("volo.cu", "prepend_token_f32", res, in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Batch), i32(n.Tokens), i32(n.Dim))
		}, nil
	case ops.PutToken:
		if n.Index < 0 || n.Index >= n.Tokens {
			return nil, fmt.Errorf("cuda: put_token %d of %d tokens", n.Index, n.Tokens)
		}
		all := int64(n.Batch) * int64(n.Tokens) * int64(n.Dim)
		if err := checkElems("put_token", "input", in, all, int64(n.Batch)*int64(n.Dim)); err != nil {
			return nil, err
		}
		if err := checkElems("put_token", "output", out, all); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("volo.cu", "put_token_f32", all, in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Batch), i32(n.Tokens), i32(n.Dim),
				i32(n.Index))
		}, nil
	case ops.ClassAttnCore:
		e := int64(n.Heads) * int64(n.HeadDim)
		if err := checkElems("class_attn_core", "input", in, int64(n.Batch)*e, int64(n.Batch)*int64(n.Tokens)*2*e); err != nil {
			return nil, err
		}
		if err := checkElems("class_attn_core", "output", out, int64(n.Batch)*e); err != nil {
			return nil, err
		}
		if n.Tokens > 12000 {
			return nil, fmt.Errorf("cuda: class_attn_core over %d tokens: the scores must fit 48 KiB of shared memory", n.Tokens)
		}
		return func() error {
			return b.launch("volo.cu", "class_attn_f32", dim3{uint32(n.Batch * n.Heads), 1, 1}, dim3{256, 1, 1}, uint32(n.Tokens*4),
				in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Tokens), i32(n.Heads), i32(n.HeadDim), float32(n.Scale))
		}, nil
	case ops.AuxMerge:
		if n.Tokens < 2 {
			return nil, fmt.Errorf("cuda: aux_merge needs at least one patch token besides the class token, got %d tokens", n.Tokens)
		}
		c := int64(n.Classes)
		if err := checkElems("aux_merge", "input", in, int64(n.Batch)*c, int64(n.Batch)*int64(n.Tokens)*c); err != nil {
			return nil, err
		}
		if err := checkElems("aux_merge", "output", out, int64(n.Batch)*c); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("volo.cu", "aux_merge_f32", int64(n.Batch)*c, in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Batch), i32(n.Tokens), i32(n.Classes))
		}, nil
	}
	return nil, fmt.Errorf("cuda: no VOLO kernel for %T", node)
}

// outlookCore runs ops.OutlookCore: the softmax of every window position's
// K² logits into scratch, then the fold as a gather per output value.
func (b *Backend) outlookCore(o ops.OutlookCore, in, out []*tensor) (func() error, error) {
	if o.Heads <= 0 || o.Dim%o.Heads != 0 {
		return nil, fmt.Errorf("cuda: outlook_core: dim %d in %d heads", o.Dim, o.Heads)
	}
	k2 := int64(o.K * o.K)
	all := int64(o.Batch) * int64(o.Height) * int64(o.Width) * int64(o.Dim)
	logits := int64(o.Batch) * int64(o.GridH()) * int64(o.GridW()) * int64(o.Heads) * k2 * k2
	if err := checkElems("outlook_core", "input", in, all, logits); err != nil {
		return nil, err
	}
	if err := checkElems("outlook_core", "output", out, all); err != nil {
		return nil, err
	}
	return func() error {
		parts, release, err := b.scratchParts(logits * 4)
		if err != nil {
			return err
		}
		defer release()
		if err := b.launch1D("volo.cu", "softmax_short_f32", logits/k2, in[1].ptr, parts[0], logits/k2, int32(k2), float32(o.Scale)); err != nil {
			return err
		}
		return b.launch1D("volo.cu", "outlook_fold_f32", all, parts[0], in[0].ptr, out[0].ptr, i32(o.Batch), i32(o.Height),
			i32(o.Width), i32(o.Dim), i32(o.Heads), i32(o.K), i32(o.Pad), i32(o.Stride))
	}, nil
}
