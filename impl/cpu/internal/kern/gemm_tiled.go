package kern

// l2Bytes is the share of L2 a block of B rows may take, so the block is
// re-read from L2, not memory, by every tile of rows of A.
const l2Bytes = 512 << 10

// sgemmNTTiled is SgemmNT built on a dot-product tile kernel: tile(kf, a,
// b) returns the mr×nr sums Σ_{p<kf} a[r·lda+p]·b[j·ldb+p] (row-major)
// for kf a multiple of width. The driver walks blocks of B rows that fit in
// L2, tiles of mr×nr outputs inside them, adds the k tail (k mod width)
// and the bias in Go, and computes edge rows and columns with dotGo.
func sgemmNTTiled(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32,
	mr, nr, width int, tile func(kf int, a, b *float32) []float32) {
	kf := k - k%width
	if kf == 0 || m < mr || n < nr {
		sgemmNTGo(m, n, k, a, lda, b, ldb, c, ldc, bias)
		return
	}
	nb := max(nr, l2Bytes/(4*k)/nr*nr)
	mFull, nFull := m-m%mr, n-n%nr
	for j0 := 0; j0 < nFull; j0 += nb {
		j1 := min(j0+nb, nFull)
		for i := 0; i < mFull; i += mr {
			for j := j0; j < j1; j += nr {
				sums := tile(kf, &a[i*lda], &b[j*ldb])
				for r := 0; r < mr; r++ {
					crow := c[(i+r)*ldc+j : (i+r)*ldc+j+nr]
					arow := a[(i+r)*lda+kf : (i+r)*lda+k]
					for q := range crow {
						s := sums[r*nr+q]
						if kf < k {
							s += dotGo(arow, b[(j+q)*ldb+kf:(j+q)*ldb+k])
						}
						crow[q] = biasAt(bias, j+q) + s
					}
				}
			}
		}
	}
	// Edge columns for the full rows, then the edge rows entirely.
	for i := 0; i < mFull; i++ {
		ar := a[i*lda : i*lda+k]
		for j := nFull; j < n; j++ {
			c[i*ldc+j] = biasAt(bias, j) + dotGo(ar, b[j*ldb:j*ldb+k])
		}
	}
	if mFull < m {
		sgemmNTGo(m-mFull, n, k, a[mFull*lda:], lda, b, ldb, c[mFull*ldc:], ldc, bias)
	}
}
