package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// siluTol bounds |SiLU − oracle| relative to |y|, as quickGELUTol does
// (exp's error and three roundings; no rounding of the argument).
const siluTol = 6e-7

// TestSiLUMatchesOracle runs SiLU on every path and size, out of place and
// in place, on values in [−16, 16] inside guard regions, against the
// float64 oracle and the Go path.
func TestSiLUMatchesOracle(t *testing.T) {
	checkUnaryOracle(t, rand.New(rand.NewPCG(13, 14)), unaryKernel{name: "silu", kernel: SiLU, twin: siluGo,
		oracle: siluRef, scale: 16, tol: func(_, _ float32) (float64, float64) { return siluTol, 1e-30 }})
}

// TestSiLUMatchesPyTorch compares with x * torch.sigmoid(x) (taming's
// nonlinearity; torch 1.13, CPU, fp32), values printed by
//
//	/usr/bin/python3 -c 'import torch; x = torch.tensor([-100., -10., -5., -3., -1., -0.5, -0.03125, -0., 0., 0.03125, 0.5, 1., 3., 5., 10., 100., float("inf"), float("-inf")]); print([repr(v) for v in (x*torch.sigmoid(x)).tolist()])'
//
// with the signs of zeros and the special values too.
func TestSiLUMatchesPyTorch(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	torch := []float32{negZero, -0.0004539787187241018, -0.033464252948760986, -0.14227762818336487, -0.2689414322376251,
		-0.1887703388929367, -0.015380878001451492, negZero, 0, 0.01586912013590336, 0.3112296760082245, 0.7310585975646973,
		2.857722282409668, 4.966536045074463, 9.99954605102539, 100, float32(math.Inf(1)), float32(math.NaN())}
	// Below the normal range torch flushes sigmoid(−100) to 0; a subnormal product is as good (atol 1e-37).
	checkUnaryTorch(t, "silu", SiLU, torchProbe(), torch, siluTol, 1e-37)
}
