package cpu

import "vitbench/impl/cpu/internal/kern"

// gemmParallel computes C[m, n] = A[m, k]·B[n, k]ᵀ (+ bias) on threads
// workers. It splits the n columns (rows of B, the weights) into one
// contiguous block per worker, aligned to 16, when there are enough of
// them, so each worker reads a disjoint part of B and all of A; otherwise
// it splits the rows of A.
func gemmParallel(threads, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	if n >= 32*threads {
		blocks := (n + 15) / 16
		parallelFor(threads, blocks, 1, func(lo, hi int) {
			j0, j1 := lo*16, min(hi*16, n)
			var bb []float32
			if bias != nil {
				bb = bias[j0:j1]
			}
			kern.SgemmNT(m, j1-j0, k, a, lda, b[j0*ldb:], ldb, c[j0:], ldc, bb)
		})
		return
	}
	parallelFor(threads, m, 4, func(lo, hi int) {
		kern.SgemmNT(hi-lo, n, k, a[lo*lda:], lda, b, ldb, c[lo*ldc:], ldc, bias)
	})
}
