//go:build !purego

package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAMXRowsKernel runs amxRows, the AMX kernel of the bf16 GEMM's full
// panels, against a float64 oracle on row counts around the kernel's
// tiles (1 to 16 rows, 17 to 31, several 32-row tiles and a tail), 1 to 3
// steps of 16 pairs, C starting from zero, from a bias and from its old
// values (a bias given then is not counted), with C's row stride wider
// than the panel: every output within amxBound of the exact sum, and
// nothing written past the rows or the 32 columns.
func TestAMXRowsKernel(t *testing.T) {
	if !HasAMX() {
		t.Skip("no AMX-BF16")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	bf := func(h uint32) float64 { return float64(math.Float32frombits(h << 16)) }
	pair := func() uint32 {
		return pairBF16(rng.Float32()*2-1, rng.Float32()*2-1)
	}
	const ldc = 41
	for _, rows := range []int{1, 5, 16, 17, 31, 32, 33, 48, 64, 70} {
		for kt := 1; kt <= 3; kt++ {
			for _, mode := range []string{"zero", "bias", "accumulate"} {
				accumulate := mode == "accumulate"
				var bias []float32
				if mode != "zero" {
					bias = make([]float32, bf16NR)
					for j := range bias {
						bias[j] = rng.Float32()*4 - 2
					}
				}
				kp := 16 * kt
				lda := kp + 5
				a := make([]uint32, (rows-1)*lda+kp)
				for i := range a {
					a[i] = pair()
				}
				b := make([]uint32, kp*bf16NR)
				for i := range b {
					b[i] = pair()
				}
				// Two rows past the last one, to catch a write beyond the rows.
				c, full := guarded(rng, (rows+2)*ldc, true)
				old := append([]float32(nil), c...)
				amxRows(kt, rows, a, lda, b, c, ldc, accumulate, bias)
				checkGuards(t, "amxRows", full)
				for r := 0; r < rows+2; r++ {
					for j := 0; j < ldc; j++ {
						got := c[r*ldc+j]
						if r >= rows || j >= bf16NR {
							if got != old[r*ldc+j] {
								t.Fatalf("rows %d kt %d: c[%d][%d] written (%g, was %g)", rows, kt, r, j, got, old[r*ldc+j])
							}
							continue
						}
						var want, mag float64
						for p := 0; p < kp; p++ {
							av, bv := a[r*lda+p], b[p*bf16NR+j]
							for _, h := range []uint32{0, 16} {
								x := bf(av>>h&0xffff) * bf(bv>>h&0xffff)
								want += x
								mag += math.Abs(x)
							}
						}
						extra := 0.0
						switch mode {
						case "accumulate":
							want += float64(old[r*ldc+j])
							extra = math.Abs(float64(old[r*ldc+j]))
						case "bias":
							want += float64(bias[j])
							extra = math.Abs(float64(bias[j]))
						}
						if math.Abs(float64(got)-want) > amxBound(2*kp, mag)+0x1p-22*(math.Abs(want)+extra) {
							t.Fatalf("rows %d kt %d %s: c[%d][%d] = %g, want %g", rows, kt, mode, r, j, got, want)
						}
					}
				}
			}
		}
	}
}
