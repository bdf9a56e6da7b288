package cpu

import "vitbench/impl/cpu/internal/kern"

// gemmParallel computes C[m, n] = A[m, k]·op(B) with the epilogue, op(B)
// prepacked in pb, on threads workers. With enough rows, each worker takes
// a run of whole row tiles: it packs only its own rows of A and shares the
// read-only packed B. With few rows (one token, a small batch), workers
// split the column panels instead. Small products stay on one worker.
func gemmParallel(threads, m int, a []float32, lda int, pb *kern.PackedB, c []float32, ldc int, epi kern.Epilogue) {
	if int64(m)*int64(pb.N)*int64(pb.K) < 1<<18 {
		threads = 1
	}
	if mr := pb.RowTile(); m >= 2*mr*threads || threads == 1 {
		tiles := (m + mr - 1) / mr
		parallelFor(threads, tiles, 1, func(lo, hi int) {
			r0, r1 := lo*mr, min(hi*mr, m)
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
