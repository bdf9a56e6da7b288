package cpu

import (
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// performerCore computes T2T-ViT's random-feature attention image by
// image (workers take images): the feature maps φ(k) and φ(q) through one
// GEMM each against w, then kptv = φ(k)ᵀ·v and out = φ(q)·kptv / (D + eps).
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
	threads := min(b.threads, p.Batch)
	per := 2*t*m + m*t + m*e + t
	buf, release := b.scratch(threads * per)
	defer release()
	parallelChunks(threads, p.Batch, 1, func(worker, lo, hi int) {
		ws := buf[worker*per : (worker+1)*per]
		kp, qp, kpT, kptv, d := ws[:t*m], ws[t*m:2*t*m], ws[2*t*m:2*t*m+m*t], ws[2*t*m+m*t:2*t*m+m*t+m*e], ws[2*t*m+m*t+m*e:]
		for img := lo; img < hi; img++ {
			x := kqv[img*t*3*e:]
			features(t, e, m, x, w, shift, kp)     // k: columns 0..E
			features(t, e, m, x[e:], w, shift, qp) // q: columns E..2E
			for r := 0; r < t; r++ {
				for j := 0; j < m; j++ {
					kpT[j*t+r] = kp[r*m+j]
				}
			}
			// kptvᵀ [M, E] = φ(k)ᵀ · v.
			kern.Sgemm(m, e, t, kpT, t, x[2*e:], 3*e, false, kptv, e)
			// D[t] = φ(q)[t] · Σ_t' φ(k)[t'].
			ksum := make([]float64, m)
			for r := 0; r < t; r++ {
				for j, v := range kp[r*m : (r+1)*m] {
					ksum[j] += float64(v)
				}
			}
			for r := 0; r < t; r++ {
				var s float64
				for j, v := range qp[r*m : (r+1)*m] {
					s += float64(v) * ksum[j]
				}
				d[r] = float32(s)
			}
			dst := y[img*t*e : (img+1)*t*e]
			kern.Sgemm(t, e, m, qp, m, kptv, e, false, dst, e)
			for r := 0; r < t; r++ {
				kern.Scale(e, 1/(d[r]+float32(p.Eps)), dst[r*e:(r+1)*e], dst[r*e:(r+1)*e])
			}
		}
	})
	return nil
}

// features writes φ(x) [T, M] for the rows x[r·3E : r·3E+E]:
// φ(x)_j = exp(w_j·x − ‖x‖²/2) / √M, computed as exp(a − shift)·exp(shift)/√M.
func features(t, e, m int, x, w []float32, shift float64, out []float32) {
	kern.Sgemm(t, m, e, x, 3*e, w, e, true, out, m)
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
