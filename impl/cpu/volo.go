package cpu

import (
	"fmt"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// avgPoolNHWC averages each window's channel vectors: whole rows of C
// values are added with the SIMD kernel, then scaled by 1/count.
func (b *Backend) avgPoolNHWC(a ops.AvgPoolNHWC, in, out []*tensor) error {
	oh, ow, c := a.OutH(), a.OutW(), a.Chans
	if err := checkRowShapes("avg_pool_nhwc", in, []bench.Shape{{a.Batch, a.Height, a.Width, c}}, 0); err != nil {
		return err
	}
	if err := checkRowShapes("avg_pool_nhwc", out, []bench.Shape{{a.Batch, oh, ow, c}}, 0); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	threads := b.threads
	if len(x) < 1<<15 {
		threads = 1
	}
	parallelFor(threads, a.Batch*oh, 1, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			img, oy := r/oh, r%oh
			y0, y1 := oy*a.K, min(oy*a.K+a.K, a.Height)
			for ox := 0; ox < ow; ox++ {
				x0, x1 := ox*a.K, min(ox*a.K+a.K, a.Width)
				dst := y[((img*oh+oy)*ow+ox)*c : ((img*oh+oy)*ow+ox+1)*c]
				clear(dst)
				for yy := y0; yy < y1; yy++ {
					for xx := x0; xx < x1; xx++ {
						p := ((img*a.Height+yy)*a.Width + xx) * c
						kern.Add(c, dst, x[p:p+c], dst)
					}
				}
				kern.Scale(c, float32(1/float64((y1-y0)*(x1-x0))), dst, dst)
			}
		}
	})
	return nil
}

// outlookCore runs VOLO's unfold–attention–fold without the unfolded
// tensor. The logits are soft-maxed into a scratch buffer first; then
// every output pixel gathers, for all heads in one kern.WeightedRowsHeads
// call, the windows that cover it and their source pixels (up to
// ⌈K/S⌉²·K² weighted rows of D values per head), so the fold's sum is a
// gather and no two workers write the same pixel. Which rows and weights
// a pixel gathers depends only on the geometry (outlookPlan, built once).
func (b *Backend) outlookCore(o ops.OutlookCore, in, out []*tensor) error {
	gh, gw, k2 := o.GridH(), o.GridW(), o.K*o.K
	if o.Heads <= 0 || o.Dim%o.Heads != 0 || gh <= 0 || gw <= 0 {
		return fmt.Errorf("cpu: outlook_core with dim %d, heads %d and a %d×%d window grid", o.Dim, o.Heads, gh, gw)
	}
	width := o.Heads * k2 * k2
	img := bench.Shape{o.Batch, o.Height, o.Width, o.Dim}
	if err := checkRowShapes("outlook_core", in, []bench.Shape{img, {o.Batch, gh, gw, width}}, 0, 1); err != nil {
		return err
	}
	if err := checkRowShapes("outlook_core", out, []bench.Shape{img}, 0); err != nil {
		return err
	}
	v, logits, y := in[0].data, in[1].data, out[0].data
	attn, release := b.scratch(len(logits))
	defer release()
	rows := len(logits) / k2
	threads := b.threads
	if len(logits)+len(y) < 1<<14 {
		threads = 1
	}
	parallelFor(threads, rows, 64, func(lo, hi int) {
		kern.Softmax(hi-lo, k2, logits[lo*k2:], k2, attn[lo*k2:], k2, float32(o.Scale))
	})
	d := o.Dim / o.Heads
	pl := b.outlookPlanFor(o)
	// The plan counts in Memory while the node runs, as scratch does.
	b.account(pl.bytes())
	defer b.account(-pl.bytes())
	plane, attnImg, pixels := o.Height*o.Width*o.Dim, gh*gw*width, o.Height*o.Width
	parallelWorkers(threads, o.Batch*o.Height, 1, func(_, lo, hi int) {
		for r := lo; r < hi; r++ {
			bi, py := r/o.Height, r%o.Height
			src, a := v[bi*plane:(bi+1)*plane], attn[bi*attnImg:(bi+1)*attnImg]
			for px := 0; px < o.Width; px++ {
				p := py*o.Width + px
				t0, t1 := pl.starts[p], pl.starts[p+1]
				dst := y[(bi*pixels+p)*o.Dim:][:o.Dim]
				kern.WeightedRowsHeads(d, o.Heads, src, pl.offs[t0:t1], pl.where[t0:t1], a, k2*k2, dst)
			}
		}
	})
	return nil
}

// outlookPlan is what each output pixel of an outlook attention gathers
// (the same for every image, head and call of one geometry): pixel p's
// terms are [starts[p], starts[p+1]), term t the source row at offs[t]
// (head 0's channels of the image) weighted by the attention at where[t]
// (head 0's, in the image's logits).
type outlookPlan struct {
	starts      []int32
	offs, where []int32
}

// bytes is the size of the plan's lists.
func (pl *outlookPlan) bytes() int64 {
	return 4 * int64(cap(pl.starts)+cap(pl.offs)+cap(pl.where))
}

// outlookPlanFor returns the plan of o's geometry, built on first use and
// kept by the backend (a network has one or two outlook geometries).
func (b *Backend) outlookPlanFor(o ops.OutlookCore) *outlookPlan {
	key := o
	key.Batch, key.Scale = 0, 0
	if pl, ok := b.outlookPlans[key]; ok {
		return pl
	}
	gw, k2 := o.GridW(), o.K*o.K
	gh := o.GridH()
	width := o.Heads * k2 * k2
	pl := &outlookPlan{starts: make([]int32, 1, o.Height*o.Width+1)}
	for py := 0; py < o.Height; py++ {
		// Window rows wy with wy·S − P ≤ py < wy·S − P + K.
		wy0, wy1 := max(0, ceilDiv(py+o.Pad-o.K+1, o.Stride)), min(gh-1, (py+o.Pad)/o.Stride)
		for px := 0; px < o.Width; px++ {
			wx0, wx1 := max(0, ceilDiv(px+o.Pad-o.K+1, o.Stride)), min(gw-1, (px+o.Pad)/o.Stride)
			for wy := wy0; wy <= wy1; wy++ {
				ky := py - (wy*o.Stride - o.Pad)
				for wx := wx0; wx <= wx1; wx++ {
					kx := px - (wx*o.Stride - o.Pad)
					a := (wy*gw+wx)*width + (ky*o.K+kx)*k2
					for jy := 0; jy < o.K; jy++ {
						sy := wy*o.Stride - o.Pad + jy
						if sy < 0 || sy >= o.Height {
							continue
						}
						for jx := 0; jx < o.K; jx++ {
							sx := wx*o.Stride - o.Pad + jx
							if sx < 0 || sx >= o.Width {
								continue
							}
							pl.offs = append(pl.offs, int32((sy*o.Width+sx)*o.Dim))
							pl.where = append(pl.where, int32(a+jy*o.K+jx))
						}
					}
				}
			}
			pl.starts = append(pl.starts, int32(len(pl.offs)))
		}
	}
	if b.outlookPlans == nil {
		b.outlookPlans = map[ops.OutlookCore]*outlookPlan{}
	}
	b.outlookPlans[key] = pl
	return pl
}

// ceilDiv is ⌈a/b⌉ for b > 0 and any sign of a.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return -(-a / b)
	}
	return (a + b - 1) / b
}

// patchRowsNHWC gathers each P×P patch's pixels into one row in the
// Conv2d weight's (c, ky, kx) order.
func (b *Backend) patchRowsNHWC(p ops.PatchRowsNHWC, in, out []*tensor) error {
	gh, gw, c, pp := p.Height/p.P, p.Width/p.P, p.Chans, p.P*p.P
	if err := checkRowShapes("patch_rows_nhwc", in, []bench.Shape{{p.Batch, p.Height, p.Width, c}}, 0); err != nil {
		return err
	}
	if err := checkRowShapes("patch_rows_nhwc", out, []bench.Shape{{p.Batch, gh, gw, c * pp}}, 0); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	// Rows of patches split between workers; each output row written in
	// order, channel by channel, from its P·P source pixels (the scatter
	// into every P·P-th value ran serially at 1.6 ns a value, VOLO-D1's
	// 150 528 in 244 µs; with this, aux_merge's kern.Max and reshape's
	// parallel copy: volo_d1 1.010× on cpu-bf16 and 1.018× on cpu, paired).
	parallelFor(b.threads, p.Batch*gh, 1, func(lo, hi int) {
		src := make([][]float32, pp)
		for r := lo; r < hi; r++ {
			bi, gy := r/gh, r%gh
			for gx := 0; gx < gw; gx++ {
				row := y[((bi*gh+gy)*gw+gx)*c*pp:][:c*pp]
				for ky := 0; ky < p.P; ky++ {
					for kx := 0; kx < p.P; kx++ {
						src[ky*p.P+kx] = x[((bi*p.Height+gy*p.P+ky)*p.Width+gx*p.P+kx)*c:][:c]
					}
				}
				for ci := range c {
					out := row[ci*pp : ci*pp+pp]
					for q, px := range src {
						out[q] = px[ci]
					}
				}
			}
		}
	})
	return nil
}

// addBroadcast adds y to every image of x.
func (b *Backend) addBroadcast(a ops.AddBroadcast, in, out []*tensor) error {
	if len(in) != 2 || len(out) != 1 || len(in[0].data) != a.Batch*a.Elems || len(in[1].data) != a.Elems ||
		len(out[0].data) != a.Batch*a.Elems {
		return fmt.Errorf("cpu: add_broadcast wants x and out of %d×%d values and y of %d", a.Batch, a.Elems, a.Elems)
	}
	for i := 0; i < a.Batch; i++ {
		kern.Add(a.Elems, in[0].data[i*a.Elems:], in[1].data, out[0].data[i*a.Elems:])
	}
	return nil
}

// prependToken writes [token, x[b]] for every image.
func (b *Backend) prependToken(p ops.PrependToken, in, out []*tensor) error {
	n, e := p.Tokens, p.Dim
	if err := checkRowShapes("prepend_token", in, []bench.Shape{{p.Batch, n, e}, {1, 1, e}}, 0); err != nil {
		return err
	}
	if err := checkShapes("prepend_token", out, []bench.Shape{{p.Batch, n + 1, e}}); err != nil {
		return err
	}
	for i := 0; i < p.Batch; i++ {
		dst := out[0].data[i*(n+1)*e:]
		copy(dst[:e], in[1].data)
		copy(dst[e:(n+1)*e], in[0].data[i*n*e:(i+1)*n*e])
	}
	return nil
}

// putToken copies x and overwrites token Index with tok.
func (b *Backend) putToken(p ops.PutToken, in, out []*tensor) error {
	n, e := p.Tokens, p.Dim
	if p.Index < 0 || p.Index >= n {
		return fmt.Errorf("cpu: put_token index %d outside %d tokens", p.Index, n)
	}
	if err := checkShapes("put_token", in, []bench.Shape{{p.Batch, n, e}, {p.Batch, 1, e}}); err != nil {
		return err
	}
	if err := checkShapes("put_token", out, []bench.Shape{{p.Batch, n, e}}); err != nil {
		return err
	}
	copy(out[0].data, in[0].data)
	for i := 0; i < p.Batch; i++ {
		copy(out[0].data[(i*n+p.Index)*e:(i*n+p.Index+1)*e], in[1].data[i*e:(i+1)*e])
	}
	return nil
}

// classAttnCore attends from each image's one query over all tokens, per
// head: scores by a 1-row GEMM, softmax, then the weighted sum of the
// value rows.
func (b *Backend) classAttnCore(c ops.ClassAttnCore, in, out []*tensor) error {
	e, n, d := c.Heads*c.HeadDim, c.Tokens, c.HeadDim
	if err := checkShapes("class_attn_core", in, []bench.Shape{{c.Batch, 1, e}, {c.Batch, n, 2 * e}}); err != nil {
		return err
	}
	if err := checkShapes("class_attn_core", out, []bench.Shape{{c.Batch, 1, e}}); err != nil {
		return err
	}
	q, kv, y := in[0].data, in[1].data, out[0].data
	pairs := c.Batch * c.Heads
	threads := min(b.threads, pairs)
	if pairs*n*d < 1<<14 {
		threads = 1
	}
	scores, release := b.scratch(threads * n)
	defer release()
	matmul := b.matmul()
	parallelWorkers(threads, pairs, 1, func(w, lo, hi int) {
		s := scores[w*n : (w+1)*n]
		for p := lo; p < hi; p++ {
			img, h := p/c.Heads, p%c.Heads
			base := kv[img*n*2*e:]
			matmul(1, n, d, q[img*e+h*d:], e, base[h*d:], 2*e, true, s, n)
			kern.Softmax(1, n, s, n, s, n, float32(c.Scale))
			matmul(1, d, n, s, n, base[e+h*d:], 2*e, false, y[img*e+h*d:], e)
		}
	})
	return nil
}

// auxMerge adds half the per-class maximum of the auxiliary logits over
// the patch tokens to the class-token logits.
func (b *Backend) auxMerge(a ops.AuxMerge, in, out []*tensor) error {
	k, n := a.Classes, a.Tokens
	if n < 2 {
		return fmt.Errorf("cpu: aux_merge needs at least one patch token besides the class token, got %d tokens", n)
	}
	if err := checkShapes("aux_merge", in, []bench.Shape{{a.Batch, 1, k}, {a.Batch, n, k}}); err != nil {
		return err
	}
	if err := checkShapes("aux_merge", out, []bench.Shape{{a.Batch, k}}); err != nil {
		return err
	}
	cls, aux, y := in[0].data, in[1].data, out[0].data
	for i := 0; i < a.Batch; i++ {
		m := y[i*k : (i+1)*k]
		copy(m, aux[(i*n+1)*k:(i*n+2)*k])
		for t := 2; t < n; t++ {
			// A NaN stays, as torch.max propagates it (kern.Max).
			kern.Max(k, m, aux[(i*n+t)*k:(i*n+t+1)*k], m)
		}
		kern.AddScaled(k, 0.5, cls[i*k:(i+1)*k], m, m)
	}
	return nil
}
