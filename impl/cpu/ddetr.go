package cpu

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// The small nodes of Deformable DETR's transformer; see package ops for
// what each computes. All but add are a few thousand values per call.

// checkElems verifies that an elementwise node got want tensors in and one
// out, each of n values, whatever their shapes.
func checkElems(op string, in, out []*tensor, want, n int) error {
	if len(in) != want || len(out) != 1 {
		return fmt.Errorf("cpu: %s takes %d tensors and writes 1, got %d and %d", op, want, len(in), len(out))
	}
	for _, t := range append(append([]*tensor(nil), in...), out...) {
		if t.shape.Elems() != int64(n) {
			return fmt.Errorf("cpu: %s over %d values got a tensor of shape %v", op, n, t.shape)
		}
	}
	return nil
}

func (b *Backend) add(n ops.Add, in, out []*tensor) error {
	if err := checkElems("add", in, out, 2, n.Elems); err != nil {
		return err
	}
	x, y, z := in[0].data, in[1].data, out[0].data
	threads := b.threads
	if n.Elems < 1<<16 {
		threads = 1
	}
	parallelFor(threads, n.Elems, 4096, func(lo, hi int) {
		kern.Add(hi-lo, x[lo:hi], y[lo:hi], z[lo:hi])
	})
	return nil
}

func (b *Backend) sigmoid(n ops.Sigmoid, in, out []*tensor) error {
	if err := checkElems("sigmoid", in, out, 1, n.Elems); err != nil {
		return err
	}
	for i, v := range in[0].data {
		out[0].data[i] = float32(1 / (1 + math.Exp(-float64(v))))
	}
	return nil
}

func (b *Backend) levelEmbed(n ops.LevelEmbed, in, out []*tensor) error {
	s := ops.MSDeformCore{Levels: n.Levels}.Values()
	if err := checkShapes("level_embed", in, []bench.Shape{{n.Batch, s, n.Dim}, {len(n.Levels), n.Dim}}); err != nil {
		return err
	}
	if err := checkShapes("level_embed", out, []bench.Shape{{n.Batch, s, n.Dim}}); err != nil {
		return err
	}
	pos, emb, y := in[0].data, in[1].data, out[0].data
	d := n.Dim
	for img := 0; img < n.Batch; img++ {
		for li, lv := range n.Levels {
			e := emb[li*d : (li+1)*d]
			for r := lv.Start; r < lv.Start+lv.H*lv.W; r++ {
				o := (img*s + r) * d
				kern.Add(d, pos[o:o+d], e, y[o:o+d])
			}
		}
	}
	return nil
}

func (b *Backend) validRatios(n ops.ValidRatios, in, out []*tensor) error {
	s, l := ops.MSDeformCore{Levels: n.Levels}.Values(), len(n.Levels)
	var want []bench.Shape
	if n.Masked {
		want = []bench.Shape{{n.Batch, s}}
	}
	if err := checkShapes("valid_ratios", in, want); err != nil {
		return err
	}
	if err := checkShapes("valid_ratios", out, []bench.Shape{{n.Batch, l, 2}}); err != nil {
		return err
	}
	y := out[0].data
	for img := 0; img < n.Batch; img++ {
		for li, lv := range n.Levels {
			vh, vw := lv.H, lv.W
			if n.Masked {
				m := in[0].data[img*s+lv.Start : img*s+lv.Start+lv.H*lv.W]
				vh, vw = 0, 0
				for r := 0; r < lv.H; r++ {
					if m[r*lv.W] == 0 {
						vh++
					}
				}
				for c := 0; c < lv.W; c++ {
					if m[c] == 0 {
						vw++
					}
				}
			}
			y[(img*l+li)*2] = float32(vw) / float32(lv.W)
			y[(img*l+li)*2+1] = float32(vh) / float32(lv.H)
		}
	}
	return nil
}

func (b *Backend) encoderRefPoints(n ops.EncoderRefPoints, in, out []*tensor) error {
	s, l := ops.MSDeformCore{Levels: n.Levels}.Values(), len(n.Levels)
	if err := checkShapes("encoder_ref_points", in, []bench.Shape{{n.Batch, l, 2}}); err != nil {
		return err
	}
	if err := checkShapes("encoder_ref_points", out, []bench.Shape{{n.Batch, s, l, 2}}); err != nil {
		return err
	}
	vr, y := in[0].data, out[0].data
	for img := 0; img < n.Batch; img++ {
		v := vr[img*l*2 : (img+1)*l*2]
		for li, lv := range n.Levels {
			// float32 throughout, in PyTorch's order: (c + 0.5) / (ratio·W).
			dx, dy := v[li*2]*float32(lv.W), v[li*2+1]*float32(lv.H)
			for r := 0; r < lv.H; r++ {
				ry := (float32(r) + 0.5) / dy
				for c := 0; c < lv.W; c++ {
					rx := (float32(c) + 0.5) / dx
					o := ((img*s + lv.Start + r*lv.W + c) * l) * 2
					for l2 := 0; l2 < l; l2++ {
						y[o+2*l2] = rx * v[l2*2]
						y[o+2*l2+1] = ry * v[l2*2+1]
					}
				}
			}
		}
	}
	return nil
}

func (b *Backend) queryEmbed(n ops.QueryEmbed, in, out []*tensor) error {
	q, d := n.Queries, n.Dim
	if err := checkShapes("query_embed", in, []bench.Shape{{q, 2 * d}}); err != nil {
		return err
	}
	if err := checkShapes("query_embed", out, []bench.Shape{{n.Batch, q, d}, {n.Batch, q, d}}); err != nil {
		return err
	}
	e := in[0].data
	for img := 0; img < n.Batch; img++ {
		for r := 0; r < q; r++ {
			copy(out[0].data[(img*q+r)*d:(img*q+r+1)*d], e[r*2*d:r*2*d+d])
			copy(out[1].data[(img*q+r)*d:(img*q+r+1)*d], e[r*2*d+d:(r+1)*2*d])
		}
	}
	return nil
}

func (b *Backend) scaleRefs(n ops.ScaleRefs, in, out []*tensor) error {
	q, l, r := n.Queries, n.Levels, n.RefDims
	if r != 2 && r != 4 {
		return fmt.Errorf("cpu: scale_refs: references of %d values", r)
	}
	if err := checkShapes("scale_refs", in, []bench.Shape{{n.Batch, q, r}, {n.Batch, l, 2}}); err != nil {
		return err
	}
	if err := checkShapes("scale_refs", out, []bench.Shape{{n.Batch, q, l, r}}); err != nil {
		return err
	}
	ref, vr, y := in[0].data, in[1].data, out[0].data
	for img := 0; img < n.Batch; img++ {
		for qi := 0; qi < q; qi++ {
			for li := 0; li < l; li++ {
				o := ((img*q+qi)*l + li) * r
				for j := 0; j < r; j++ {
					y[o+j] = ref[(img*q+qi)*r+j] * vr[(img*l+li)*2+j%2]
				}
			}
		}
	}
	return nil
}

func (b *Backend) mergeQKV(n ops.MergeQKV, in, out []*tensor) error {
	s := bench.Shape{n.Batch, n.Tokens, 3 * n.Dim}
	if err := checkShapes("merge_qkv", in, []bench.Shape{s, s}); err != nil {
		return err
	}
	if err := checkShapes("merge_qkv", out, []bench.Shape{s}); err != nil {
		return err
	}
	d := n.Dim
	for r := 0; r < n.Batch*n.Tokens; r++ {
		o := r * 3 * d
		copy(out[0].data[o:o+2*d], in[0].data[o:o+2*d])
		copy(out[0].data[o+2*d:o+3*d], in[1].data[o+2*d:o+3*d])
	}
	return nil
}
