package cpu

import (
	"fmt"
	"math"
	"sort"

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
				vh, vw = validExtent(in[0].data[img*s+lv.Start:img*s+lv.Start+lv.H*lv.W], lv.H, lv.W)
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

func (b *Backend) proposals(n ops.Proposals, in, out []*tensor) error {
	s := ops.MSDeformCore{Levels: n.Levels}.Values()
	var want []bench.Shape
	if n.Masked {
		want = []bench.Shape{{n.Batch, s}}
	}
	if err := checkShapes("proposals", in, want); err != nil {
		return err
	}
	if err := checkShapes("proposals", out, []bench.Shape{{n.Batch, s, 4}}); err != nil {
		return err
	}
	y := out[0].data
	inf := float32(math.Inf(1))
	logit := func(p float32) float32 { return float32(math.Log(float64(p / (1 - p)))) }
	inside := func(p float32) bool { return p > 0.01 && p < 0.99 }
	for img := 0; img < n.Batch; img++ {
		for li, lv := range n.Levels {
			var m []float32
			vh, vw := lv.H, lv.W
			if n.Masked {
				m = in[0].data[img*s+lv.Start : img*s+lv.Start+lv.H*lv.W]
				vh, vw = validExtent(m, lv.H, lv.W)
			}
			wh := float32(0.05) * float32(math.Pow(2, float64(li)))
			for r := 0; r < lv.H; r++ {
				for c := 0; c < lv.W; c++ {
					p := [4]float32{(float32(c) + 0.5) / float32(vw), (float32(r) + 0.5) / float32(vh), wh, wh}
					o := y[(img*s+lv.Start+r*lv.W+c)*4:]
					ok := (m == nil || m[r*lv.W+c] == 0) && inside(p[0]) && inside(p[1]) && inside(p[2]) && inside(p[3])
					for j := range p {
						if ok {
							o[j] = logit(p[j])
						} else {
							o[j] = inf
						}
					}
				}
			}
		}
	}
	return nil
}

func (b *Backend) zeroInvalid(n ops.ZeroInvalid, in, out []*tensor) error {
	x := bench.Shape{n.Batch, n.Rows, n.Dim}
	if err := checkShapes("zero_invalid", in, []bench.Shape{x, {n.Batch, n.Rows, 4}}); err != nil {
		return err
	}
	if err := checkShapes("zero_invalid", out, []bench.Shape{x}); err != nil {
		return err
	}
	src, prop, y := in[0].data, in[1].data, out[0].data
	for r := 0; r < n.Batch*n.Rows; r++ {
		row := y[r*n.Dim : (r+1)*n.Dim]
		bad := false
		for _, v := range prop[r*4 : r*4+4] {
			bad = bad || math.IsInf(float64(v), 0)
		}
		if bad {
			clear(row)
		} else {
			copy(row, src[r*n.Dim:(r+1)*n.Dim])
		}
	}
	return nil
}

func (b *Backend) topKRows(n ops.TopKRows, in, out []*tensor) error {
	if err := checkShapes("topk_rows", in, []bench.Shape{{n.Batch, n.Rows, n.Classes}, {n.Batch, n.Rows, n.Width}}); err != nil {
		return err
	}
	if err := checkShapes("topk_rows", out, []bench.Shape{{n.Batch, n.K, n.Width}}); err != nil {
		return err
	}
	if n.K > n.Rows {
		return fmt.Errorf("cpu: topk_rows: %d of %d rows", n.K, n.Rows)
	}
	scores, vals, y := in[0].data, in[1].data, out[0].data
	idx := make([]int, n.Rows)
	for img := 0; img < n.Batch; img++ {
		for i := range idx {
			idx[i] = i
		}
		score := func(i int) float32 { return scores[(img*n.Rows+i)*n.Classes] }
		sort.Slice(idx, func(a, c int) bool {
			sa, sc := score(idx[a]), score(idx[c])
			return sa > sc || (sa == sc && idx[a] < idx[c])
		})
		for k := 0; k < n.K; k++ {
			copy(y[(img*n.K+k)*n.Width:(img*n.K+k+1)*n.Width], vals[(img*n.Rows+idx[k])*n.Width:])
		}
	}
	return nil
}

func (b *Backend) proposalPosEmbed(n ops.ProposalPosEmbed, in, out []*tensor) error {
	if err := checkShapes("proposal_pos_embed", in, []bench.Shape{{n.Batch, n.Queries, 4}}); err != nil {
		return err
	}
	if err := checkShapes("proposal_pos_embed", out, []bench.Shape{{n.Batch, n.Queries, 4 * sineFeats}}); err != nil {
		return err
	}
	dimT := sineDimT()
	x, y := in[0].data, out[0].data
	for r := 0; r < n.Batch*n.Queries; r++ {
		for k := 0; k < 4; k++ {
			p := float32(1/(1+math.Exp(-float64(x[r*4+k])))) * float32(2*math.Pi)
			o := y[(r*4+k)*sineFeats : (r*4+k+1)*sineFeats]
			for j := 0; j < sineFeats; j += 2 {
				o[j] = float32(math.Sin(float64(p / dimT[j])))
				o[j+1] = float32(math.Cos(float64(p / dimT[j+1])))
			}
		}
	}
	return nil
}

func (b *Backend) splitColumns(n ops.SplitColumns, in, out []*tensor) error {
	if err := checkShapes("split_columns", in, []bench.Shape{{n.Batch, n.Rows, 2 * n.Dim}}); err != nil {
		return err
	}
	if err := checkShapes("split_columns", out, []bench.Shape{{n.Batch, n.Rows, n.Dim}, {n.Batch, n.Rows, n.Dim}}); err != nil {
		return err
	}
	d := n.Dim
	for r := 0; r < n.Batch*n.Rows; r++ {
		copy(out[0].data[r*d:(r+1)*d], in[0].data[r*2*d:r*2*d+d])
		copy(out[1].data[r*d:(r+1)*d], in[0].data[r*2*d+d:(r+1)*2*d])
	}
	return nil
}
