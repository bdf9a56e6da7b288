package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// guard is the number of NaN sentinels on each side of a test buffer.
const guard = 1024

// guarded returns a buffer of n values (random when fill) inside NaN
// guard regions, and the full backing slice for checkGuards.
func guarded(rng *rand.Rand, n int, fill bool) (inner, full []float32) {
	full = make([]float32, n+2*guard)
	for i := range full {
		full[i] = float32(math.NaN())
	}
	inner = full[guard : guard+n : guard+n]
	for i := range inner {
		if fill {
			inner[i] = rng.Float32()*2 - 1
		} else {
			inner[i] = 0
		}
	}
	return inner, full
}

// checkGuards fails if a kernel wrote into a guard region.
func checkGuards(t *testing.T, what string, full []float32) {
	t.Helper()
	for _, i := range []int{0, len(full) - guard} {
		for j := i; j < i+guard; j++ {
			if !math.IsNaN(float64(full[j])) {
				t.Fatalf("%s: write into guard region at offset %d", what, j-guard)
			}
		}
	}
}

// forEachISA runs f once per instruction-set path this machine supports.
func forEachISA(t *testing.T, f func(t *testing.T)) {
	for _, p := range Supported() {
		t.Run(string(p), func(t *testing.T) {
			prev := SetISA(p)
			defer SetISA(prev)
			f(t)
		})
	}
}
