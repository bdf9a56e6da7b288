package cpu

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestParallelChunksCoversOnce: every index of every call is visited
// exactly once, by the chunk parallelChunks says, when calls come back to
// back (the pool's helpers reused), from several goroutines at once (the
// busy pool falls back to fresh goroutines) and nested inside a chunk.
func TestParallelChunksCoversOnce(t *testing.T) {
	check := func(threads, n int) {
		hits := make([]atomic.Int32, n)
		var chunksSeen atomic.Int32
		parallelChunks(threads, n, 1, func(chunk, lo, hi int) {
			if chunk < 0 || chunk >= threads {
				t.Errorf("chunk %d of %d workers", chunk, threads)
			}
			chunksSeen.Add(1)
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
			if n > 4 && hi-lo > 1 {
				// A nested call inside a chunk.
				inner := make([]atomic.Int32, hi-lo)
				parallelFor(threads, hi-lo, 1, func(a, b int) {
					for i := a; i < b; i++ {
						inner[i].Add(1)
					}
				})
				for i := range inner {
					if inner[i].Load() != 1 {
						t.Errorf("nested: index %d visited %d times", i, inner[i].Load())
					}
				}
			}
		})
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Errorf("threads %d n %d: index %d visited %d times", threads, n, i, hits[i].Load())
			}
		}
		if want := min(threads, n); int(chunksSeen.Load()) != want {
			t.Errorf("threads %d n %d: %d chunks, want %d", threads, n, chunksSeen.Load(), want)
		}
	}
	for round := 0; round < 200; round++ {
		check(2, 1+round%17)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 100; round++ {
				check(1+round%3, 3+round%29)
			}
		}()
	}
	wg.Wait()
}
