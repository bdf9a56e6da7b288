package cpu

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// TestParallelWorkersCoversOnce: a balanced call visits every index
// exactly once, in pieces of at least grain items (but a chunk's last),
// on workers 0 … threads-1, back to back and with one worker slowed down
// so that the other takes its pieces; and a worker that is held up on its
// first piece does not keep the others from finishing its share.
func TestParallelWorkersCoversOnce(t *testing.T) {
	check := func(threads, n, grain int, slow bool) (stolen bool) {
		hits := make([]atomic.Int32, n)
		var mu sync.Mutex
		ran := map[[2]int]int{} // piece → worker
		parallelWorkers(threads, n, grain, func(w, lo, hi int) {
			if w < 0 || w >= threads {
				t.Errorf("worker %d of %d", w, threads)
			}
			if slow && w == 1 {
				time.Sleep(2 * time.Millisecond)
			}
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
			mu.Lock()
			ran[[2]int{lo, hi}] = w
			mu.Unlock()
		})
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Errorf("threads %d n %d grain %d: index %d visited %d times", threads, n, grain, i, hits[i].Load())
			}
		}
		chunks := min(threads, (n+grain-1)/grain)
		for p, w := range ran {
			end := false // a piece shorter than the grain must end a chunk
			for c := 1; c <= chunks; c++ {
				end = end || p[1] == c*n/chunks
			}
			if p[1]-p[0] < grain && !end {
				t.Errorf("threads %d n %d grain %d: piece %v shorter than the grain", threads, n, grain, p)
			}
			if chunks > 1 && w == 0 && p[0] >= n/chunks {
				stolen = true
			}
		}
		return stolen
	}
	for round := 0; round < 200; round++ {
		check(2, 1+round%37, 1+round%3, false)
	}
	stole := false
	for round := 0; round < 20 && !stole; round++ {
		stole = check(2, 64, 1, true)
	}
	if !stole {
		t.Error("with worker 1 slowed down, worker 0 never took a piece of its share")
	}
}
