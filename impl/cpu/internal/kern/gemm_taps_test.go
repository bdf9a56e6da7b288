package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSgemmTapsMatchesOracle checks the in-place-B GEMM on every path
// against a float64 loop, for row counts that are not multiples of the
// panel height, K across several kc blocks, ragged n, and NaN guards after
// C and in the columns past n.
func TestSgemmTapsMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, p := range Supported() {
		prev := SetISA(p)
		for _, sh := range [][3]int{{1, 1, 1}, {5, 7, 31}, {12, 300, 33}, {13, 600, 128}, {64, 577, 100}, {70, 9, 17}, {14, kcBlock + 130, 40}, {20, 50, 40}, {17, 40, 64}} {
			m, k, n := sh[0], sh[1], sh[2]
			a, src, taps := tapsProblem(rng, m, k, 4000)
			pa := PackA(m, k, a, k)
			ldc := n + 40
			rows := pa.Rows()
			c := make([]float32, rows*ldc+16)
			for i := range c {
				c[i] = float32(math.NaN())
			}
			SgemmTaps(pa, src, taps, n, c, ldc)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					var want float64
					for q := 0; q < k; q++ {
						want += float64(a[i*k+q]) * float64(src[taps[q]+j])
					}
					got := float64(c[i*ldc+j])
					if math.IsNaN(got) || math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
						t.Fatalf("%s %v: C[%d, %d] = %g, want %g", p, sh, i, j, got, want)
					}
				}
			}
			nt := (n + pa.ColTile() - 1) / pa.ColTile() * pa.ColTile()
			for i := 0; i < rows; i++ {
				for j := nt; j < ldc; j++ {
					if v := c[i*ldc+j]; !math.IsNaN(float64(v)) {
						t.Fatalf("%s %v: wrote C[%d, %d] past the rounded width %d", p, sh, i, j, nt)
					}
				}
			}
			for _, v := range c[rows*ldc:] {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("%s %v: wrote past C", p, sh)
				}
			}
		}
		SetISA(prev)
	}
}

// tapsProblem draws an SgemmTaps problem: A [m, k] and a source of srcLen
// values in [−1, 1), and k taps that leave 160 values after each.
func tapsProblem(rng *rand.Rand, m, k, srcLen int) (a, src []float32, taps []int) {
	a = make([]float32, m*k)
	for i := range a {
		a[i] = rng.Float32()*2 - 1
	}
	src = make([]float32, srcLen)
	for i := range src {
		src[i] = rng.Float32()*2 - 1
	}
	taps = make([]int, k)
	for i := range taps {
		taps[i] = rng.IntN(len(src) - 160)
	}
	return a, src, taps
}

// TestSgemmTapsRefusesOutOfRange checks that a tap whose row would run
// past the source panics before any access.
func TestSgemmTapsRefusesOutOfRange(t *testing.T) {
	pa := PackA(2, 1, []float32{1, 2}, 1)
	defer func() {
		if recover() == nil {
			t.Error("no panic for a tap past the source")
		}
	}()
	SgemmTaps(pa, make([]float32, 40), []int{39}, 4, make([]float32, 2*64), 64)
}

// TestSgemmTapsRowsSplitsExactly checks that row ranges of SgemmTapsRows,
// one RowTile at a time and in two halves, put together give SgemmTaps'
// result bit for bit on every path, the last range ending at Rows(), and
// that a range off the row tile panics.
func TestSgemmTapsRowsSplitsExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, p := range Supported() {
		prev := SetISA(p)
		for _, sh := range [][3]int{{5, 7, 31}, {40, 300, 33}, {70, kcBlock + 9, 64}} {
			m, k, n := sh[0], sh[1], sh[2]
			a, src, taps := tapsProblem(rng, m, k, 3000)
			pa := PackA(m, k, a, k)
			rows, tile, ldc := pa.Rows(), pa.RowTile(), 96
			whole := make([]float32, rows*ldc)
			SgemmTaps(pa, src, taps, n, whole, ldc)
			half := (rows / tile / 2) * tile
			for _, cuts := range [][]int{{0, half, rows}, func() []int {
				var c []int
				for i := 0; i < rows; i += tile {
					c = append(c, i)
				}
				return append(c, rows)
			}()} {
				got := make([]float32, rows*ldc)
				for q := 0; q+1 < len(cuts); q++ {
					i0, i1 := cuts[q], cuts[q+1]
					SgemmTapsRows(pa, i0, i1, src, taps, n, got[i0*ldc:], ldc)
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						if got[i*ldc+j] != whole[i*ldc+j] {
							t.Fatalf("%s %v cuts %v: C[%d, %d] = %g, whole call %g", p, sh, cuts, i, j, got[i*ldc+j], whole[i*ldc+j])
						}
					}
				}
			}
			if tile > 1 {
				func() {
					defer func() {
						if recover() == nil {
							t.Fatalf("%s %v: rows [1, %d) did not panic", p, sh, rows)
						}
					}()
					SgemmTapsRows(pa, 1, rows, src, taps, n, whole, ldc)
				}()
			}
		}
		SetISA(prev)
	}
}
