package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// quickGELUTol bounds |QuickGELU − oracle| relative to |y|: exp's error
// (≤ 2 ulp, times |1.702·x|·e/(1+e) ≤ 1 for the rounding of the argument
// as PyTorch rounds it too) and three roundings (x·n, 1 + e, the division).
const quickGELUTol = 6e-7

// TestQuickGELUMatchesOracle runs QuickGELU on every path and size, out of
// place and in place, on values in [−16, 16] inside guard regions, against
// the float64 oracle and the Go path.
func TestQuickGELUMatchesOracle(t *testing.T) {
	checkUnaryOracle(t, rand.New(rand.NewPCG(11, 12)), unaryKernel{name: "quick_gelu", kernel: QuickGELU, twin: quickGELUGo,
		oracle: quickGELURef, scale: 16, tol: func(_, _ float32) (float64, float64) { return quickGELUTol, 1e-30 }})
}

// TestQuickGELUMatchesPyTorch compares with x * torch.sigmoid(1.702 * x)
// (torch 1.13, CPU, fp32), values printed by
//
//	/usr/bin/python3 -c 'import torch; x = torch.tensor([-100., -10., -5., -3., -1., -0.5, -0.03125, -0., 0., 0.03125, 0.5, 1., 3., 5., 10., 100., float("inf"), float("-inf")]); print([repr(v) for v in (x*torch.sigmoid(1.702*x)).tolist()])'
//
// with the signs of zeros and the special values too.
func TestQuickGELUMatchesPyTorch(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	torch := []float32{negZero, -4.0579593019174354e-07, -0.0010070160496979952, -0.018071310594677925, -0.15420423448085785,
		-0.14961156249046326, -0.015209570527076721, negZero, 0, 0.01604042947292328, 0.35038843750953674, 0.8457958102226257,
		2.981928825378418, 4.998992919921875, 10, 100, float32(math.Inf(1)), float32(math.NaN())}
	checkUnaryTorch(t, "quick_gelu", QuickGELU, torchProbe(), torch, quickGELUTol, 0)
}

func BenchmarkQuickGELU(b *testing.B) {
	n := benchRows * benchCols
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := guarded(rng, n, true)
	for i := range x {
		x[i] *= 4
	}
	y := make([]float32, n)
	benchVec(b, 8*n, func() { QuickGELU(n, x, y) })
}
