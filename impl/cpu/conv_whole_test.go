package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestConvWindowsStoresMatchOracle runs the implicit-GEMM convolution on
// maps whose output is written whole (storeWhole, channel counts past
// one block of storeChansBlock and not a multiple of it, a batch of two),
// on one too large for that without a residual but not with one, and on
// one too large either way (chunked storeNCHW), each with the ReLU fused
// in the GEMM and with a residual added before it, against the float64
// loop.
func TestConvWindowsStoresMatchOracle(t *testing.T) {
	defer func(p string) { convPath = p }(convPath)
	convPath = "windows"
	for _, g := range []struct {
		u               ops.Unfold
		o               int
		whole, wholeRes bool // written whole without and with a residual
	}{
		{ops.Unfold{Batch: 2, InChans: 9, Height: 7, Width: 7, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1}, 150, true, true},
		{ops.Unfold{Batch: 1, InChans: 5, Height: 14, Width: 13, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}, 70, true, true},
		{ops.Unfold{Batch: 2, InChans: 3, Height: 60, Width: 60, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1}, 40, false, true},
		// Past wholeMapResidualBytes: chunked with the residual too.
		{ops.Unfold{Batch: 1, InChans: 2, Height: 140, Width: 110, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1}, 280, false, false},
	} {
		forEachPath(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(51, 52))
			u := g.u
			u.DilationH, u.DilationW = 1, 1
			for _, residual := range []bool{false, true} {
				c := ops.Conv2d{Unfold: u, OutChans: g.o, Bias: true, ReLU: true, Residual: residual}
				if want := g.whole && !residual || g.wholeRes && residual; wholeMap(c) != want {
					t.Fatalf("%+v O=%d residual %v: wholeMap %v, want %v", u, g.o, residual, wholeMap(c), want)
				}
				be := New(2)
				oh, ow := c.OutH(), c.OutW()
				x := randSlice(rng, u.Batch*u.InChans*u.Height*u.Width, -1, 1)
				w := randSlice(rng, g.o*c.Cols(), -0.5, 0.5)
				bias := randSlice(rng, g.o, -0.5, 0.5)
				in := []*tensor{be.testTensor(t, bench.Shape{u.Batch, u.InChans, u.Height, u.Width}, x),
					be.testTensor(t, bench.Shape{g.o, u.InChans, u.KernelH, u.KernelW}, w),
					be.testTensor(t, bench.Shape{g.o}, bias)}
				res := randSlice(rng, u.Batch*g.o*oh*ow, -1, 1)
				if residual {
					in = append(in, be.testTensor(t, bench.Shape{u.Batch, g.o, oh, ow}, res))
				}
				out := []*tensor{be.testTensor(t, bench.Shape{u.Batch, g.o, oh, ow}, nil)}
				if err := be.conv2d(c, in, out); err != nil {
					t.Fatal(err)
				}
				want := convOracle(c, x, w, bias)
				for i := range want {
					if residual {
						want[i] += float64(res[i])
					}
					want[i] = math.Max(want[i], 0)
				}
				checkClose(t, fmt.Sprintf("%+v O=%d residual %v", u, g.o, residual), out[0].data, want)
			}
		})
	}
}
