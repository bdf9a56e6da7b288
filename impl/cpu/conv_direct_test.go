package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// convOracle is ops.Conv2d's plain loop in float64, with a bias and no
// BatchNorm.
func convOracle(c ops.Conv2d, x, w, bias []float32) []float64 {
	oh, ow := c.OutH(), c.OutW()
	out := make([]float64, c.Batch*c.OutChans*oh*ow)
	for b := 0; b < c.Batch; b++ {
		for o := 0; o < c.OutChans; o++ {
			for oy := 0; oy < oh; oy++ {
				for ox := 0; ox < ow; ox++ {
					acc := float64(bias[o])
					for ci := 0; ci < c.InChans; ci++ {
						for ky := 0; ky < c.KernelH; ky++ {
							for kx := 0; kx < c.KernelW; kx++ {
								y := oy*c.StrideH - c.PadH + ky*c.DilationH
								xx := ox*c.StrideW - c.PadW + kx*c.DilationW
								if y >= 0 && xx >= 0 && y < c.Height && xx < c.Width {
									acc += float64(x[((b*c.InChans+ci)*c.Height+y)*c.Width+xx]) *
										float64(w[((o*c.InChans+ci)*c.KernelH+ky)*c.KernelW+kx])
								}
							}
						}
					}
					out[((b*c.OutChans+o)*oh+oy)*ow+ox] = acc
				}
			}
		}
	}
	return out
}

// TestConvBothPathsMatchOracle runs convolutions of many geometries —
// strides 1 to 3 (the direct path splits the image into stride phases),
// dilation, asymmetric padding, 1×1 and 7×7 kernels, odd sizes, maps of
// many blocks — through
// the direct path, the implicit-GEMM path and (for 1×1 stride 1) the
// pointwise product on every SIMD path, against the float64 loop.
func TestConvBothPathsMatchOracle(t *testing.T) {
	geoms := []ops.Unfold{
		{Batch: 2, InChans: 5, Height: 13, Width: 11, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
		{Batch: 1, InChans: 3, Height: 23, Width: 19, KernelH: 7, KernelW: 7, StrideH: 2, StrideW: 2, PadH: 3, PadW: 3},
		{Batch: 1, InChans: 4, Height: 17, Width: 14, KernelH: 3, KernelW: 2, StrideH: 2, StrideW: 1, PadH: 1, PadW: 0, DilationH: 2},
		{Batch: 2, InChans: 6, Height: 10, Width: 9, KernelH: 3, KernelW: 3, StrideH: 3, StrideW: 2, PadH: 2, PadW: 1, DilationW: 2},
		{Batch: 1, InChans: 8, Height: 9, Width: 7, KernelH: 1, KernelW: 1, StrideH: 2, StrideW: 2},
		{Batch: 2, InChans: 3, Height: 37, Width: 41, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2}, // VQGAN's Downsample: rows wider than a vector, an odd width
		// Maps of many direct blocks per worker.
		{Batch: 2, InChans: 3, Height: 70, Width: 66, KernelH: 3, KernelW: 3, StrideH: 2, StrideW: 2},
		{Batch: 1, InChans: 2, Height: 40, Width: 45, KernelH: 5, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 1},
		// 1×1 stride 1: the pointwise product, in two blocks of pixels (the
		// second partial) and a batch of two.
		{Batch: 2, InChans: 9, Height: 23, Width: 17, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1},
		{Batch: 1, InChans: 3, Height: 4, Width: 3, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0},
		// Small images in a batch of five: two bands of three rows per
		// image, ten tasks for two or three workers.
		{Batch: 5, InChans: 4, Height: 6, Width: 7, KernelH: 3, KernelW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1},
	}
	for _, mode := range []string{"direct", "windows", "pointwise"} {
		t.Run(mode, func(t *testing.T) {
			prev := convPath
			convPath = mode
			defer func() { convPath = prev }()
			forEachPath(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(31, 32))
				for _, u := range geoms {
					u.DilationH, u.DilationW = max(u.DilationH, 1), max(u.DilationW, 1)
					for _, outChans := range []int{13, 40, 70} { // 70: the pointwise product's packed blocks (pointwiseTapsMaxOut)
						c := ops.Conv2d{Unfold: u, OutChans: outChans, Bias: true}
						threads := 2
						if mode == "direct" && outChans == 40 {
							threads = 3 // bands and parts for three workers
						}
						be := New(threads)
						poisonScratch(be, 1<<19)
						x := randSlice(rng, u.Batch*u.InChans*u.Height*u.Width, -1, 1)
						w := randSlice(rng, outChans*c.Cols(), -0.5, 0.5)
						bias := randSlice(rng, outChans, -0.5, 0.5)
						in := []*tensor{be.testTensor(t, bench.Shape{u.Batch, u.InChans, u.Height, u.Width}, x),
							be.testTensor(t, bench.Shape{outChans, u.InChans, u.KernelH, u.KernelW}, w),
							be.testTensor(t, bench.Shape{outChans}, bias)}
						out := []*tensor{be.testTensor(t, bench.Shape{u.Batch, outChans, u.OutH(), u.OutW()}, nil)}
						if err := be.conv2d(c, in, out); err != nil {
							t.Fatal(err)
						}
						checkClose(t, fmt.Sprintf("%s %+v O=%d", mode, u, outChans), out[0].data, convOracle(c, x, w, bias))
					}
				}
			})
		})
	}
}

// poisonScratch gives be a scratch arena of n NaNs, so that a convolution
// that reads scratch it did not write this call (a padding column it left
// to whatever an earlier node wrote there) produces NaNs.
func poisonScratch(be *Backend, n int) {
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(math.NaN())
	}
	be.arena = a
}
