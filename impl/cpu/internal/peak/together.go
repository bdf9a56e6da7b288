package peak

import (
	"runtime"
	"sync"
	"time"
)

// runTogether runs work(0) … work(threads-1), each on its own goroutine
// locked to an OS thread, released together once all are ready, and
// returns the time from the release until the last one finished.
func runTogether(threads int, work func(t int)) time.Duration {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(threads)
	done.Add(threads)
	for t := 0; t < threads; t++ {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			defer done.Done()
			ready.Done()
			<-start
			work(t)
		}()
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	return max(time.Since(t0), time.Nanosecond)
}
