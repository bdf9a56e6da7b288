package cuda

import (
	"time"

	"vitbench/bench"
)

// Time implements bench.Backend. Before fn it clears an L2-sized buffer
// and waits for it, so that every timed run starts with a cold L2 as a
// real network's first use of its weights would; then it records an event
// on the stream, runs fn (which enqueues), records a second event and
// waits for it. Kernel is the time between the events (the GPU's own
// clock); EndToEnd is host wall time from just before fn to the end of the
// wait (launch overhead included, the flush excluded).
func (b *Backend) Time(fn func() error) (bench.Timing, error) {
	if err := b.ready(); err != nil {
		return bench.Timing{}, err
	}
	d := b.drv
	err := b.run(func() error {
		if err := d.check("cuMemsetD32Async", d.cuMemsetD32Async(b.flush, 0, uint64(b.flushBytes/4), b.stream)); err != nil {
			return err
		}
		if err := b.syncStream(); err != nil {
			return err
		}
		return d.check("cuEventRecord", d.cuEventRecord(b.evStart, b.stream))
	})
	if err != nil {
		return bench.Timing{}, err
	}
	start := time.Now()
	ferr := fn()
	var ms float32
	err = b.run(func() error {
		if err := d.check("cuEventRecord", d.cuEventRecord(b.evStop, b.stream)); err != nil {
			return err
		}
		if err := d.check("cuEventSynchronize", d.cuEventSynchronize(b.evStop)); err != nil {
			return err
		}
		return d.check("cuEventElapsedTime", d.cuEventElapsedTime(&ms, b.evStart, b.evStop))
	})
	e2e := time.Since(start)
	if ferr != nil {
		return bench.Timing{}, ferr
	}
	if err != nil {
		return bench.Timing{}, err
	}
	return bench.Timing{Kernel: time.Duration(float64(ms) * 1e6), EndToEnd: e2e}, nil
}
