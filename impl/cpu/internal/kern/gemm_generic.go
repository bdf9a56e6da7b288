package kern

// sgemmNTGo is the Go path of C = A·Bᵀ (+ bias): 4×4 blocks of dot products, so
// each loaded element of A and B feeds four multiply-adds, with scalar edges.
func sgemmNTGo(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	i := 0
	for ; i+4 <= m; i += 4 {
		j := 0
		for ; j+4 <= n; j += 4 {
			dot4x4Go(k, a[i*lda:], lda, b[j*ldb:], ldb, c[i*ldc+j:], ldc, bias, j)
		}
		for ; j < n; j++ {
			for r := 0; r < 4; r++ {
				c[(i+r)*ldc+j] = biasAt(bias, j) + dotGo(a[(i+r)*lda:(i+r)*lda+k], b[j*ldb:j*ldb+k])
			}
		}
	}
	for ; i < m; i++ {
		ar := a[i*lda : i*lda+k]
		for j := 0; j < n; j++ {
			c[i*ldc+j] = biasAt(bias, j) + dotGo(ar, b[j*ldb:j*ldb+k])
		}
	}
}

func biasAt(bias []float32, j int) float32 {
	if bias == nil {
		return 0
	}
	return bias[j]
}

// dotGo returns Σ x[p]·y[p] with four partial sums.
func dotGo(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	p := 0
	for ; p+4 <= len(x); p += 4 {
		s0 += x[p] * y[p]
		s1 += x[p+1] * y[p+1]
		s2 += x[p+2] * y[p+2]
		s3 += x[p+3] * y[p+3]
	}
	for ; p < len(x); p++ {
		s0 += x[p] * y[p]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot4x4Go writes the 4×4 block C[r, q] = bias[j0+q] + Σ_p A[r, p]·B[q, p].
func dot4x4Go(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32, j0 int) {
	a0, a1, a2, a3 := a[:k], a[lda:lda+k], a[2*lda:2*lda+k], a[3*lda:3*lda+k]
	b0, b1, b2, b3 := b[:k], b[ldb:ldb+k], b[2*ldb:2*ldb+k], b[3*ldb:3*ldb+k]
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for p := range a0 {
		x0, x1, x2, x3 := a0[p], a1[p], a2[p], a3[p]
		y0, y1, y2, y3 := b0[p], b1[p], b2[p], b3[p]
		c00 += x0 * y0
		c01 += x0 * y1
		c02 += x0 * y2
		c03 += x0 * y3
		c10 += x1 * y0
		c11 += x1 * y1
		c12 += x1 * y2
		c13 += x1 * y3
		c20 += x2 * y0
		c21 += x2 * y1
		c22 += x2 * y2
		c23 += x2 * y3
		c30 += x3 * y0
		c31 += x3 * y1
		c32 += x3 * y2
		c33 += x3 * y3
	}
	bq := [4]float32{}
	if bias != nil {
		bq = [4]float32{bias[j0], bias[j0+1], bias[j0+2], bias[j0+3]}
	}
	c[0], c[1], c[2], c[3] = bq[0]+c00, bq[1]+c01, bq[2]+c02, bq[3]+c03
	c[ldc], c[ldc+1], c[ldc+2], c[ldc+3] = bq[0]+c10, bq[1]+c11, bq[2]+c12, bq[3]+c13
	c[2*ldc], c[2*ldc+1], c[2*ldc+2], c[2*ldc+3] = bq[0]+c20, bq[1]+c21, bq[2]+c22, bq[3]+c23
	c[3*ldc], c[3*ldc+1], c[3*ldc+2], c[3*ldc+3] = bq[0]+c30, bq[1]+c31, bq[2]+c32, bq[3]+c33
}
