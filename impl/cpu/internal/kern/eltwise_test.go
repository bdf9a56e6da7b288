package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// vecSizes are the lengths every vector kernel is tested at: empty, below,
// at and around the AVX2 (8) and AVX-512 (16) widths and the unrolled
// blocks, and model widths.
var vecSizes = []int{0, 1, 7, 15, 16, 17, 31, 33, 147, 576, 769}

// close32 reports whether got is within atol + rtol·|want| of want, NaN
// matching NaN and infinities matching exactly.
func close32(got, want float32, rtol, atol float64) bool {
	g, w := float64(got), float64(want)
	switch {
	case math.IsNaN(w) || math.IsNaN(g):
		return math.IsNaN(w) && math.IsNaN(g)
	case math.IsInf(w, 0) || math.IsInf(g, 0):
		return g == w
	}
	return math.Abs(g-w) <= atol+rtol*math.Abs(w)
}

// ulpErr returns |got − want| in units of the float32 ulp at want (the
// spacing of float32 values around the exact result; 2⁻¹⁴⁹ for
// subnormals).
func ulpErr(got float32, want float64) float64 {
	a := math.Abs(want)
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	ulp := math.Ldexp(1, max(e-24, -149))
	return math.Abs(float64(got)-want) / ulp
}

// eltwiseCase is one elementwise kernel under test: run calls the API on
// (x, y, out), ref the oracle, and the result must be within rtol of the
// oracle (0: bitwise equal up to NaN).
type eltwiseCase struct {
	name string
	run  func(n int, x, y, out []float32)
	ref  func(n int, x, y, out []float32)
	rtol float64
}

var eltwiseCases = []eltwiseCase{
	{"Add", func(n int, x, y, o []float32) { Add(n, x, y, o) }, addRef, 0},
	{"ReLU", func(n int, x, _, o []float32) { ReLU(n, x, o) }, func(n int, x, _, o []float32) { reluRef(n, x, o) }, 0},
	{"Scale", func(n int, x, _, o []float32) { Scale(n, -1.75, x, o) }, func(n int, x, _, o []float32) { scaleRef(n, -1.75, x, o) }, 0},
	// x + alpha·y fused or not: within an ulp of |x| + |alpha·y|.
	{"AddScaled", func(n int, x, y, o []float32) { AddScaled(n, 0.3, x, y, o) }, func(n int, x, y, o []float32) { addScaledRef(n, 0.3, x, y, o) }, 1.2e-7},
	{"Max", func(n int, x, y, o []float32) { Max(n, x, y, o) }, maxRef, 0},
	// The convolution finish: bias, residual (y) when given, ReLU when asked.
	{"BiasResidual", func(n int, x, y, o []float32) { BiasResidual(n, 0.75, x, y, o, false) },
		func(n int, x, y, o []float32) { biasResidualRef(n, 0.75, x, y, o, false) }, 0},
	{"BiasResidualReLU", func(n int, x, y, o []float32) { BiasResidual(n, -0.25, x, y, o, true) },
		func(n int, x, y, o []float32) { biasResidualRef(n, -0.25, x, y, o, true) }, 0},
	{"Bias", func(n int, x, _, o []float32) { BiasResidual(n, 1.5, x, nil, o, false) },
		func(n int, x, _, o []float32) { biasResidualRef(n, 1.5, x, nil, o, false) }, 0},
	{"BiasReLU", func(n int, x, _, o []float32) { BiasResidual(n, -0.5, x, nil, o, true) },
		func(n int, x, _, o []float32) { biasResidualRef(n, -0.5, x, nil, o, true) }, 0},
}

// TestEltwiseMatchesOracle runs every elementwise kernel on every path,
// at every size, out of place and in place on either input, with NaN in
// the inputs (it must come out at the same index) and guard regions
// around every buffer.
func TestEltwiseMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, c := range eltwiseCases {
			for _, n := range vecSizes {
				for _, mode := range []string{"out", "inplace-x", "inplace-y"} {
					name := fmt.Sprintf("%s/n=%d/%s", c.name, n, mode)
					x, xf := guarded(rng, n, true)
					y, yf := guarded(rng, n, true)
					if n > 5 {
						x[3] = float32(math.NaN())
						y[5] = float32(math.Inf(1))
					}
					if n > 10 {
						y[9] = float32(math.NaN()) // Max must return y's NaN too
					}
					want := make([]float32, n)
					c.ref(n, x, y, want)
					out, of := guarded(rng, n, false)
					switch mode {
					case "inplace-x":
						out, of = x, xf
					case "inplace-y":
						out, of = y, yf
					}
					tol := make([]float64, n) // rtol·(|x| + |y|), the rounding scale
					for i := range tol {
						if c.rtol > 0 {
							tol[i] = c.rtol * (math.Abs(float64(x[i])) + math.Abs(float64(y[i])))
						}
					}
					c.run(n, x, y, out)
					checkGuards(t, name+" x", xf)
					checkGuards(t, name+" y", yf)
					checkGuards(t, name+" out", of)
					for i := range want {
						if !close32(out[i], want[i], 0, tol[i]) {
							t.Fatalf("%s: out[%d] = %g, oracle %g", name, i, out[i], want[i])
						}
					}
				}
			}
		}
	})
}

// benchRows, benchCols is the benchmark shape: ViT-B tokens × width.
const benchRows, benchCols = 197, 768

// benchVec times f on each path and reports GB/s, counting each input
// and output element once (bytes per call).
func benchVec(b *testing.B, bytes int, f func()) {
	for _, p := range Supported() {
		b.Run("isa="+string(p), func(b *testing.B) {
			prev := SetISA(p)
			defer SetISA(prev)
			for b.Loop() {
				f()
			}
			b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func BenchmarkEltwise(b *testing.B) {
	n := benchRows * benchCols
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := guarded(rng, n, true)
	y, _ := guarded(rng, n, true)
	out := make([]float32, n)
	b.Run("Add", func(b *testing.B) { benchVec(b, 12*n, func() { Add(n, x, y, out) }) })
	b.Run("Scale", func(b *testing.B) { benchVec(b, 8*n, func() { Scale(n, 0.5, x, out) }) })
	b.Run("AddScaled", func(b *testing.B) { benchVec(b, 12*n, func() { AddScaled(n, 0.5, x, y, out) }) })
}
