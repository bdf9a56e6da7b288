package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestConvResidualReLU checks the bottleneck end a ResNet graph fuses into
// one conv step, out = relu(bn(conv(x)) + res), against a float64 loop,
// on every path, with a stride and an output whose pixel count is not a
// multiple of any tile.
func TestConvResidualReLU(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(21, 22))
		u := ops.Unfold{Batch: 2, InChans: 7, Height: 13, Width: 11, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2,
			PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}
		c := ops.Conv2d{Unfold: u, OutChans: 20, BN: true, BNEps: 1e-5, ReLU: true, Residual: true}
		oh, ow := u.OutH(), u.OutW()
		be := New(2)
		x := randSlice(rng, 2*7*13*11, -1, 1)
		w := randSlice(rng, 20*7*9, -0.3, 0.3)
		gamma, beta := randSlice(rng, 20, 0.5, 1.5), randSlice(rng, 20, -0.2, 0.2)
		mean, variance := randSlice(rng, 20, -0.1, 0.1), randSlice(rng, 20, 0.5, 1.5)
		res := randSlice(rng, 2*20*oh*ow, -1, 1)
		o := bench.Shape{20}
		in := []*tensor{be.testTensor(t, bench.Shape{2, 7, 13, 11}, x), be.testTensor(t, bench.Shape{20, 7, 3, 3}, w),
			be.testTensor(t, o, gamma), be.testTensor(t, o, beta), be.testTensor(t, o, mean), be.testTensor(t, o, variance),
			be.testTensor(t, bench.Shape{2, 20, oh, ow}, res)}
		out := []*tensor{be.testTensor(t, bench.Shape{2, 20, oh, ow}, nil)}
		if err := be.conv2d(c, in, out); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 2*20*oh*ow)
		for b := 0; b < 2; b++ {
			for oc := 0; oc < 20; oc++ {
				s := float64(gamma[oc]) / math.Sqrt(float64(variance[oc])+1e-5)
				for oy := 0; oy < oh; oy++ {
					for ox := 0; ox < ow; ox++ {
						var acc float64
						for ci := 0; ci < 7; ci++ {
							for ky := 0; ky < 3; ky++ {
								for kx := 0; kx < 3; kx++ {
									yy, xx := oy*2-1+ky, ox*2-1+kx
									if yy >= 0 && xx >= 0 && yy < 13 && xx < 11 {
										acc += float64(x[((b*7+ci)*13+yy)*11+xx]) * float64(w[((oc*7+ci)*3+ky)*3+kx])
									}
								}
							}
						}
						i := ((b*20+oc)*oh+oy)*ow + ox
						want[i] = math.Max((acc-float64(mean[oc]))*s+float64(beta[oc])+float64(res[i]), 0)
					}
				}
			}
		}
		checkClose(t, "conv + residual + relu", out[0].data, want)
	})
}
