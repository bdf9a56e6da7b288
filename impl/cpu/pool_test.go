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

// TestPoolWakesOnlyItsChunks: a call with c chunks gives work to helpers
// 1…c-1 and leaves the others asleep (meaningful with GOMAXPROCS ≥ 3; the
// CI runs the package once with GOMAXPROCS=8).
func TestPoolWakesOnlyItsChunks(t *testing.T) {
	p := sharedPool()
	before := make([]uint64, len(p.helpers))
	for h, hp := range p.helpers {
		before[h] = hp.job.Load()
	}
	var ran atomic.Int32
	parallelChunks(2, 10, 1, func(_, lo, hi int) { ran.Add(int32(hi - lo)) })
	if ran.Load() != 10 {
		t.Fatalf("ran %d of 10 items", ran.Load())
	}
	for h, hp := range p.helpers {
		want := before[h]
		if h == 0 {
			want++
		}
		if got := hp.job.Load(); got != want {
			t.Errorf("helper %d was given %d calls, want %d", h+1, got-before[h], want-before[h])
		}
	}
}
