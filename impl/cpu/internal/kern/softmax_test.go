package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxTol bounds the relative error of a softmax output: exp's (≤ 2
// ulp), the rounding of v − m, which exp turns into a relative error of
// |v − m|·2⁻²⁴ (PyTorch rounds there too), and the sum and 1/s (a few
// ulp).
func softmaxTol(vm float64) float64 { return 6e-7 + 6e-8*vm }

// TestSoftmaxMatchesOracle runs Softmax on every path, every row length,
// three rows with odd strides, out of place and in place, with scales
// 0.125 (attention's head_dim^-0.5) and 1, inside guard regions, against
// the float64 oracle and the Go path.
func TestSoftmaxMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 10))
		const rows = 3
		for _, n := range vecSizes {
			for _, scale := range []float32{0.125, 1} {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("n=%d/scale=%g/inplace=%v", n, scale, inPlace)
					ldx, ldy := n+3, n+5
					if inPlace {
						ldy = ldx
					}
					x, xf := guarded(rng, (rows-1)*ldx+n, true)
					for i := range x {
						x[i] *= 8
					}
					want := make([]float32, (rows-1)*ldy+n)
					softmaxRef(rows, n, x, ldx, want, ldy, scale)
					goPath := make([]float32, len(want))
					for r := 0; r < rows; r++ {
						softmaxRowGo(x[r*ldx:r*ldx+n], goPath[r*ldy:r*ldy+n], scale)
					}
					// |v − m| per element, for the tolerance.
					vm := make([]float64, len(want))
					for r := 0; r < rows; r++ {
						m := math.Inf(-1)
						for j := 0; j < n; j++ {
							m = max(m, float64(scale*x[r*ldx+j]))
						}
						for j := 0; j < n; j++ {
							vm[r*ldy+j] = m - float64(scale*x[r*ldx+j])
						}
					}
					y, yf := guarded(rng, len(want), false)
					if inPlace {
						y, yf = x, xf
					}
					Softmax(rows, n, x, ldx, y, ldy, scale)
					checkGuards(t, name+" x", xf)
					checkGuards(t, name+" y", yf)
					for r := 0; r < rows; r++ {
						for j := 0; j < n; j++ {
							i := r*ldy + j
							if !close32(y[i], want[i], softmaxTol(vm[i]), 1e-37) {
								t.Fatalf("%s: y[%d,%d] = %g, oracle %g", name, r, j, y[i], want[i])
							}
							if !close32(y[i], goPath[i], softmaxTol(vm[i]), 1e-37) {
								t.Fatalf("%s: y[%d,%d] = %g, Go path %g", name, r, j, y[i], goPath[i])
							}
						}
						for j := n; j < ldy && r < rows-1 && !inPlace; j++ {
							if y[r*ldy+j] != 0 {
								t.Fatalf("%s: write between rows at y[%d,%d]", name, r, j)
							}
						}
					}
				}
			}
		}
	})
}

// TestSoftmaxRowPairsMatchOneRow: Softmax runs rows two at a time
// (softmaxRows2) and a last odd row alone; every row must come out bit for
// bit as Softmax of that row alone gives it, for every row length, with
// rows of different ranges side by side (so a row normalized by its
// partner's maximum or sum shows) and rows that are NaN, +Inf or all −Inf
// next to ordinary ones.
func TestSoftmaxRowPairsMatchOneRow(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		const rows = 7
		for _, n := range vecSizes {
			ld := n + 2
			x := softmaxTestRows(rng, rows, n, ld)
			y := make([]float32, rows*ld)
			Softmax(rows, n, x, ld, y, ld, 0.125)
			for r := 0; r < rows; r++ {
				one := make([]float32, n)
				Softmax(1, n, x[r*ld:], n, one, n, 0.125)
				for j := 0; j < n; j++ {
					if !sameFloat(y[r*ld+j], one[j]) {
						t.Fatalf("n=%d: row %d of %d, y[%d] = %g, alone %g", n, r, rows, j, y[r*ld+j], one[j])
					}
				}
			}
		}
	})
}

// TestSoftmaxSpecialValues: large magnitudes (no overflow after max
// subtraction), −Inf entries (weight 0), and the rows PyTorch makes NaN:
// a NaN, a +Inf, or only −Inf. Each row is repeated to lengths with full
// vectors and a tail.
func TestSoftmaxSpecialValues(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		x, want []float32
	}{
		{[]float32{1e30, -1e30, 0, 1e30, 3}, []float32{0.5, 0, 0, 0.5, 0}},
		{[]float32{3e38, -3e38, 3e38}, []float32{0.5, 0, 0.5}},
		{[]float32{-inf, 0, -inf, float32(math.Log(3))}, []float32{0, 0.25, 0, 0.75}},
		{[]float32{-100, -100}, []float32{0.5, 0.5}},
		{[]float32{-inf, -inf, -inf}, []float32{nan, nan, nan}},
		{[]float32{1, nan, 0}, []float32{nan, nan, nan}},
		{[]float32{1, inf, 0}, []float32{nan, nan, nan}},
	}
	forEachISA(t, func(t *testing.T) {
		for _, c := range cases {
			for _, rep := range []int{1, 7} {
				n := rep * len(c.x)
				x := make([]float32, n)
				for i := range x {
					x[i] = c.x[i%len(c.x)]
				}
				y := make([]float32, n)
				Softmax(1, n, x, n, y, n, 1)
				for i := range y {
					if w := c.want[i%len(c.x)] / float32(rep); !close32(y[i], w, 1e-6, 0) {
						t.Fatalf("softmax(%v ×%d)[%d] = %g, want %g", c.x, rep, i, y[i], w)
					}
				}
			}
		}
	})
}

// TestSoftmaxMatchesPyTorch compares with torch.nn.functional.softmax
// (torch 1.13, CPU, fp32) of x[j] = ((37j) mod 101)/8 − 6, j < 147, times
// 0.125 and 1, printed at j = 0, 1, 2, 73, 145, 146 by
//
//	/usr/bin/python3 -c 'import torch, torch.nn.functional as F; x = torch.tensor([((j*37)%101)/8-6 for j in range(147)]); [print([repr(F.softmax(x*s, -1)[j].item()) for j in (0, 1, 2, 73, 145, 146)]) for s in (0.125, 1.0)]'
func TestSoftmaxMatchesPyTorch(t *testing.T) {
	const n = 147
	x := make([]float32, n)
	for j := range x {
		x[j] = float32((j*37)%101)/8 - 6
	}
	idx := []int{0, 1, 2, 73, 145, 146}
	torch := map[float32][]float32{
		0.125: {0.002830559853464365, 0.005046018399298191, 0.008995500393211842, 0.009137159213423729, 0.003414306789636612, 0.006086660549044609},
		1:     {3.060161191115185e-07, 3.121449481113814e-05, 0.0031839648727327585, 0.0036079050041735172, 1.3714691249333555e-06, 0.00013989365834277123},
	}
	forEachISA(t, func(t *testing.T) {
		for scale, want := range torch {
			y := make([]float32, n)
			Softmax(1, n, x, n, y, n, scale)
			for k, j := range idx {
				if !close32(y[j], want[k], 2e-6, 0) {
					t.Errorf("scale %g: y[%d] = %g, torch %g", scale, j, y[j], want[k])
				}
			}
		}
	})
}

// TestExpAccuracy measures the exp inside Softmax, on every path, against
// math.Exp over the arguments softmax sees, [−104, 0] (a grid of step
// 1e-4, and magnitudes 1e-30 … 1 on a log grid); results down to the
// subnormals, errors in ulp of the float32 result. It requires ≤ 2 ulp.
func TestExpAccuracy(t *testing.T) {
	var x []float32
	for v := -104.0; v <= 0; v += 1e-4 {
		x = append(x, float32(v))
	}
	for e := -30.0; e <= 0; e += 1e-3 {
		x = append(x, -float32(math.Pow(10, e)))
	}
	x = append(x, 0, float32(math.Copysign(0, -1)), -87.33654, -88, -103.9, float32(math.Inf(-1)))
	want := make([]float64, len(x))
	for i, v := range x {
		want[i] = math.Exp(float64(v))
	}
	y := make([]float32, len(x))
	forEachISA(t, func(t *testing.T) {
		expVec(len(x), x, y)
		var maxUlp, maxRel float64
		var at float32
		for i, w := range want {
			u := ulpErr(y[i], w)
			if u > maxUlp {
				maxUlp, at = u, x[i]
			}
			if w >= 0x1p-126 {
				maxRel = max(maxRel, math.Abs(float64(y[i])-w)/w)
			}
		}
		t.Logf("exp over [-104, 0], %d points: max %.2f ulp (at x = %g), max relative error %.3g (normal results)", len(x), maxUlp, at, maxRel)
		if maxUlp > 2 {
			t.Errorf("exp max error %.2f ulp at x = %g", maxUlp, at)
		}
		nan := []float32{float32(math.NaN())}
		expVec(1, nan, nan)
		if !math.IsNaN(float64(nan[0])) {
			t.Errorf("exp(NaN) = %g", nan[0])
		}
	})
}

func BenchmarkSoftmax(b *testing.B) {
	n := benchRows * benchCols
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := guarded(rng, n, true)
	y := make([]float32, n)
	benchVec(b, 8*n, func() { Softmax(benchRows, benchCols, x, benchCols, y, benchCols, 0.125) })
}

// BenchmarkSoftmaxRowPairs times Softmax (rows two at a time) against the
// one-row kernel on every row, alternating call by call on one thread,
// over a worker's block of 99 query rows of 50 to 577 keys (row stride a
// multiple of 16, as attention's score blocks have), and reports the
// median ratio (above 1: pairs faster). Not on the Go path.
func BenchmarkSoftmaxRowPairs(b *testing.B) {
	k := softmaxFor(active)
	if k == nil {
		b.Skip("no SIMD softmax on this path")
	}
	for _, n := range []int{50, 77, 197, 256, 577} {
		ld, rows := (n+15)&^15, 99
		rng := rand.New(rand.NewPCG(1, 2))
		x := make([]float32, rows*ld)
		for i := range x {
			x[i] = rng.Float32() * 4
		}
		y := make([]float32, len(x))
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			oneRow := func() {
				for r := 0; r < rows; r++ {
					k.row(n, &x[r*ld], &y[r*ld], 0.125)
				}
			}
			pairs := func() { Softmax(rows, n, x, ld, y, ld, 0.125) }
			b.ReportMetric(pairedRatio(b, oneRow, pairs), "pairs-speedup")
		})
	}
}

// TestSoftmaxExpTimesInvIsSoftmax: softmaxExp's exponentials times its
// 1/Σ are Softmax's output bit for bit on every path, with rows in pairs
// and alone, and rows holding NaN, +Inf and only −Inf among them.
func TestSoftmaxExpTimesInvIsSoftmax(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(13, 14))
		const rows = 7
		for _, n := range vecSizes {
			ld := n + 3
			x := softmaxTestRows(rng, rows, n, ld)
			want := make([]float32, rows*ld)
			Softmax(rows, n, x, ld, want, ld, 0.3)
			e := make([]float32, rows*ld)
			inv := make([]float32, rows)
			softmaxExp(rows, n, x, ld, e, ld, 0.3, inv)
			for r := 0; r < rows; r++ {
				for j := 0; j < n; j++ {
					if got := e[r*ld+j] * inv[r]; !sameFloat(got, want[r*ld+j]) {
						t.Fatalf("n=%d: row %d, exp·inv at %d = %g, Softmax gives %g", n, r, j, got, want[r*ld+j])
					}
				}
			}
		}
	})
}

// softmaxTestRows returns rows rows of n scores (row stride ld) of
// growing magnitude, with the rows PyTorch makes NaN among them: a NaN in
// row 1 (paired with row 0 by Softmax), +Inf in row 2 (paired with row
// 3), and only −Inf in row 5 (paired with row 4). rows must be at least 6.
func softmaxTestRows(rng *rand.Rand, rows, n, ld int) []float32 {
	inf := float32(math.Inf(1))
	x := make([]float32, rows*ld)
	for r := 0; r < rows; r++ {
		for j := 0; j < n; j++ {
			x[r*ld+j] = (rng.Float32()*2 - 1) * float32(1+4*r)
		}
	}
	x[1*ld+n/2] = float32(math.NaN())
	x[2*ld+n-1] = inf
	for j := 0; j < n; j++ {
		x[5*ld+j] = -inf
	}
	return x
}
