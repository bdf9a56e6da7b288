package kern

import (
	"math/rand/v2"
	"testing"
)

// TestAvgPool2x2MatchesAny checks the 2×2 stride-2 fast path against the
// general loop, bit for bit (both sum in the same order), on even and odd
// planes (an odd last row or column is dropped) and on a strided plane
// taken from a larger buffer; ceil-mode and padded geometries must take
// the general loop and still agree. On every path: rows of whole vectors
// (a 3×33 plane: 16 outputs), vectors and a tail (56, 70), a half vector
// and a tail on AVX-512 (28: 14 outputs) and tails alone.
func TestAvgPool2x2MatchesAny(t *testing.T) {
	forEachISA(t, testAvgPool2x2MatchesAny)
}

func testAvgPool2x2MatchesAny(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, hw := range [][2]int{{2, 2}, {4, 6}, {7, 9}, {56, 56}, {15, 14}, {3, 33}, {5, 70}, {4, 28}} {
		h, w := hw[0], hw[1]
		plane := make([]float32, h*w)
		for i := range plane {
			// magnitudes from 1 to 2^15, so that summing in another
			// order rounds differently
			plane[i] = (rng.Float32()*2 - 1) * float32(int(1)<<rng.IntN(16))
		}
		for _, g := range []PoolGeom{
			{H: h, W: w, KH: 2, KW: 2, SH: 2, SW: 2, OH: h / 2, OW: w / 2, CountIncludePad: true},
			{H: h, W: w, KH: 2, KW: 2, SH: 2, SW: 2, OH: (h + 1) / 2, OW: (w + 1) / 2, CountIncludePad: true}, // ceil mode
			{H: h, W: w, KH: 2, KW: 2, SH: 2, SW: 2, PH: 1, PW: 1, OH: h/2 + 1, OW: w/2 + 1},
		} {
			got, want := make([]float32, g.OH*g.OW), make([]float32, g.OH*g.OW)
			AvgPoolPlane(g, plane, got)
			avgPoolAny(g, plane, want)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%+v: out[%d] = %v, want %v", g, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkAvgPool2x2 times CLIP's stem pool plane (112×112 → 56×56) on
// the fast path and on the general loop.
func BenchmarkAvgPool2x2(b *testing.B) {
	g := PoolGeom{H: 112, W: 112, KH: 2, KW: 2, SH: 2, SW: 2, OH: 56, OW: 56, CountIncludePad: true}
	plane, out := make([]float32, 112*112), make([]float32, 56*56)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			AvgPoolPlane(g, plane, out)
		}
	})
	b.Run("any", func(b *testing.B) {
		for b.Loop() {
			avgPoolAny(g, plane, out)
		}
	})
}
