package cpu

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// attnPool runs ops.AttnPool (CLIP's AttentionPool2d: one query, the
// first token, against all n tokens) without projecting the n keys and
// values. With D = HeadDim, per image b and head h, x = tokens[b]:
//
//	q = x[0]·Wqᵀ + bq                                   (gemm, packed Wq)
//	u[h, c] = Σ_{d<D} q[h·D+d]·Wk[h·D+d, c]             (the query folded into Wk)
//	S[h, j] = Σ_c x[j, c]·u[h, c]                         (= q_h·k_j − q_h·bk_h)
//	P[h] = softmax(Scale·S[h]) over j
//	y[h, c] = Σ_j P[h, j]·x[j, c]
//	out[h·D+e] = Σ_c y[h, c]·Wv[h·D+e, c] + bv[h·D+e]    (= Σ_j P[h, j]·v_j, as Σ_j P = 1)
//
// which is the parts' result reassociated, less the key bias: it adds the
// same q_h·bk_h to every score of head h, which the softmax cancels. The
// k and v projections of all n tokens (2·n·C² multiply-adds, reading Wk
// and Wv from memory as products of n rows) become one pass over each
// weight as a product of one row per image and head (2·C² per image),
// plus 2·n·H·C for S and y.
// On cpu-bf16 the node runs as its parts (Supports).
func (b *Backend) attnPool(a ops.AttnPool, in, out []*tensor) error {
	bs, n, c, heads := a.Batch, a.Tokens, a.Chans, a.Heads
	if heads <= 0 || c%heads != 0 {
		return fmt.Errorf("cpu: attn_pool: %d channels do not split into %d heads", c, heads)
	}
	if int64(c)*int64(c) > math.MaxInt32 {
		// kern.WeightedRows takes int32 offsets into a head's C·D values.
		return fmt.Errorf("cpu: attn_pool: %d channels: a weight of %d values is past the int32 offsets of its kernels", c, int64(c)*int64(c))
	}
	w := bench.Shape{c, c}
	if err := checkShapes("attn_pool", in, []bench.Shape{{bs, n, c}, w, {c}, w, {c}, w, {c}}); err != nil {
		return err
	}
	if err := checkShapes("attn_pool", out, []bench.Shape{{bs, 1, c}}); err != nil {
		return err
	}
	x, wk, bv, ctx := in[0].data, in[3].data, in[6].data, out[0].data
	d := c / heads
	// Each image's tokens (for S) and heads (for P and y) are split in
	// groups when there are fewer images than workers.
	groups := max(1, b.threads/bs)
	tokGroup, headGroup := (n+groups-1)/groups, (heads+groups-1)/groups
	ld := scoreStride(n)
	tasks := bs * groups
	buf, release := b.scratch(bs*c + 2*bs*heads*c + bs*n*heads + min(b.threads, tasks)*headGroup*ld)
	defer release()
	q, buf := buf[:bs*c], buf[bs*c:]
	u, buf := buf[:bs*heads*c], buf[bs*heads*c:]
	y, buf := buf[:bs*heads*c], buf[bs*heads*c:]
	st, perTask := buf[:bs*n*heads], buf[bs*n*heads:]

	// q for every image: token 0 of each, n·C apart.
	gemmParallel(b.threads, bs, x, n*c, b.packedWeight(in[1], c, c, true), q, c, kern.Epilogue{Bias: in[2].data})

	// u: one pass over Wk, head by head (head h's D rows of Wk are
	// contiguous: a sequential read), each head's rows for every image in
	// turn while they are in L2.
	parallelFor(b.threads, heads*bs, 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			h, img := t/bs, t%bs
			qh, ut := q[img*c+h*d:img*c+(h+1)*d], u[(img*heads+h)*c:(img*heads+h+1)*c]
			kern.Scale(c, qh[0], wk[h*d*c:(h*d+1)*c], ut)
			for i := 1; i < d; i++ {
				kern.AddScaled(c, qh[i], ut, wk[(h*d+i)*c:(h*d+i+1)*c], ut)
			}
		}
	})

	// st[j, h] = x[j]·u[h] for each (image, group of tokens): the
	// tokens' rows against all the heads' rows of u (whole panels of the
	// product: a group of heads would leave most of one empty).
	parallelFor(b.threads, tasks, 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			img, g := t/groups, t%groups
			j0, j1 := g*tokGroup, min((g+1)*tokGroup, n)
			if j0 < j1 {
				kern.Sgemm(j1-j0, heads, c, x[(img*n+j0)*c:], c, u[img*heads*c:], c, true, st[(img*n+j0)*heads:], heads)
			}
		}
	})
	// P = softmax(Scale·S) and y = P·x for each (image, group of heads).
	scale := float32(a.Scale)
	parallelWorkers(min(b.threads, tasks), tasks, 1, func(wkr, lo, hi int) {
		s := perTask[wkr*headGroup*ld : (wkr+1)*headGroup*ld]
		for t := lo; t < hi; t++ {
			img, g := t/groups, t%groups
			h0, h1 := g*headGroup, min((g+1)*headGroup, heads)
			if h0 >= h1 {
				continue
			}
			hg := h1 - h0
			for h := 0; h < hg; h++ {
				for j := 0; j < n; j++ {
					s[h*ld+j] = st[(img*n+j)*heads+h0+h]
				}
			}
			kern.Softmax(hg, n, s, ld, s, ld, scale)
			kern.Sgemm(hg, c, n, s, ld, x[img*n*c:(img+1)*n*c], c, false, y[(img*heads+h0)*c:], c)
		}
	})

	// out: one pass over Wv, regrouped head by head: head h's D values
	// of an image are a weighted sum of C contiguous rows of D.
	wv := b.headMajor(in[5], heads, d, c)
	parallelFor(b.threads, heads*bs, 1, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			h, img := t/bs, t%bs
			o := ctx[img*c+h*d : img*c+(h+1)*d]
			kern.WeightedRows(d, wv.data[h*c*d:(h+1)*c*d], wv.rows, y[(img*heads+h)*c:(img*heads+h+1)*c], o)
			kern.Add(d, o, bv[h*d:(h+1)*d], o)
		}
	})
	return nil
}

// headMajorWeight is a weight W [C, C] whose rows are Heads heads of D
// outputs, regrouped head by head with each head's rows transposed:
//
//	data[(h·C + c)·D + e] = W[h·D + e, c]
//
// so that head h's outputs, Σ_c y[c]·W[h·D+e, c], are a weighted sum of C
// contiguous rows of D values: one sequential pass over the head's C·D
// values.
type headMajorWeight struct {
	version uint64
	heads   int
	data    []float32
	rows    []int32 // where each of a head's C rows of D starts: rows[c] = c·D
}

// headMajor returns t [C, C] regrouped for heads heads of d values,
// building it when t was uploaded or written since (its bytes count toward
// Memory until t is freed or changes).
func (b *Backend) headMajor(t *tensor, heads, d, c int) *headMajorWeight {
	if hm := t.headMajor; hm != nil && hm.version == t.version && hm.heads == heads && len(hm.data) == c*c {
		return hm
	}
	b.dropPacked(t)
	data := make([]float32, c*c)
	for h := 0; h < heads; h++ {
		for e := 0; e < d; e++ {
			for col, v := range t.data[(h*d+e)*c : (h*d+e+1)*c] {
				data[(h*c+col)*d+e] = v
			}
		}
	}
	rows := make([]int32, c)
	for r := range rows {
		rows[r] = int32(r * d)
	}
	t.headMajor = &headMajorWeight{version: t.version, heads: heads, data: data, rows: rows}
	b.account(t.headMajor.bytes())
	return t.headMajor
}

// bytes is the memory the regrouped copy holds.
func (hm *headMajorWeight) bytes() int64 { return int64(len(hm.data)+len(hm.rows)) * 4 }
