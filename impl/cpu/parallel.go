package cpu

import "sync"

// parallelFor splits [0, n) into at most threads contiguous chunks of at
// least grain items and runs body on each chunk, the first on the calling
// goroutine and the others on the shared pool's helpers (or on fresh
// goroutines when the pool is busy), returning when all are done. With
// one chunk it runs inline.
//
// The chunks are balanced: each is cut into about piecesPerChunk pieces
// of at least grain items, and a worker done with its own takes the
// others' last pieces (spinPool.run), so body may be called
// several times per worker, on any contiguous pieces, in any order.
func parallelFor(threads, n, grain int, body func(lo, hi int)) {
	parallelWorkers(threads, n, grain, func(_, lo, hi int) { body(lo, hi) })
}

// parallelWorkers is parallelFor that also tells body which worker runs
// it (0 ≤ worker < threads), for per-worker scratch; unlike
// parallelChunks, a worker may run several pieces, and pieces of other
// workers' shares.
func parallelWorkers(threads, n, grain int, body func(worker, lo, hi int)) {
	splitCall(threads, n, grain, true, body)
}

// piecesPerChunk is how many pieces a balanced call cuts each worker's
// share into: the finer, the less a slow worker holds a call up, and the
// more takes each call makes.
const piecesPerChunk = 4

// parallelChunks splits [0, n) as parallelFor does but runs body once per
// chunk, on that chunk's own worker, telling it the chunk's index
// (0 ≤ chunk < threads): static halves, for callers that derive their
// share from the index (gemmParallel) or must not split a chunk.
func parallelChunks(threads, n, grain int, body func(chunk, lo, hi int)) {
	splitCall(threads, n, grain, false, body)
}

// splitCall splits [0, n) into at most threads chunks of at least grain
// items and runs body on them: inline when there is one chunk, on the
// shared pool (spinPool.run) balanced or not, or, when the pool is busy,
// one fresh goroutine per chunk.
func splitCall(threads, n, grain int, balanced bool, body func(w, lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := min(threads, (n+grain-1)/grain)
	if chunks <= 1 {
		body(0, 0, n)
		return
	}
	piece := 0
	if balanced {
		piece = max(grain, (n+chunks*piecesPerChunk-1)/(chunks*piecesPerChunk))
	}
	if sharedPool().run(chunks, n, piece, body) {
		return
	}
	var wg sync.WaitGroup
	for c := 0; c < chunks; c++ {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(c, lo, hi)
		}()
	}
	wg.Wait()
}
