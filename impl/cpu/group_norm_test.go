package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// groupNormRef is GroupNorm in float64 (two passes), optionally with the
// swish, the oracle of groupNorm.
func groupNormRef(n ops.GroupNorm, x, gamma, beta []float32) []float64 {
	pixels, cg := n.Height*n.Width, n.Chans/n.Groups
	size := cg * pixels
	y := make([]float64, len(x))
	for gi := 0; gi < n.Batch*n.Groups; gi++ {
		v := x[gi*size : (gi+1)*size]
		var s float64
		for _, e := range v {
			s += float64(e)
		}
		mean := s / float64(size)
		var q float64
		for _, e := range v {
			q += (float64(e) - mean) * (float64(e) - mean)
		}
		rstd := 1 / math.Sqrt(q/float64(size)+n.Eps)
		for i, e := range v {
			ch := (gi%n.Groups)*cg + i/pixels
			o := (float64(e)-mean)*rstd*float64(gamma[ch]) + float64(beta[ch])
			if n.Swish {
				o /= 1 + math.Exp(-o)
			}
			y[gi*size+i] = o
		}
	}
	return y
}

// TestGroupNormMatchesFloat64 runs group_norm on every ISA path, with and
// without the swish, on shapes with one and several channels per group,
// odd maps and two images, serial and split over workers, on data whose
// mean is up to 100 times its spread, against the float64 oracle; the
// Swish norms with whole channel blocks run blocked on AVX-512 (groups
// within a block and of whole blocks).
func TestGroupNormMatchesFloat64(t *testing.T) {
	defer SetISA(SupportedISAs()[0])
	rng := rand.New(rand.NewPCG(51, 52))
	for _, isa := range SupportedISAs() {
		if err := SetISA(isa); err != nil {
			t.Fatal(err)
		}
		for _, n := range []ops.GroupNorm{
			{Batch: 1, Chans: 32, Groups: 32, Height: 64, Width: 64, Eps: 1e-6, Swish: true},
			{Batch: 2, Chans: 64, Groups: 32, Height: 9, Width: 11, Eps: 1e-6, Swish: true},
			{Batch: 2, Chans: 64, Groups: 32, Height: 9, Width: 11, Eps: 1e-6},
			{Batch: 1, Chans: 12, Groups: 3, Height: 5, Width: 7, Eps: 1e-5},
			{Batch: 1, Chans: 256, Groups: 32, Height: 16, Width: 16, Eps: 1e-5, Swish: true},
			// Groups of two channel blocks (groupNormBlocked's wide groups).
			{Batch: 2, Chans: 64, Groups: 2, Height: 20, Width: 20, Eps: 1e-6, Swish: true},
		} {
			name := fmt.Sprintf("%s/%+v", isa, n)
			x := make([]float32, n.Batch*n.Chans*n.Height*n.Width)
			for i := range x {
				g := i / (n.Chans / n.Groups * n.Height * n.Width)
				x[i] = float32(rng.NormFloat64()) + float32(g%5*25-50)
			}
			gamma, beta := make([]float32, n.Chans), make([]float32, n.Chans)
			for i := range gamma {
				gamma[i], beta[i] = float32(0.5+rng.Float64()), float32(rng.NormFloat64())
			}
			b := New(2)
			xs := bench.Shape{n.Batch, n.Chans, n.Height, n.Width}
			in := []*tensor{{shape: xs, data: x}, {shape: bench.Shape{n.Chans}, data: gamma}, {shape: bench.Shape{n.Chans}, data: beta}}
			out := []*tensor{{shape: xs, data: make([]float32, len(x))}}
			if err := b.groupNorm(n, in, out); err != nil {
				t.Fatal(err)
			}
			b.unblock(out[0]) // a norm that ran blocked (useBlockedGroupNorm)
			want := groupNormRef(n, x, gamma, beta)
			for i, w := range want {
				// The output is within a few float32 ulp of the normalized
				// value, |x|·s rounding included (|x| ≤ 100σ here).
				if g := float64(out[0].data[i]); math.Abs(g-w) > 2e-5*(1+math.Abs(w)) {
					t.Fatalf("%s: y[%d] = %g, float64 %g", name, i, g, w)
				}
			}
		}
	}
}
