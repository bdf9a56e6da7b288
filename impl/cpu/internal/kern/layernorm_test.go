package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// LayerNorm tolerances: PyTorch's own test tolerance for fp32 LayerNorm
// (torch.testing's fp32 default rtol, and atol 1e-5).
const lnRtol, lnAtol = 1.3e-6, 1e-5

// TestLayerNormMatchesOracle runs LayerNorm on every path, every row
// length (the model widths 64, 192, 384, 768, 1024 too), three rows with
// odd strides, out of place and in place, on activations with a per-row
// offset (0, 3, 100: the two-pass variance must not cancel) and spread,
// with eps 1e-6 (timm) and 1e-5, inside guard regions.
func TestLayerNormMatchesOracle(t *testing.T) {
	sizes := append([]int{64, 192, 384, 768, 1024}, vecSizes...)
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 12))
		const rows = 3
		for _, n := range sizes {
			for _, eps := range []float32{1e-6, 1e-5} {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("n=%d/eps=%g/inplace=%v", n, eps, inPlace)
					ldx, ldy := n+1, n+3
					if inPlace {
						ldy = ldx
					}
					x, xf := guarded(rng, (rows-1)*ldx+n, true)
					for r, off := range []float32{0, 3, 100} {
						for j := 0; j < n; j++ {
							x[r*ldx+j] = off + 2*x[r*ldx+j]
						}
					}
					gamma, gf := guarded(rng, n, true)
					beta, bf := guarded(rng, n, true)
					for j := range gamma {
						gamma[j] += 1
					}
					want := make([]float32, (rows-1)*ldy+n)
					layerNormRef(rows, n, x, ldx, gamma, beta, eps, want, ldy)
					goPath := make([]float32, len(want))
					for r := 0; r < rows; r++ {
						layerNormRowGo(x[r*ldx:r*ldx+n], gamma, beta, goPath[r*ldy:r*ldy+n], eps)
					}
					y, yf := guarded(rng, len(want), false)
					if inPlace {
						y, yf = x, xf
					}
					LayerNorm(rows, n, x, ldx, gamma, beta, eps, y, ldy)
					checkGuards(t, name+" x", xf)
					checkGuards(t, name+" y", yf)
					checkGuards(t, name+" gamma", gf)
					checkGuards(t, name+" beta", bf)
					for r := 0; r < rows; r++ {
						for j := 0; j < n; j++ {
							i := r*ldy + j
							if !close32(y[i], want[i], lnRtol, lnAtol) {
								t.Fatalf("%s: y[%d,%d] = %g, oracle %g", name, r, j, y[i], want[i])
							}
							if !close32(y[i], goPath[i], lnRtol, lnAtol) {
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

// TestLayerNormSpecialValues: a NaN or Inf makes its whole row NaN (the
// mean is NaN), leaving the other rows alone; a constant row gives beta
// (variance 0, so only eps scales); n = 1 likewise.
func TestLayerNormSpecialValues(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		for _, n := range []int{1, 5, 17, 40} {
			x := make([]float32, 4*n)
			for j := 0; j < n; j++ {
				x[j] = float32(j%7) - 3   // ordinary
				x[n+j] = float32(j%5) - 2 // NaN
				x[2*n+j] = 7              // constant
				x[3*n+j] = float32(j % 3) // Inf
			}
			x[n+n/2] = float32(math.NaN())
			x[3*n+n-1] = float32(math.Inf(1))
			gamma, beta := make([]float32, n), make([]float32, n)
			for j := range gamma {
				gamma[j], beta[j] = 2, float32(j)/4
			}
			want := make([]float32, 4*n)
			layerNormRef(4, n, x, n, gamma, beta, 1e-5, want, n)
			y := make([]float32, 4*n)
			LayerNorm(4, n, x, n, gamma, beta, 1e-5, y, n)
			for r := 0; r < 4; r++ {
				for j := 0; j < n; j++ {
					g := y[r*n+j]
					switch {
					case r == 1 || r == 3:
						if !math.IsNaN(float64(g)) {
							t.Fatalf("n=%d row %d: y[%d] = %g, want NaN", n, r, j, g)
						}
					case r == 2 || n == 1:
						if g != beta[j] {
							t.Fatalf("n=%d row %d: y[%d] = %g, want beta %g", n, r, j, g, beta[j])
						}
					case !close32(g, want[r*n+j], lnRtol, lnAtol):
						t.Fatalf("n=%d row %d: y[%d] = %g, oracle %g", n, r, j, g, want[r*n+j])
					}
				}
			}
		}
	})
}

// TestLayerNormMatchesPyTorch compares with torch.nn.functional.layer_norm
// (torch 1.13, CPU, fp32) of two rows of 147, x[r][j] = ((37j + 11r) mod
// 101)/16 − 3 + 100r, gamma[j] = 1 + ((7j) mod 13)/32, beta[j] = ((5j) mod
// 9)/64 − 1/16, printed at j = 0, 1, 2, 73, 145, 146 by
//
//	/usr/bin/python3 -c 'import torch, torch.nn.functional as F; n = 147; x = torch.tensor([[((j*37+r*11)%101)/16-3+r*100 for j in range(n)] for r in (0, 1)]); g = torch.tensor([1+((j*7)%13)/32 for j in range(n)]); b = torch.tensor([((j*5)%9)/64-0.0625 for j in range(n)]); [print([repr(F.layer_norm(x, (n,), g, b, e)[r, j].item()) for j in (0, 1, 2, 73, 145, 146)]) for e in (1e-6, 1e-5) for r in (0, 1)]'
func TestLayerNormMatchesPyTorch(t *testing.T) {
	const n = 147
	x := make([]float32, 2*n)
	gamma, beta := make([]float32, n), make([]float32, n)
	for j := 0; j < n; j++ {
		for r := 0; r < 2; r++ {
			x[r*n+j] = float32((j*37+r*11)%101)/16 - 3 + float32(100*r)
		}
		gamma[j] = 1 + float32((j*7)%13)/32
		beta[j] = float32((j*5)%9)/64 - 0.0625
	}
	idx := []int{0, 1, 2, 73, 145, 146}
	torch := map[float32][2][]float32{
		1e-6: {{-1.7599254846572876, -0.5092234015464783, 0.8153899908065796, 0.9947947263717651, -1.311158299446106, -0.0716213509440422},
			{-1.3896491527557373, -0.0508202463388443, 1.2093017101287842, 1.4246944189071655, -0.9273543953895569, 0.40090709924697876}},
		1e-5: {{-1.7599232196807861, -0.509222686290741, 0.8153888583183289, 0.9947934150695801, -1.3111565113067627, -0.07162131369113922},
			{-1.3896485567092896, -0.0508216992020607, 1.2092987298965454, 1.424691081047058, -0.9273543953895569, 0.40090489387512207}},
	}
	forEachISA(t, func(t *testing.T) {
		for eps, want := range torch {
			y := make([]float32, 2*n)
			LayerNorm(2, n, x, n, gamma, beta, eps, y, n)
			for r := 0; r < 2; r++ {
				for k, j := range idx {
					if !close32(y[r*n+j], want[r][k], lnRtol, lnAtol) {
						t.Errorf("eps %g: y[%d,%d] = %g, torch %g", eps, r, j, y[r*n+j], want[r][k])
					}
				}
			}
		}
	})
}

func BenchmarkLayerNorm(b *testing.B) {
	n := benchRows * benchCols
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := guarded(rng, n, true)
	gamma, _ := guarded(rng, benchCols, true)
	beta, _ := guarded(rng, benchCols, true)
	y := make([]float32, n)
	benchVec(b, 8*n+8*benchCols, func() { LayerNorm(benchRows, benchCols, x, benchCols, gamma, beta, 1e-6, y, benchCols) })
}
