package cpu

import (
	"fmt"
	"os"
	"testing"

	"vitbench/bench/ops"
)

// TestConvPointwiseMatchesOracle runs 1×1 stride-1 convolutions through
// the pointwise product on every SIMD path against the float64 loop, both
// the channel groups over packed blocks of pixels and, for the narrow
// ones (13 and 40 output channels), the image read in place: maps of one
// partial block of pixels, of two blocks (527 pixels), of four (3500
// pixels: more than one block's worth per worker), a batch of two and
// three, a small map whose output channels the workers split, output
// channels past the groups of the product, and a residual with a ReLU, a
// ReLU alone and neither.
func TestConvPointwiseMatchesOracle(t *testing.T) {
	geoms := []convGeom{{1, 70, 31, 17, 0, 0}, {2, 7, 8, 8, 0, 0}, {1, 5, 13, 11, 0, 0}, {3, 3, 24, 32, 0, 0}, {1, 3, 50, 70, 0, 0}}
	for _, mode := range []string{"pointwise", "pointwisetaps"} {
		t.Run(mode, func(t *testing.T) { checkConvPath(t, mode, 1, geoms, usePointwise) })
	}
}

// TestConvPointwiseAB prints, for ResNet-50's 1×1 convolutions (BN
// folded, ReLU, the expanding ones with a residual), the median time of
// the implicit GEMM and of the pointwise product, interleaved. Skipped
// unless VITBENCH_PROFILE_AB is set.
func TestConvPointwiseAB(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_AB") == "" {
		t.Skip("VITBENCH_PROFILE_AB not set")
	}
	type cv struct {
		cin, cout, h, batch int
		res                 bool
	}
	for _, c := range []cv{{64, 256, 56, 1, true}, {256, 64, 56, 1, false}, {64, 64, 56, 1, false}, {256, 128, 56, 1, false},
		{128, 512, 28, 1, true}, {512, 128, 28, 1, false}, {256, 1024, 14, 1, true}, {1024, 256, 14, 1, false},
		{512, 2048, 7, 1, true}, {64, 256, 56, 8, true}, {1024, 256, 14, 8, false}, {64, 64, 16, 1, false},
		{256, 512, 28, 1, false}, {512, 256, 28, 1, false}, {512, 1024, 14, 1, false}, {1024, 512, 14, 1, false},
		{2048, 512, 7, 1, false}, {1024, 2048, 7, 1, false}, {64, 32, 32, 1, false}, {32, 64, 16, 1, false}, {64, 64, 16, 1, true}, {2048, 256, 29, 1, false}, {2048, 256, 29, 2, false}} {
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: c.batch, InChans: c.cin, Height: c.h, Width: c.h, KernelH: 1, KernelW: 1,
			StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1}, OutChans: c.cout, BN: true, BNEps: 1e-5, ReLU: true, Residual: c.res}
		ta, tb := abConv(conv, [2]string{"windows", "pointwise"})
		fmt.Printf("%+v: windows %.1f µs, pointwise %.1f µs, windows/pointwise %.2f\n", c, ta*1e6, tb*1e6, ta/tb)
	}
}
