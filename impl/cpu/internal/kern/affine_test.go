package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// affineCoefs are the (a, b) pairs Affine and AffineSiLU are tested with:
// GroupNorm's 1/σ-scaled gamma and shifted beta, small and large,
// including b ≈ −a·x for some x (cancellation).
var affineCoefs = [][2]float32{{1, 0}, {0.7, -0.3}, {-2.5, 1.25}, {40, 3}, {1e-3, 5}}

// affineTol is the tolerance of a·x + b against its exact value: the Go
// path may round a·x before adding (an absolute error of an ulp of a·x),
// the SIMD paths round once.
func affineTol(a, x float32) float64 { return math.Abs(float64(a)*float64(x)) * 0x1p-23 }

// TestAffineMatchesOracle runs Affine on every path and size, in and out
// of place, inside guard regions, against the exact a·x + b rounded once
// and the Go twin.
func TestAffineMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, c := range affineCoefs {
		a, b := c[0], c[1]
		t.Run(fmt.Sprintf("a=%g/b=%g", a, b), func(t *testing.T) {
			checkUnaryOracle(t, rng, unaryKernel{name: "affine",
				kernel: func(n int, x, y []float32) { Affine(n, a, b, x, y) },
				twin:   func(x, y []float32) { affineGo(a, b, x, y) },
				oracle: func(n int, x, y []float32) {
					for i := 0; i < n; i++ {
						y[i] = float32(float64(a)*float64(x[i]) + float64(b))
					}
				},
				scale: 16,
				tol:   func(x, _ float32) (float64, float64) { return 0x1p-23, affineTol(a, x) + 1e-30 }})
		})
	}
}

// TestAffineSiLUMatchesOracle runs AffineSiLU the same way against the
// float64 swish of the exact a·x + b: SiLU's tolerance plus the error of
// the rounded argument (|silu′| < 1.1).
func TestAffineSiLUMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, c := range affineCoefs {
		a, b := c[0], c[1]
		t.Run(fmt.Sprintf("a=%g/b=%g", a, b), func(t *testing.T) {
			checkUnaryOracle(t, rng, unaryKernel{name: "affineSiLU",
				kernel: func(n int, x, y []float32) { AffineSiLU(n, a, b, x, y) },
				twin:   func(x, y []float32) { affineGo(a, b, x, y); siluGo(y, y) },
				oracle: func(n int, x, y []float32) {
					for i := 0; i < n; i++ {
						v := float64(a)*float64(x[i]) + float64(b)
						y[i] = float32(v / (1 + math.Exp(-v)))
					}
				},
				scale: 16,
				tol: func(x, _ float32) (float64, float64) {
					v := math.Abs(float64(a)*float64(x) + float64(b))
					return siluTol, 1.1*(affineTol(a, x)+v*0x1p-24) + 1e-30
				}})
		})
	}
}

// TestAffineSiLUIsSiLUOfAffine: on every path AffineSiLU gives exactly
// SiLU of Affine's output, so fusing the two passes changes no value.
func TestAffineSiLUIsSiLUOfAffine(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	x, _ := guarded(rng, 1000, true)
	for i := range x {
		x[i] *= 16
	}
	forEachISA(t, func(t *testing.T) {
		for _, c := range affineCoefs {
			fused, twoPass := make([]float32, len(x)), make([]float32, len(x))
			AffineSiLU(len(x), c[0], c[1], x, fused)
			Affine(len(x), c[0], c[1], x, twoPass)
			SiLU(len(x), twoPass, twoPass)
			for i := range x {
				if math.Float32bits(fused[i]) != math.Float32bits(twoPass[i]) {
					t.Fatalf("a=%g b=%g x=%g: AffineSiLU %g, SiLU(Affine) %g", c[0], c[1], x[i], fused[i], twoPass[i])
				}
			}
		}
	})
}
