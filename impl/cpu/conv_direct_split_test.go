package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestConvSplitMatchesOracle runs small-map convolutions that the direct
// path splits into groups of output channels (one per thread; channel
// counts that are and are not multiples of the 12-row panels, a group
// with a partial panel; the Go path takes the implicit GEMM), with a residual and a ReLU, stride 1 and 2 and a
// batch of two, against the float64 loop: out = relu(conv + res).
func TestConvSplitMatchesOracle(t *testing.T) {
	geoms := []ops.Unfold{
		{Batch: 2, InChans: 7, Height: 14, Width: 14, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
		{Batch: 1, InChans: 5, Height: 7, Width: 7, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
		{Batch: 2, InChans: 6, Height: 15, Width: 13, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
	}
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		for _, u := range geoms {
			u.DilationH, u.DilationW = 1, 1
			for _, outChans := range []int{24, 37, 100} {
				c := ops.Conv2d{Unfold: u, OutChans: outChans, Bias: true, ReLU: true, Residual: true}
				be := New(2)
				if g := be.directGroups(c); g != 2 && kern.Active() != kern.ISAGo { // the Go path has no direct convolution
					t.Fatalf("%+v O=%d: %d channel groups, want 2", u, outChans, g)
				}
				oh, ow := c.OutH(), c.OutW()
				x := randSlice(rng, u.Batch*u.InChans*u.Height*u.Width, -1, 1)
				w := randSlice(rng, outChans*c.Cols(), -0.5, 0.5)
				bias := randSlice(rng, outChans, -0.5, 0.5)
				res := randSlice(rng, u.Batch*outChans*oh*ow, -1, 1)
				in := []*tensor{be.testTensor(t, bench.Shape{u.Batch, u.InChans, u.Height, u.Width}, x),
					be.testTensor(t, bench.Shape{outChans, u.InChans, u.KernelH, u.KernelW}, w),
					be.testTensor(t, bench.Shape{outChans}, bias),
					be.testTensor(t, bench.Shape{u.Batch, outChans, oh, ow}, res)}
				out := []*tensor{be.testTensor(t, bench.Shape{u.Batch, outChans, oh, ow}, nil)}
				if err := be.conv2d(c, in, out); err != nil {
					t.Fatal(err)
				}
				want := convOracle(c, x, w, bias)
				for i := range want {
					want[i] = math.Max(want[i]+float64(res[i]), 0)
				}
				checkClose(t, fmt.Sprintf("%+v O=%d", u, outChans), out[0].data, want)
			}
		}
	})
}
