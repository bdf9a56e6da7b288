package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestConvWinogradMatchesOracle runs 3×3 stride-1 convolutions through the
// Winograd path on every SIMD path against the float64 loop: odd and even
// output sizes (a last tile row or column half outside the map), no,
// symmetric, asymmetric and wide padding, maps down to 2×2 and a batch of
// two, output channels that split into several parts, and a residual
// with a ReLU, a ReLU alone and neither.
func TestConvWinogradMatchesOracle(t *testing.T) {
	defer func(p string) { convPath = p }(convPath)
	convPath = "winograd"
	type geom struct{ batch, cin, h, w, ph, pw int }
	geoms := []geom{{1, 5, 13, 11, 1, 1}, {2, 7, 8, 8, 1, 1}, {1, 4, 9, 16, 0, 0}, {1, 3, 7, 6, 2, 1},
		{1, 16, 4, 4, 0, 1}, {1, 9, 33, 35, 1, 1}, {2, 64, 7, 7, 1, 1}}
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		for gi, gm := range geoms {
			u := ops.Unfold{Batch: gm.batch, InChans: gm.cin, Height: gm.h, Width: gm.w, KernelH: 3, KernelW: 3,
				StrideH: 1, StrideW: 1, PadH: gm.ph, PadW: gm.pw, DilationH: 1, DilationW: 1}
			for _, outChans := range []int{13, 40, 200} {
				res, relu := gi%3 == 0, gi%3 != 2
				c := ops.Conv2d{Unfold: u, OutChans: outChans, Bias: true, ReLU: relu, Residual: res}
				if !useWinograd(c, false) {
					continue // the Go path
				}
				be := New(2)
				x := randSlice(rng, u.Batch*u.InChans*u.Height*u.Width, -1, 1)
				w := randSlice(rng, outChans*c.Cols(), -0.5, 0.5)
				bias := randSlice(rng, outChans, -0.5, 0.5)
				outShape := bench.Shape{u.Batch, outChans, u.OutH(), u.OutW()}
				in := []*tensor{be.testTensor(t, bench.Shape{u.Batch, u.InChans, u.Height, u.Width}, x),
					be.testTensor(t, bench.Shape{outChans, u.InChans, 3, 3}, w),
					be.testTensor(t, bench.Shape{outChans}, bias)}
				want := convOracle(c, x, w, bias)
				if res {
					r := randSlice(rng, int(outShape.Elems()), -1, 1)
					in = append(in, be.testTensor(t, outShape, r))
					for i := range want {
						want[i] += float64(r[i])
					}
				}
				if relu {
					for i := range want {
						want[i] = max(want[i], 0)
					}
				}
				out := []*tensor{be.testTensor(t, outShape, nil)}
				if err := be.conv2d(c, in, out); err != nil {
					t.Fatal(err)
				}
				checkClose(t, fmt.Sprintf("winograd %+v O=%d", gm, outChans), out[0].data, want)
			}
		}
	})
}

// TestConvWinogradAB prints, for the 3×3 convolutions of ResNet-50 and
// VQGAN, the median time of the Winograd path against the path the
// backend would take without it, interleaved. Skipped unless
// VITBENCH_PROFILE_AB is set.
func TestConvWinogradAB(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_AB") == "" {
		t.Skip("VITBENCH_PROFILE_AB not set")
	}
	defer func(p string) { convPath = p }(convPath)
	type cv struct{ batch, cin, cout, h int }
	for _, c := range []cv{{1, 32, 32, 64}, {1, 64, 64, 16}, {1, 64, 64, 32}, {1, 64, 64, 56}, {1, 128, 128, 28},
		{1, 256, 256, 14}, {1, 512, 512, 7}, {2, 256, 256, 13}, {2, 512, 512, 7}} {
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: c.batch, InChans: c.cin, Height: c.h, Width: c.h, KernelH: 3, KernelW: 3,
			StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: c.cout,
			BN: true, BNEps: 1e-5, ReLU: true}
		be := New(0)
		per := bench.Shape{c.cout}
		shapes := []bench.Shape{{c.batch, c.cin, c.h, c.h}, {c.cout, c.cin, 3, 3}, per, per, per, per}
		ta, tb := abNode(t, be, conv, shapes, []bench.Shape{{c.batch, c.cout, c.h, c.h}}, 30,
			func(v int) { convPath = []string{"nowinograd", "winograd"}[v] })
		flop := 2 * float64(c.batch*c.h*c.h*c.cout*c.cin*9)
		fmt.Printf("%+v default %.1f µs (%.0f GFLOP/s) winograd %.1f µs (%.0f GFLOP/s eq) default/winograd %.2f\n",
			c, ta*1e6, flop/ta/1e9, tb*1e6, flop/tb/1e9, ta/tb)
	}
}
