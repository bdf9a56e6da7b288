package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// geluTol bounds |GELU − exact GELU|: erf's error (≤ 2e-7 relative) and
// the rounding of 1 + erf (≤ 1.2e-7), both scaled by |x|/2, plus the final
// rounding. For x < 0 the float32 sum 1 + erf cancels, as in PyTorch, so
// the bound is absolute in |x|, not relative to the tiny result.
func geluTol(x, want float32) float64 {
	return 2e-7*math.Abs(float64(x)) + 1.2e-7*math.Abs(float64(want))
}

// TestGELUMatchesOracle runs GELU on every path and size, out of place
// and in place, on values in [−8, 8] with guard regions, against the
// exact GELU and the Go path.
func TestGELUMatchesOracle(t *testing.T) {
	checkUnaryOracle(t, rand.New(rand.NewPCG(7, 8)), unaryKernel{name: "gelu", kernel: GELU, twin: geluGo,
		oracle: geluRef, scale: 8, tol: func(x, want float32) (float64, float64) { return 0, geluTol(x, want) }})
}

// TestGELUSpecialValues: NaN propagates, ±Inf and large |x| saturate,
// zero results are +0 (PyTorch 1.13 returns +0 for x ≤ −5.5 and for −0).
// gelu(−Inf) is 0, the limit, where PyTorch 1.13's CPU kernel gives NaN.
func TestGELUSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	x := []float32{nan, inf, -inf, negZero, 0, -1e30, 1e30, -10, 10, -3.4e38, 3.4e38, 1e-30, -1e-30, -5.6, 6}
	want := []float32{nan, inf, 0, 0, 0, 0, 1e30, 0, 10, 0, 3.4e38, 5e-31, -5e-31, 0, 6}
	forEachISA(t, func(t *testing.T) {
		// Repeat so that the values go through full vectors and the tail.
		for _, n := range []int{len(x), 3 * len(x)} {
			in := make([]float32, n)
			for i := range in {
				in[i] = x[i%len(x)]
			}
			out := make([]float32, n)
			GELU(n, in, out)
			for i, g := range out {
				w := want[i%len(x)]
				if !close32(g, w, 1e-6, 0) || (w == 0 && math.Signbit(float64(g))) {
					t.Fatalf("gelu(%g) = %g, want %g", in[i], g, w)
				}
			}
		}
	})
}

// TestGELUMatchesPyTorch compares with torch.nn.functional.gelu (torch
// 1.13, CPU, fp32), values printed by
//
//	/usr/bin/python3 -c 'import torch, torch.nn.functional as F; x = torch.tensor([-10., -5., -3., -2.25, -1., -0.5, -0.03125, 0., 0.03125, 0.5, 0.75, 1., 1.5, 2.5, 3., 5., 10.]); print([repr(v) for v in F.gelu(x).tolist()])'
//
// PyTorch's own erf (the vectorized A&S 7.1.26 form) is good to ~1e-7
// absolute, so the tolerance is the cancellation bound of geluTol plus
// that error times |x|/2.
func TestGELUMatchesPyTorch(t *testing.T) {
	x := []float32{-10, -5, -3, -2.25, -1, -0.5, -0.03125, 0, 0.03125, 0.5, 0.75, 1, 1.5, 2.5, 3, 5, 10}
	torch := []float32{0.0, -1.4901161193847656e-06, -0.004049867391586304, -0.02750498056411743, -0.1586552858352661,
		-0.1542687863111496, -0.015235467813909054, 0.0, 0.01601453125476837, 0.3457311987876892, 0.5800295472145081,
		0.8413447141647339, 1.3997890949249268, 2.48447585105896, 2.995950222015381, 4.999998569488525, 10.0}
	forEachISA(t, func(t *testing.T) {
		y := make([]float32, len(x))
		GELU(len(x), x, y)
		for i := range x {
			if !close32(y[i], torch[i], 0, geluTol(x[i], torch[i])+1e-7*math.Abs(float64(x[i]))) {
				t.Errorf("gelu(%g) = %g, torch %g", x[i], y[i], torch[i])
			}
		}
	})
}

// TestErfAccuracy measures the erf inside GELU, on every path, against
// math.Erf densely over [−10, 10] (a grid of step 1e-5, and magnitudes
// 1e-30 … 1 on a log grid), and requires max relative error ≤ 2e-7 (about
// 1.7 ulp).
func TestErfAccuracy(t *testing.T) {
	var x []float32
	for v := -10.0; v <= 10; v += 1e-5 {
		x = append(x, float32(v))
	}
	for e := -30.0; e <= 0; e += 1e-3 {
		v := float32(math.Pow(10, e))
		x = append(x, v, -v)
	}
	want := make([]float64, len(x))
	for i, v := range x {
		want[i] = math.Erf(float64(v))
	}
	y := make([]float32, len(x))
	forEachISA(t, func(t *testing.T) {
		erfVec(len(x), x, y)
		var maxRel, maxUlp float64
		var at float32
		for i, w := range want {
			rel := math.Abs(float64(y[i])-w) / math.Abs(w)
			if w == 0 {
				rel = math.Abs(float64(y[i]))
			}
			if rel > maxRel {
				maxRel, at = rel, x[i]
			}
			maxUlp = max(maxUlp, ulpErr(y[i], w))
		}
		t.Logf("erf over [-10, 10], %d points: max relative error %.3g (at x = %g), max %.2f ulp", len(x), maxRel, at, maxUlp)
		if maxRel > 2e-7 {
			t.Errorf("erf max relative error %.3g at x = %g", maxRel, at)
		}
	})
	forEachISA(t, func(t *testing.T) {
		nan := float32(math.NaN())
		in := []float32{nan, float32(math.Inf(1)), float32(math.Inf(-1)), 0}
		out := make([]float32, len(in))
		erfVec(len(in), in, out)
		if !math.IsNaN(float64(out[0])) || out[1] != 1 || out[2] != -1 || out[3] != 0 {
			t.Errorf("erf(NaN, +Inf, -Inf, 0) = %v", out)
		}
	})
}

func BenchmarkGELU(b *testing.B) {
	n := benchRows * benchCols
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := guarded(rng, n, true)
	for i := range x {
		x[i] *= 4
	}
	y := make([]float32, n)
	benchVec(b, 8*n, func() { GELU(n, x, y) })
}
