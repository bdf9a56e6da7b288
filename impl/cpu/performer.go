package cpu

import (
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// performerCore computes T2T-ViT's random-feature attention image by
// image: the feature maps φ(k) and φ(q) through a GEMM against w (rows
// split between workers), the token reductions kptv = φ(k)ᵀ·v and Σφ(k)
// (each worker over its tokens, the parts added in worker order), then
// out = φ(q)·kptv / (D + eps) (rows split again). The reductions (the
// product kptv included) ran on one worker, and the float64 sums of
// squares and dot products as one chain of dependent additions each:
// without both, T2T-ViT-14's 3136-token performer ran 1.5× slower on cpu
// and 1.3–1.5× on cpu-bf16 (medians of 400 runs alternating old and new
// code, 2 vCPUs), and the whole t2t_vit_14 1.021× slower on cpu-bf16
// (1.002× on cpu; 60–100 paired runs).
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
	threads := b.threads
	matmul := b.matmul()
	if t*m*e < 1<<16 {
		threads = 1
	}
	buf, release := b.scratch(2*t*m + m*t + threads*m*e + t)
	defer release()
	kp, qp, kpT := buf[:t*m], buf[t*m:2*t*m], buf[2*t*m:3*t*m]
	parts, d := buf[3*t*m:3*t*m+threads*m*e], buf[3*t*m+threads*m*e:]
	kptv := parts[:m*e] // worker 0's part, the others added to it
	ksum := make([]float64, m)
	ksums := make([]float64, threads*m)
	for img := 0; img < p.Batch; img++ {
		x := kqv[img*t*3*e:]
		// Feature maps, rows split between workers.
		parallelFor(threads, t, 16, func(lo, hi int) {
			features(matmul, hi-lo, e, m, x[lo*3*e:], w, shift, kp[lo*m:])   // k: columns 0..E
			features(matmul, hi-lo, e, m, x[lo*3*e+e:], w, shift, qp[lo*m:]) // q: columns E..2E
		})
		// The reductions over tokens, kptv [M, E] = φ(k)ᵀ·v and Σ_t φ(k):
		// each worker transposes its tokens' rows of φ(k) into their
		// columns of kpT and reduces over them into its own part.
		// (Parts of workers without tokens stay zero.)
		clear(ksums)
		clear(parts[m*e:])
		parallelChunks(threads, t, 64, func(c, lo, hi int) {
			kern.Transpose(hi-lo, m, kp[lo*m:], m, kpT[lo:], t)
			for j := range m {
				ksums[c*m+j] = sum64(kpT[j*t+lo : j*t+hi])
			}
			matmul(m, e, hi-lo, kpT[lo:], t, x[lo*3*e+2*e:], 3*e, false, parts[c*m*e:(c+1)*m*e], e)
		})
		copy(ksum, ksums[:m])
		for c := 1; c < threads; c++ {
			for j := range ksum {
				ksum[j] += ksums[c*m+j]
			}
			kern.Add(m*e, kptv, parts[c*m*e:(c+1)*m*e], kptv)
		}
		dst := y[img*t*e : (img+1)*t*e]
		parallelFor(threads, t, 16, func(lo, hi int) {
			// D[t] = φ(q)[t]·Σ_t' φ(k)[t'];  out = φ(q)·kptv / (D + eps).
			matmul(hi-lo, e, m, qp[lo*m:], m, kptv, e, false, dst[lo*e:], e)
			for r := lo; r < hi; r++ {
				d[r] = float32(dot64(qp[r*m:(r+1)*m], ksum))
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
		off := float32(sumSquares64(x[r*3*e:r*3*e+e])/2 + shift)
		for j := range row {
			row[j] -= off
		}
		kern.Exp(m, row, row)
		kern.Scale(m, scale, row, row)
	}
}

// sum64 is Σ x[i] in float64, in four interleaved partial sums (one chain
// of dependent float64 additions waits for each before the next).
func sum64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSquares64 is Σ x[i]² in float64, in four partial sums (sum64).
func sumSquares64(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// dot64 is Σ a[i]·b[i] in float64, in four partial sums (sum64).
func dot64(a []float32, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * b[i]
		s1 += float64(a[i+1]) * b[i+1]
		s2 += float64(a[i+2]) * b[i+2]
		s3 += float64(a[i+3]) * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
