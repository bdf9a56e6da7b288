package kern

import (
	"math/rand/v2"
	"testing"
)

// TestTransposeMatchesOracle checks every path on shapes around the 8×8
// block, with row strides wider than the rows and NaN guard regions
// around both buffers.
func TestTransposeMatchesOracle(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, rows := range []int{1, 7, 8, 9, 16, 23, 64} {
			for _, cols := range []int{1, 5, 8, 15, 16, 17, 40, 256} {
				lds, ldd := cols+3, rows+5
				if (rows+cols)%2 == 0 { // tight buffers: no stride padding after the last row
					lds, ldd = cols, rows
				}
				src, srcFull := guarded(rng, (rows-1)*lds+cols, true)
				dst, dstFull := guarded(rng, (cols-1)*ldd+rows, false)
				Transpose(rows, cols, src, lds, dst, ldd)
				for i := 0; i < rows; i++ {
					for j := 0; j < cols; j++ {
						if dst[j*ldd+i] != src[i*lds+j] {
							t.Fatalf("%d×%d: dst[%d][%d] = %v, want %v", rows, cols, j, i, dst[j*ldd+i], src[i*lds+j])
						}
					}
				}
				for j := 0; j < cols; j++ { // the stride padding is untouched
					for i := rows; i < ldd && j*ldd+i < len(dst); i++ {
						if dst[j*ldd+i] != 0 {
							t.Fatalf("%d×%d: wrote past row end at [%d][%d]", rows, cols, j, i)
						}
					}
				}
				checkGuards(t, "Transpose src", srcFull)
				checkGuards(t, "Transpose dst", dstFull)
			}
		}
	})
}
