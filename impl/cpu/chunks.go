package cpu

import "vitbench/impl/cpu/internal/kern"

// chunkBytes bounds one chunk of a produced GEMM operand (im2col rows):
// small enough to stay in L2 between being written and being packed.
const chunkBytes = 192 << 10

// chunkRows is how many rows of a k-wide operand make one chunk: a
// multiple of the row tile, at least one tile.
func chunkRows(k, tile int) int {
	return max(tile, chunkBytes/(4*max(k, 1))/tile*tile)
}

// forChunks splits m rows into chunks of whole row tiles, at most chunk
// rows each, and calls body(worker, r0, r1) for every chunk; each worker
// takes its share of the chunks in order, and one done with its share
// takes the last chunks of another's (parallelWorkers). When chunk covers
// more than a worker's share of the rows, each worker's share is one
// chunk. Work under about a quarter of a million multiply-adds (macs)
// stays on one worker: waking another costs more than it saves.
func forChunks(threads, m, tile, chunk int, macs int64, body func(w, r0, r1 int)) {
	if macs < 1<<18 {
		threads = 1
	}
	tiles := (m + tile - 1) / tile
	per := max(1, min(chunk/tile, ceilDiv(tiles, threads))) // tiles per chunk
	parallelWorkers(threads, tiles, per, func(w, lo, hi int) {
		end := min(hi*tile, m)
		for r0 := lo * tile; r0 < end; r0 += per * tile {
			body(w, r0, min(r0+per*tile, end))
		}
	})
}

// rowSource is an im2col matrix that hands a worker its rows from row r0
// on (kern.WindowsA, kern.TapPairsA).
type rowSource interface {
	from(r0 int) kern.ASource
}

// windowsOf and tapPairsOf are the two im2col matrices as rowSources.
type (
	windowsOf  struct{ *kern.WindowsA }
	tapPairsOf struct{ *kern.TapPairsA }
)

func (w windowsOf) from(r0 int) kern.ASource  { return w.From(r0) }
func (t tapPairsOf) from(r0 int) kern.ASource { return t.From(r0) }

// windowsGEMM computes C = W·op(B) with the epilogue, where W is the
// im2col matrix of the windows (kern.WindowsA, or kern.TapPairsA on
// cpu-bf16), packed straight from the images, never stored. Workers take
// runs of whole row tiles. With store nil the outputs go to c [rows, N];
// otherwise each chunk's outputs are computed into the worker's scratch
// and handed to store(r0, r1, c) (row stride N), so a convolution can
// write NCHW. With store nil and few rows against a large B (a small map
// against a wide weight, splitColumns), workers split the columns
// instead, each packing all the rows.
func (b *Backend) windowsGEMM(windows rowSource, rows int, pb *kern.PackedB, epi kern.Epilogue,
	c []float32, store func(r0, r1 int, c []float32)) {
	tile, n := pb.RowTile(), pb.N
	if store == nil && b.threads > 1 && splitColumns(rows, pb, b.threads) {
		w := pb.PanelWidth()
		src := windows.from(0)
		parallelChunks(b.threads, pb.Panels(), max(1, 64/w), func(_, lo, hi int) {
			kern.SgemmSourceCols(rows, src, pb, c, n, epi, lo*w, min(hi*w, n))
		})
		return
	}
	chunk := rows
	var buf []float32
	if store != nil {
		chunk = chunkRows(n, tile)
		b2, release := b.scratch(b.threads * chunk * n)
		defer release()
		buf = b2
	}
	forChunks(b.threads, rows, tile, chunk, int64(rows)*int64(n)*int64(pb.K), func(w, r0, r1 int) {
		e := epi.Rows(r0)
		if store == nil {
			kern.SgemmSource(r1-r0, windows.from(r0), pb, c[r0*n:], n, e)
			return
		}
		out := buf[w*chunk*n : (w+1)*chunk*n]
		kern.SgemmSource(r1-r0, windows.from(r0), pb, out, n, e)
		store(r0, r1, out)
	})
}

// splitColumns reports whether workers split the columns of a product of
// rows rows of A by pb rather than its rows (colSplitRows, colSplitB):
// gemmParallel's rule, and windowsGEMM's, whose workers then each pack A
// whole. With few rows the row tiles divide unevenly between the workers
// (ResNet's 7×7 maps are 49 rows, five tiles of 12), and each worker
// streams all of B; split by columns, each streams its share of B.
// Measured rows/columns in one process, alternating run by run (two
// threads, AVX-512 with AMX): 1.02× on clip_rn50, 1.02× on
// detr_r50_small_b2 and 1.01× on vit_b16 (fp32), 1.03× and 1.05× on the
// first two on cpu-bf16.
func splitColumns(rows int, pb *kern.PackedB, threads int) bool {
	return rows <= colSplitRows && pb.Panels() >= 2*threads && pb.N*pb.K >= colSplitB
}
