package contention

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// RoundTrip is what the cross-CPU probe measured: how long one cache line took to go from
// one CPU to another and back (the best of several bursts), between which CPUs, and the
// error that stopped it (nil when it ran).
type RoundTrip struct {
	Nanos float64 // NaN when not measured
	CPUs  [2]int  // the CPUs the two threads were pinned to; -1 when not pinned
	Err   error
}

// Measured reports whether the probe produced a figure.
func (r RoundTrip) Measured() bool { return r.Err == nil && !math.IsNaN(r.Nanos) }

// String is "61 ns (cpu0↔cpu1)", or why there is no figure.
func (r RoundTrip) String() string {
	if !r.Measured() {
		return fmt.Sprintf("not measured (%v)", r.Err)
	}
	if r.CPUs[0] < 0 {
		return fmt.Sprintf("%.0f ns (threads not pinned)", r.Nanos)
	}
	return fmt.Sprintf("%.0f ns (cpu%d↔cpu%d)", r.Nanos, r.CPUs[0], r.CPUs[1])
}

// Probe sizes: bursts of probeRounds round trips, the best of probeBursts; a burst that
// has not finished within probeTimeout (the other CPU is taken by something else) ends
// the probe with an error.
const (
	probeRounds  = 1000
	probeBursts  = 5
	probeTimeout = 50 * time.Millisecond
)

// Moved is how many times larger one round trip must be than another for the two to
// count as different CPU arrangements. On the 2-vCPU AMD guests vitbench was built on the
// figure is bimodal: about 60 ns while the two vCPUs share a last-level cache and about
// 370 ns while they sit on different dies, and two-thread timings of small networks move
// with it (vq_encoder_small 2.7 ms against 4.8, a single thread's time).
const Moved = 2.0

// Differ reports whether two probes saw different CPU arrangements: both measured
// (positive) and one more than Moved times the other.
func Differ(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) || a <= 0 || b <= 0 {
		return false
	}
	return max(a, b) > Moved*min(a, b)
}

// ProbeEnv names the environment variable that turns the probe off: with the value "off"
// ProbeRoundTrip measures nothing and says so (rows then carry no round trip). Tests of
// `vitbench run` that count its baseline calls set it, so that a host moving the CPUs
// cannot re-time their group.
const ProbeEnv = "VITBENCH_ROUND_TRIP"

// ProbeRoundTrip measures the cross-CPU round trip: two goroutines, each locked to its
// own OS thread and (on Linux) pinned to one of the first two CPUs this process may use,
// hand a counter back and forth through one atomic word; the figure is the mean round
// trip of the fastest of probeBursts bursts of probeRounds. It takes about a millisecond
// (up to probeTimeout when the other CPU is busy, then an error) and is an error with
// fewer than two CPUs or GOMAXPROCS 1. Neither goroutine unlocks its thread, so the pinned threads exit
// with them instead of returning to the Go scheduler.
func ProbeRoundTrip() RoundTrip {
	if os.Getenv(ProbeEnv) == "off" {
		return RoundTrip{Nanos: math.NaN(), CPUs: [2]int{-1, -1}, Err: errors.New(ProbeEnv + "=off")}
	}
	cpus, err := probeCPUs()
	if err == nil && runtime.GOMAXPROCS(0) < 2 {
		err = errors.New("GOMAXPROCS is 1: the two probe threads cannot run at once")
	}
	if err != nil {
		return RoundTrip{Nanos: math.NaN(), CPUs: cpus, Err: err}
	}
	var word atomic.Int64 // odd: the measurer's turn is over; even: the echo's answer
	var stop atomic.Bool
	echoReady, echoDone := make(chan error, 1), make(chan struct{})
	go func() { // the echo: answers each odd value with the next even one
		defer close(echoDone)
		runtime.LockOSThread()
		if err := pin(cpus[1]); err != nil {
			echoReady <- err
			return
		}
		echoReady <- nil
		for want := int64(1); ; want += 2 {
			for spins := 0; word.Load() != want; spins++ {
				if spins%1024 == 1023 && stop.Load() {
					return
				}
			}
			word.Store(want + 1)
		}
	}()
	res := RoundTrip{Nanos: math.NaN(), CPUs: cpus}
	measured := make(chan struct{})
	go func() {
		defer close(measured)
		runtime.LockOSThread()
		if err := <-echoReady; err != nil {
			res.Err = err
			return
		}
		if err := pin(cpus[0]); err != nil {
			res.Err = err
			return
		}
		best, next := math.Inf(1), int64(0)
		for b := 0; b < probeBursts; b++ {
			start := time.Now()
			for r := 0; r < probeRounds; r++ {
				word.Store(next + 1)
				for spins := 0; word.Load() != next+2; spins++ {
					if spins%1024 == 1023 && time.Since(start) > probeTimeout {
						res.Err = errors.New("the other CPU did not answer within 50 ms (busy)")
						return
					}
				}
				next += 2
			}
			best = min(best, float64(time.Since(start).Nanoseconds())/probeRounds)
		}
		res.Nanos = best
	}()
	<-measured
	stop.Store(true)
	<-echoDone
	if res.Err != nil {
		res.Nanos = math.NaN()
	}
	return res
}
