package kern

// sgemmNTRef computes C = A·Bᵀ (+ bias) for row-major A [m, k], B [n, k]
// and C [m, n] as the plain loop — the oracle the GEMM paths (Sgemm,
// SgemmPacked, SgemmSource, on every ISA) are tested against:
//
//	for i < m, j < n:
//	  acc := 0 (or bias[j] when bias != nil)
//	  for p < k: acc += A[i·lda+p] · B[j·ldb+p]
//	  C[i·ldc+j] = acc
func sgemmNTRef(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			if bias != nil {
				acc = bias[j]
			}
			for p := 0; p < k; p++ {
				acc += a[i*lda+p] * b[j*ldb+p]
			}
			c[i*ldc+j] = acc
		}
	}
}
