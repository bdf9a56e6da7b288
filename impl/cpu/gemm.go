package cpu

import "vitbench/impl/cpu/internal/kern"

// gemmParallel computes C[m, n] = A[m, k]·op(B) with the epilogue, op(B)
// prepacked in pb, on threads workers. With enough rows, each worker takes
// an equal run of whole row tiles: it packs only its own rows of A and
// shares the read-only packed B. When every worker's equal share of the
// rows runs in tiles of nearly equal height (kern.PackedB.EvenTiles: 197
// tokens as 98 and 99 rows, nine tiles each), the workers take those;
// otherwise the row tiles that do not divide evenly (fewer than one per
// worker: 197 tokens are 16 tiles of 12 and one of 5) are split by
// columns, so that no worker waits for another's extra tile. With few
// rows (one token, a small batch), workers split the column panels of
// everything. Small products stay on one worker.
func gemmParallel(threads, m int, a []float32, lda int, pb *kern.PackedB, c []float32, ldc int, epi kern.Epilogue) {
	if int64(m)*int64(pb.N)*int64(pb.K) < 1<<18 {
		threads = 1
	}
	if threads == 1 {
		kern.SgemmPackedEpi(m, a, lda, pb, c, ldc, epi, 0, pb.N)
		return
	}
	w, panels := pb.PanelWidth(), pb.Panels()
	mr := pb.RowTile()
	if m < 2*mr*threads || splitColumns(m, pb, threads) {
		grain := max(1, 64/w) // at least 64 columns per worker
		// Static halves: a piece of the columns packs A again on the
		// paths that do not read it in place.
		parallelChunks(threads, panels, grain, func(_, lo, hi int) {
			kern.SgemmPackedEpi(m, a, lda, pb, c, ldc, epi, lo*w, min(hi*w, pb.N))
		})
		return
	}
	if m%(mr*threads) != 0 && (pb.EvenTiles(m/threads) && pb.EvenTiles((m+threads-1)/threads) || pb.BF16()) {
		// Every worker's share of the rows, within one of the others',
		// goes in tiles of nearly equal height (197 tokens: 99 and 98
		// rows in nine tiles each), without a remainder split by columns.
		// On cpu-bf16 (12-, 8- and 4-row kernels) each share goes in whole
		// tiles and one short one: against the split below, paired runs
		// of whole networks read deit_ti 1.007-1.032×, volo_d1 1.014×,
		// t2t_vit_14 1.000-1.007× (the remainder's rows went through the
		// 8-row kernel, once per worker call more).
		parallelChunks(threads, threads, 1, func(chunk, _, _ int) {
			r0, r1 := chunk*m/threads, (chunk+1)*m/threads
			kern.SgemmPackedEpi(r1-r0, a[r0*lda:], lda, pb, c[r0*ldc:], ldc, epi.Rows(r0), 0, pb.N)
		})
		return
	}
	tiles := (m + mr - 1) / mr
	even := tiles / threads * threads // tiles every worker gets one of
	split := min(even*mr, m)          // rows [0, split) go by rows, the rest by columns
	parallelChunks(threads, threads, 1, func(chunk, _, _ int) {
		t0, t1 := chunk*even/threads, (chunk+1)*even/threads
		r0, r1 := t0*mr, min(t1*mr, split)
		kern.SgemmPackedEpi(r1-r0, a[r0*lda:], lda, pb, c[r0*ldc:], ldc, epi.Rows(r0), 0, pb.N)
		if split < m {
			p0, p1 := chunk*panels/threads, (chunk+1)*panels/threads
			kern.SgemmPackedEpi(m-split, a[split*lda:], lda, pb, c[split*ldc:], ldc, epi.Rows(split), p0*w, min(p1*w, pb.N))
		}
	})
}

// Workers split the columns of a product of at most colSplitRows rows
// rather than its rows when B holds at least colSplitB values (2 MiB, past
// L2). Each worker then streams only its share of B (weights, cold at
// batch 1), and no remainder of rows sends both workers through all of B
// again: for 197 tokens of ViT-B/16 this ran 3-8% faster, with cold
// weights and warm. With a smaller B, the rows split better (DeiT-Ti).
const (
	colSplitRows = 384
	colSplitB    = 1 << 19
)
