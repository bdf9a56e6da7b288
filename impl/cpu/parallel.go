package cpu

import "sync"

// parallelFor splits [0, n) into at most threads contiguous chunks of at
// least grain items and runs body on each chunk, the first on the calling
// goroutine and the others on the shared pool's helpers (or on fresh
// goroutines when the pool is busy), returning when all are done. With
// one chunk it runs inline.
func parallelFor(threads, n, grain int, body func(lo, hi int)) {
	parallelChunks(threads, n, grain, func(_, lo, hi int) { body(lo, hi) })
}

// parallelChunks is parallelFor that also tells body its chunk's index
// (0 ≤ chunk < threads), so workers can own per-worker scratch.
func parallelChunks(threads, n, grain int, body func(chunk, lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := min(threads, (n+grain-1)/grain)
	if chunks <= 1 {
		body(0, 0, n)
		return
	}
	if sharedPool().run(chunks, n, body) {
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
