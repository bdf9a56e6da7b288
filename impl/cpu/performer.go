package cpu

import (
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// performerCore computes T2T-ViT's random-feature attention image by
// image: the feature maps φ(k) and φ(q) through a GEMM against w (rows
// split between workers), the token reductions kptv = φ(k)ᵀ·v and Σφ(k),
// then out = φ(q)·kptv / (D + eps) (rows split again).
func (b *Backend) performerCore(p ops.PerformerCore, in, out []*tensor) error {
	t, e, m := p.Tokens, p.Emb, p.M
	if err := checkShapes("performer_core", in, []bench.Shape{{p.Batch, t, 3 * e}, {m, e}}); err != nil {
		return err
	}
	if err := checkShapes("performer_core", out, []bench.Shape{{p.Batch, t, e}}); err != nil {
		return err
	}
	kqv, w, y := in[0].data, in[1].data, out[0].data
	// exp(w·x − ‖x‖²/2) ≤ exp(‖w_j‖²/2): shifting every exponent by the
	// largest ‖w_j‖²/2 keeps the vector exp's argument ≤ 0.
	shift := 0.0
	for j := 0; j < m; j++ {
		var s float64
		for _, v := range w[j*e : (j+1)*e] {
			s += float64(v) * float64(v)
		}
		shift = math.Max(shift, s/2)
	}
	buf, release := b.scratch(2*t*m + m*t + m*e + t)
	defer release()
	kp, qp, kpT, kptv, d := buf[:t*m], buf[t*m:2*t*m], buf[2*t*m:2*t*m+m*t], buf[2*t*m+m*t:2*t*m+m*t+m*e], buf[2*t*m+m*t+m*e:]
	ksum := make([]float64, m)
	threads := b.threads
	matmul := b.matmul()
	if t*m*e < 1<<16 {
		threads = 1
	}
	for img := 0; img < p.Batch; img++ {
		x := kqv[img*t*3*e:]
		// Feature maps, rows split between workers.
		parallelFor(threads, t, 16, func(lo, hi int) {
			features(matmul, hi-lo, e, m, x[lo*3*e:], w, shift, kp[lo*m:])   // k: columns 0..E
			features(matmul, hi-lo, e, m, x[lo*3*e+e:], w, shift, qp[lo*m:]) // q: columns E..2E
		})
		// The reductions over tokens: kptvᵀ [M, E] = φ(k)ᵀ·v and Σ_t φ(k).
		clear(ksum)
		for r := 0; r < t; r++ {
			for j, v := range kp[r*m : (r+1)*m] {
				kpT[j*t+r] = v
				ksum[j] += float64(v)
			}
		}
		matmul(m, e, t, kpT, t, x[2*e:], 3*e, false, kptv, e)
		dst := y[img*t*e : (img+1)*t*e]
		parallelFor(threads, t, 16, func(lo, hi int) {
			// D[t] = φ(q)[t]·Σ_t' φ(k)[t'];  out = φ(q)·kptv / (D + eps).
			matmul(hi-lo, e, m, qp[lo*m:], m, kptv, e, false, dst[lo*e:], e)
			for r := lo; r < hi; r++ {
				var s float64
				for j, v := range qp[r*m : (r+1)*m] {
					s += float64(v) * ksum[j]
				}
				d[r] = float32(s)
				kern.Scale(e, 1/(d[r]+float32(p.Eps)), dst[r*e:(r+1)*e], dst[r*e:(r+1)*e])
			}
		})
	}
	return nil
}

// features writes φ(x) [T, M] for the rows x[r·3E : r·3E+E]:
// φ(x)_j = exp(w_j·x − ‖x‖²/2) / √M, computed as exp(a − shift)·exp(shift)/√M,
// with the products w_j·x by matmul.
func features(matmul matmulFn, t, e, m int, x, w []float32, shift float64, out []float32) {
	matmul(t, m, e, x, 3*e, w, e, true, out, m)
	scale := float32(math.Exp(shift) / math.Sqrt(float64(m)))
	for r := 0; r < t; r++ {
		row := out[r*m : (r+1)*m]
		var n2 float64
		for _, v := range x[r*3*e : r*3*e+e] {
			n2 += float64(v) * float64(v)
		}
		off := float32(n2/2 + shift)
		for j := range row {
			row[j] -= off
		}
		kern.Exp(m, row, row)
		kern.Scale(m, scale, row, row)
	}
}
