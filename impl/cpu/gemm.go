package cpu

import "vitbench/impl/cpu/internal/kern"

// gemmParallel computes C[m, n] = A[m, k]·op(B)ᵀ (+ bias) with op(B)
// prepacked in pb, on threads workers. Each worker takes a contiguous run
// of column panels, so it reads a disjoint part of B (the weights) and all
// of A; with too few panels for every worker, it falls back to fewer.
func gemmParallel(threads, m int, a []float32, lda int, pb *kern.PackedB, c []float32, ldc int, bias []float32) {
	w := pb.PanelWidth()
	panels := pb.Panels()
	// At least two 32-wide panels' worth of columns per worker.
	grain := max(1, 64/w)
	parallelFor(threads, panels, grain, func(lo, hi int) {
		kern.SgemmPacked(m, a, lda, pb, c, ldc, bias, lo*w, min(hi*w, pb.N))
	})
}
