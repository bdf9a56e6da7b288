package cpu

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// The nodes of DETR's transformer; see package ops for what each computes.

// mhaCore computes softmax(scale·Q Kᵀ + mask)·V for every (image, head)
// from column slices of the q, k and v tensors. Work is split into tasks
// of (image, head, block of query rows) as attention_core's (querySplit);
// long sequences go fused (mhaFused, under fusedAttention's rule), the
// others through attention_core's score path (scoredAttention), reading
// q, k and v at their own strides and offsets. Masked keys get a score of
// −∞ before the softmax.
func (b *Backend) mhaCore(a ops.MHACore, in, out []*tensor) error {
	e := a.Heads * a.HeadDim
	nq, nk := a.Queries, a.Keys
	for _, c := range []struct {
		name    string
		ld, off int
	}{{"q", a.QLd, a.QOff}, {"k", a.KLd, a.KOff}, {"v", a.VLd, a.VOff}} {
		if c.off < 0 || c.off+e > c.ld {
			return fmt.Errorf("cpu: mha_core: %s columns [%d, %d) exceed its width %d", c.name, c.off, c.off+e, c.ld)
		}
	}
	want := []bench.Shape{{a.Batch, nq, a.QLd}, {a.Batch, nk, a.KLd}, {a.Batch, nk, a.VLd}}
	if a.Masked {
		want = append(want, bench.Shape{a.Batch, nk})
	}
	if err := checkShapes("mha_core", in, want); err != nil {
		return err
	}
	if err := checkShapes("mha_core", out, []bench.Shape{{a.Batch, nq, e}}); err != nil {
		return err
	}
	qd, kd, vd, ctx := in[0].data, in[1].data, in[2].data, out[0].data
	pairs := a.Batch * a.Heads
	blocks, rows := b.querySplit(pairs, nq)
	if b.fusedAttention(rows, nk) { // long sequences: attention_fused_mha.go
		b.mhaFused(a, in, out[0].data, blocks, rows)
		return nil
	}
	var mask func(s []float32, m, ld, img, r0 int)
	if a.Masked {
		mask = func(s []float32, m, ld, img, _ int) { maskKeys(s, m, ld, in[3].data[img*nk:(img+1)*nk]) }
	}
	b.scoredAttention(a.Batch, a.Heads, nq, nk, a.HeadDim, float32(a.Scale), blocks, rows,
		func(img, h, r0 int) scoreOperands {
			return scoreOperands{
				q:   qd[(img*nq+r0)*a.QLd+a.QOff+h*a.HeadDim:],
				k:   kd[img*nk*a.KLd+a.KOff+h*a.HeadDim:],
				v:   vd[img*nk*a.VLd+a.VOff+h*a.HeadDim:],
				ctx: ctx[(img*nq+r0)*e+h*a.HeadDim:], qld: a.QLd, kld: a.KLd, vld: a.VLd, ctxld: e,
			}
		},
		mask)
	return nil
}

// maskKeys sets every score s[i, j] (s [m, len(mask)], row stride ld) to
// −∞ where mask[j] ≠ 0: nn.MultiheadAttention's key_padding_mask.
func maskKeys(s []float32, m, ld int, mask []float32) {
	inf := float32(math.Inf(-1))
	for j, v := range mask {
		if v != 0 {
			for i := 0; i < m; i++ {
				s[i*ld+j] = inf
			}
		}
	}
}

func (b *Backend) concat(n ops.Concat, in, out []*tensor) error {
	if len(in) != n.Parts || len(out) != 1 || out[0].shape.Elems() != int64(n.Parts)*int64(n.Elems) {
		return fmt.Errorf("cpu: concat of %d parts of %d values got %d inputs and an output of %d values",
			n.Parts, n.Elems, len(in), out[0].shape.Elems())
	}
	for p, t := range in {
		if t.shape.Elems() != int64(n.Elems) {
			return fmt.Errorf("cpu: concat part %d has shape %v, not %d values", p, t.shape, n.Elems)
		}
	}
	b.derive(out[0], concatOp(n), in...)
	return nil
}

func (b *Backend) detrQueries(n ops.DETRQueries, in, out []*tensor) error {
	q, d := n.Queries, n.Dim
	if err := checkShapes("detr_queries", in, []bench.Shape{{q, d}}); err != nil {
		return err
	}
	if err := checkShapes("detr_queries", out, []bench.Shape{{n.Batch, q, d}, {n.Batch, q, d}}); err != nil {
		return err
	}
	for img := 0; img < n.Batch; img++ {
		copy(out[0].data[img*q*d:(img+1)*q*d], in[0].data)
	}
	clear(out[1].data)
	return nil
}

func (b *Backend) detrPostProcess(n ops.DETRPostProcess, in, out []*tensor) error {
	q, c := n.Queries, n.Classes+1
	want := []bench.Shape{{n.Batch, q, c}, {n.Batch, q, 4}}
	if n.Masked {
		want = append(want, bench.Shape{n.Batch, n.Height, n.Width})
	}
	if err := checkShapes("detr_post_process", in, want); err != nil {
		return err
	}
	if err := checkShapes("detr_post_process", out, []bench.Shape{{n.Batch, q}, {n.Batch, q}, {n.Batch, q, 4}}); err != nil {
		return err
	}
	logits, boxes := in[0].data, in[1].data
	scores, labels, out4 := out[0].data, out[1].data, out[2].data
	for img := 0; img < n.Batch; img++ {
		w, h := float32(n.Width), float32(n.Height)
		if n.Masked {
			vh, vw := validExtent(in[2].data[img*n.Height*n.Width:(img+1)*n.Height*n.Width], n.Height, n.Width)
			w, h = float32(vw), float32(vh)
		}
		for r := img * q; r < (img+1)*q; r++ {
			row := logits[r*c : (r+1)*c]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			var sum float64
			best := 0
			for j, v := range row {
				sum += math.Exp(float64(v - mx))
				if j < n.Classes && v > row[best] {
					best = j
				}
			}
			scores[r] = float32(math.Exp(float64(row[best]-mx)) / sum)
			labels[r] = float32(best)
			bx := boxes[r*4:]
			cx, cy, bw, bh := bx[0], bx[1], bx[2], bx[3]
			o := out4[r*4:]
			o[0], o[1], o[2], o[3] = (cx-0.5*bw)*w, (cy-0.5*bh)*h, (cx+0.5*bw)*w, (cy+0.5*bh)*h
		}
	}
	return nil
}

// rowSlice copies the rows and drops out's packed copy: out feeds a GEMM
// as its weight, and packedWeight would otherwise keep the matrix it
// packed from the rows of another layer.
func (b *Backend) rowSlice(n ops.RowSlice, in, out []*tensor) error {
	lo, hi := int64(n.Off)*int64(n.Cols), int64(n.Off+n.Rows)*int64(n.Cols)
	if len(in) != 1 || len(out) != 1 || n.Off < 0 || in[0].shape.Elems() < hi || in[0].shape.Elems()%int64(max(n.Cols, 1)) != 0 {
		return fmt.Errorf("cpu: row_slice of rows [%d, %d) of %d columns from %d tensors", n.Off, n.Off+n.Rows, n.Cols, len(in))
	}
	if out[0].shape.Elems() != hi-lo {
		return fmt.Errorf("cpu: row_slice of %d values into a tensor of shape %v", hi-lo, out[0].shape)
	}
	b.derive(out[0], sliceOp(n), in[0])
	return nil
}
