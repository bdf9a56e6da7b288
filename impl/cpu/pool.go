package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// spinPool runs the chunks of one parallel call on long-lived helper
// goroutines that keep polling for their next chunk for a while
// (helperSpin) before they sleep. A network runs hundreds of short kernels back
// to back; a fresh goroutine per chunk would often find the other core's
// thread asleep and pay an OS wake-up for every kernel. The caller runs
// chunk 0 itself and helper h runs chunk h; a call with c chunks touches
// helpers 1…c-1 only, so two workers on a 64-core machine wake one helper.
//
// A balanced call (parallelFor, parallelWorkers) cuts each chunk into
// pieces; a worker done with its own chunk takes the last pieces of the
// others'. Against static halves, alternated in one process over 80 runs
// each on a 2-vCPU AMD guest whose two vCPUs ran at 0.54-1.85× each
// other's speed (both busy, 100 ms samples), the median static/balanced
// ratio of the pairs was 1.01-1.03 on vq_encoder_small, vq_decoder_small,
// vqgan_small, ipt_small_x4 and mingpt_small. The GEMM's row and column
// splits stay static (gemmParallel): a piece of rows streams B again, and
// a piece of columns packs A again where A is not read in place.
//
// One call at a time holds the pool: a call that finds it busy (two
// backends at once, a parallel call inside a chunk) starts goroutines
// instead.
type spinPool struct {
	busy    sync.Mutex // held for one parallel call
	helpers []*poolHelper

	pending atomic.Int64 // helpers not done with the current call
	body    func(chunk, lo, hi int)
	bounds  [maxPoolChunks + 1]int // chunk c covers [bounds[c], bounds[c+1])

	// A balanced call (piece > 0, see run) cuts each chunk into pieces of
	// piece items: its worker takes them from the front, and a worker
	// done with its own takes the others' from the back.
	chunks int
	piece  int
	queues [maxPoolChunks]pieceQueue
}

// balanced reports whether the current call is cut into pieces.
func (p *spinPool) balanced() bool { return p.piece > 0 }

// pieceQueue is the pieces of one chunk not yet taken: front<<32 | back,
// pieces [front, back) of the chunk, on a cache line of its own so that its
// worker's takes stay in its core's cache until another worker steals.
type pieceQueue struct {
	state atomic.Uint64
	_     [56]byte
}

// take removes the front piece (own) or the back one (a thief) and
// returns its index, or -1 when none is left.
func (q *pieceQueue) take(own bool) int {
	for {
		s := q.state.Load()
		front, back := int(s>>32), int(s&0xffffffff)
		if front >= back {
			return -1
		}
		next, got := s+1<<32, front
		if !own {
			next, got = s-1, back-1
		}
		if q.state.CompareAndSwap(s, next) {
			return got
		}
	}
}

// poolHelper is one helper's mailbox: job counts the calls it was given;
// wake carries a token when the caller found it asleep.
type poolHelper struct {
	job      atomic.Uint64
	sleeping atomic.Bool
	wake     chan struct{}
	_        [64]byte // keep helpers' words on separate cache lines
}

// helperSpin is how long an idle helper polls for its next chunk before it
// sleeps. It polls without yielding, so it keeps its processor and sees a
// new job within nanoseconds; the caller's chunk 0 and the helper's chunk
// start together. 200 µs covers the serial gaps between the kernels of a
// network. Measured against the earlier helper, which called
// runtime.Gosched every 256 polls and slept after 16384 of them
// (interleaved, medians of 60 runs, 2 vCPUs sharing an L3):
// detr_transformer_small_b2 1.53 → 1.37 ms, vq_encoder_small 2.97 →
// 2.75 ms, mingpt_small unchanged; sleeping after about 10 µs of polling
// instead cost an OS wake-up per kernel (vq_encoder_small 3.6 ms).
const helperSpin = 200 * time.Microsecond

// spinWait is how many polls a caller waiting for its helpers makes
// before it starts yielding (a helper woken from sleep may be queued on
// the caller's own processor): about ten microseconds.
const spinWait = 1 << 14

// maxPoolChunks bounds the chunks of a call the pool takes.
const maxPoolChunks = 64

var (
	poolOnce sync.Once
	pool     *spinPool
)

// sharedPool returns the process's pool, with one helper per CPU beyond
// the caller's (at most maxPoolChunks-1).
func sharedPool() *spinPool {
	poolOnce.Do(func() {
		p := &spinPool{}
		for h := 1; h < min(runtime.GOMAXPROCS(0), maxPoolChunks); h++ {
			hp := &poolHelper{wake: make(chan struct{}, 1)}
			p.helpers = append(p.helpers, hp)
			go p.helper(h, hp)
		}
		pool = p
	})
	return pool
}

// helper runs chunk h of every call it is given, forever.
func (p *spinPool) helper(h int, hp *poolHelper) {
	done := uint64(0)
	for {
		var idle time.Time
		for spins := 0; hp.job.Load() == done; spins++ {
			if spins%1024 != 1023 {
				continue
			}
			if idle.IsZero() {
				idle = time.Now()
			}
			if time.Since(idle) < helperSpin {
				continue
			}
			// Sleep: the caller stores the job before it reads sleeping,
			// and we set sleeping before we read the job, so one of us
			// sees the other. A stale token only makes us look again.
			hp.sleeping.Store(true)
			if hp.job.Load() == done {
				<-hp.wake
			}
			hp.sleeping.Store(false)
			spins, idle = 0, time.Time{}
		}
		done++
		if p.balanced() {
			p.drain(h)
		} else {
			p.body(h, p.bounds[h], p.bounds[h+1])
		}
		p.pending.Add(-1)
	}
}

// drain runs worker w's pieces from the front of its own chunk, then the
// other chunks' from their backs, until none is left.
func (p *spinPool) drain(w int) {
	for {
		i := p.queues[w].take(true)
		if i < 0 {
			break
		}
		p.runPiece(w, w, i)
	}
	for d := 1; d < p.chunks; d++ {
		v := (w + d) % p.chunks
		for {
			i := p.queues[v].take(false)
			if i < 0 {
				break
			}
			p.runPiece(w, v, i)
		}
	}
}

// runPiece runs piece i of chunk c on worker w.
func (p *spinPool) runPiece(w, c, i int) {
	lo := p.bounds[c] + i*p.piece
	p.body(w, lo, min(lo+p.piece, p.bounds[c+1]))
}

// run splits [0, n) into chunks contiguous runs and returns when body has
// run on all of them, or reports false (running nothing) when the pool is
// busy or has too few helpers. With piece 0 each chunk is one call of
// body(chunk, lo, hi) on its own worker. With piece > 0 the call is
// balanced: each chunk is cut into pieces of at most piece items, and
// body(worker, lo, hi) runs on one piece at a time on whichever worker
// takes it: its own worker from the front, in order, and a worker done
// with its own chunk from the back of another's, so that a worker on a CPU
// that runs slower (a busy hyperthread sibling, a lower clock, a host that
// moved it) hands its last pieces to the other instead of holding the
// call up.
func (p *spinPool) run(chunks, n, piece int, body func(chunk, lo, hi int)) bool {
	if chunks-1 > len(p.helpers) || !p.busy.TryLock() {
		return false
	}
	defer p.busy.Unlock()
	for c := 0; c <= chunks; c++ {
		p.bounds[c] = c * n / chunks
	}
	p.chunks, p.piece = chunks, piece
	if p.balanced() {
		for c := 0; c < chunks; c++ {
			p.queues[c].state.Store(uint64((p.bounds[c+1] - p.bounds[c] + piece - 1) / piece))
		}
	}
	p.body = body
	p.pending.Store(int64(chunks - 1))
	for _, hp := range p.helpers[:chunks-1] {
		hp.job.Add(1)
		if hp.sleeping.Load() {
			select {
			case hp.wake <- struct{}{}:
			default:
			}
		}
	}
	if p.balanced() {
		p.drain(0)
	} else {
		body(0, p.bounds[0], p.bounds[1])
	}
	for spins := 0; p.pending.Load() != 0; spins++ {
		if spins >= spinWait {
			runtime.Gosched()
		}
	}
	p.body = nil
	return true
}
