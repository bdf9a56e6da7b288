package cpu

import "vitbench/impl/cpu/internal/kern"

// gemmParallel computes C[m, n] = A[m, k]·op(B) (+ bias) with op(B)
// prepacked in pb, on threads workers. With enough rows, each worker takes
// a run of whole row tiles: it packs only its own rows of A and shares the
// read-only packed B. With few rows (one token, a small batch), workers
// split the column panels instead.
func gemmParallel(threads, m int, a []float32, lda int, pb *kern.PackedB, c []float32, ldc int, bias []float32) {
	forRowTiles(threads, m, pb, nil, a, lda, c, ldc, kern.Epilogue{Bias: bias})
}

// forRowTiles runs the GEMM of gemmParallel, first calling produce(r0, r1)
// in each worker for the rows of A it is about to use (nil: A is ready),
// so that producing A and multiplying it share one parallel region.
func forRowTiles(threads, m int, pb *kern.PackedB, produce func(r0, r1 int), a []float32, lda int, c []float32, ldc int, epi kern.Epilogue) {
	// Below about a quarter of a million multiply-adds (tens of
	// microseconds), waking a second worker costs more than it saves.
	if int64(m)*int64(pb.N)*int64(pb.K) < 1<<18 {
		threads = 1
	}
	if mr := pb.RowTile(); m >= 2*mr*threads || produce != nil {
		tiles := (m + mr - 1) / mr
		parallelFor(threads, tiles, 1, func(lo, hi int) {
			r0, r1 := lo*mr, min(hi*mr, m)
			if produce != nil {
				produce(r0, r1)
			}
			rows := epi
			if rows.Residual != nil {
				rows.Residual = rows.Residual[r0*rows.LdR:]
			}
			kern.SgemmPackedEpi(r1-r0, a[r0*lda:], lda, pb, c[r0*ldc:], ldc, rows, 0, pb.N)
		})
		return
	}
	w := pb.PanelWidth()
	grain := max(1, 64/w) // at least 64 columns per worker
	parallelFor(threads, pb.Panels(), grain, func(lo, hi int) {
		kern.SgemmPackedEpi(m, a, lda, pb, c, ldc, epi, lo*w, min(hi*w, pb.N))
	})
}
