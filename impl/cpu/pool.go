package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// spinPool runs the chunks of one parallel call on long-lived helper
// goroutines that keep polling for the next call for a while (spinWait
// polls) before they sleep. A network runs hundreds of short kernels back
// to back; a fresh goroutine per chunk would often find the other core's
// thread asleep and pay an OS wake-up for every kernel. The caller runs
// chunk 0 itself and helper h runs chunk h.
//
// One call at a time holds the pool: a call that finds it busy (two
// backends at once, a parallel call inside a chunk) starts goroutines as
// before.
type spinPool struct {
	busy    sync.Mutex // held for one parallel call
	helpers int

	gen     atomic.Uint64 // bumped by every call
	pending atomic.Int64  // helpers not done with the current call
	body    func(chunk, lo, hi int)
	chunks  int
	bounds  [maxPoolChunks + 1]int // chunk c covers [bounds[c], bounds[c+1])

	sleepMu sync.Mutex
	wakeUp  *sync.Cond
}

// spinWait is how many polls a helper (or a caller waiting for helpers)
// makes before it sleeps (or yields): tens of microseconds.
const spinWait = 1 << 14

var (
	poolOnce sync.Once
	pool     *spinPool
)

// sharedPool returns the process's pool, with one helper per CPU beyond
// the caller's.
func sharedPool() *spinPool {
	poolOnce.Do(func() {
		p := &spinPool{helpers: runtime.GOMAXPROCS(0) - 1}
		p.wakeUp = sync.NewCond(&p.sleepMu)
		for h := 1; h <= p.helpers; h++ {
			go p.helper(h)
		}
		pool = p
	})
	return pool
}

// helper runs chunk h of every call, forever.
func (p *spinPool) helper(h int) {
	seen := uint64(0)
	for {
		for spins := 0; p.gen.Load() == seen; spins++ {
			if spins < spinWait {
				if spins%256 == 255 {
					runtime.Gosched()
				}
				continue
			}
			p.sleepMu.Lock()
			for p.gen.Load() == seen {
				p.wakeUp.Wait()
			}
			p.sleepMu.Unlock()
		}
		seen = p.gen.Load()
		if h < p.chunks {
			p.body(h, p.bounds[h], p.bounds[h+1])
		}
		p.pending.Add(-1)
	}
}

// run splits [0, n) into chunks contiguous runs, runs body on each and
// returns when all are done, or reports false (running nothing) when the
// pool is busy or has too few helpers.
func (p *spinPool) run(chunks, n int, body func(chunk, lo, hi int)) bool {
	if chunks-1 > p.helpers || chunks > maxPoolChunks || !p.busy.TryLock() {
		return false
	}
	defer p.busy.Unlock()
	for c := 0; c <= chunks; c++ {
		p.bounds[c] = c * n / chunks
	}
	p.body, p.chunks = body, chunks
	p.pending.Store(int64(p.helpers))
	p.sleepMu.Lock()
	p.gen.Add(1)
	p.wakeUp.Broadcast()
	p.sleepMu.Unlock()
	body(0, p.bounds[0], p.bounds[1])
	for spins := 0; p.pending.Load() != 0; spins++ {
		if spins >= spinWait || spins%256 == 255 {
			runtime.Gosched()
		}
	}
	p.body = nil
	return true
}
