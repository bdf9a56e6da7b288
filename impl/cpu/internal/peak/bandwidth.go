package peak

import "slices"

// bwKernel is one bandwidth loop over equal-length float64 slices; bytes is
// the memory traffic per element counted the STREAM way: every read and
// every write once (the cache's read-for-ownership of a is not counted).
type bwKernel struct {
	name  string
	bytes int
	run   func(a, b, c []float64)
}

// bwKernels are STREAM's triad, a plain Go loop, and copy, the runtime's
// memmove (vector loads and stores, non-temporal for large copies).
var bwKernels = []bwKernel{
	{name: "triad", bytes: 24, run: func(a, b, c []float64) { triad(a, b, c, 3) }},
	{name: "copy", bytes: 16, run: func(a, b, _ []float64) { copy(a, b) }},
}

// triad computes a[i] = b[i] + s·c[i].
func triad(a, b, c []float64, s float64) {
	b = b[:len(a)]
	c = c[:len(a)]
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
}

// span returns the half-open range of elements thread t of threads owns,
// with boundaries on 64-byte lines so no line is written by two threads.
func span(n, t, threads int) (lo, hi int) {
	const line = 8 // float64 per 64-byte line
	per := (n/threads + line - 1) / line * line
	lo = min(t*per, n)
	hi = min(lo+per, n)
	if t == threads-1 {
		hi = n
	}
	return lo, hi
}

// bandwidth holds the best GB/s of each kernel on one thread and on all.
type bandwidth struct {
	one, all map[string]float64
}

// measureBandwidth times every kernel count times over three arrays of
// total size bytes, on one thread and on threads, after one untimed pass
// each. Each thread first touches the part of the arrays it will stream,
// so pages land on its memory node.
func measureBandwidth(bytes int64, threads, count int) bandwidth {
	n := int(bytes / 24)
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	runTogether(threads, func(t int) {
		lo, hi := span(n, t, threads)
		for i := lo; i < hi; i++ {
			a[i], b[i], c[i] = 0, 1, 2
		}
	})
	bw := bandwidth{one: map[string]float64{}, all: map[string]float64{}}
	for _, k := range bwKernels {
		for _, th := range slices.Compact([]int{1, threads}) {
			pass := func(t int) {
				lo, hi := span(n, t, th)
				k.run(a[lo:hi], b[lo:hi], c[lo:hi])
			}
			runTogether(th, pass)
			var best float64
			for range count {
				d := runTogether(th, pass)
				best = max(best, float64(k.bytes)*float64(n)/d.Seconds()/1e9)
			}
			if th == 1 {
				bw.one[k.name] = best
			}
			if th == threads {
				bw.all[k.name] = best
			}
		}
	}
	return bw
}
