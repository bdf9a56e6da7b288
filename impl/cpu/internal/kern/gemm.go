package kern

// SgemmNT computes C = A·Bᵀ (+ bias) for row-major A [m, k] (row stride
// lda), B [n, k] (row stride ldb) and C [m, n] (row stride ldc):
//
//	for i < m, j < n:
//	  acc := 0 (or bias[j] when bias != nil)
//	  for p < k: acc += A[i·lda+p] · B[j·ldb+p]
//	  C[i·ldc+j] = acc
//
// Both operands are read along k, contiguously: the layout of a Linear or
// conv weight [out, in] against activations [tokens, in]. The caller splits
// rows of A across threads.
func SgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	if m == 0 || n == 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = b[(n-1)*ldb+k-1]
	_ = c[(m-1)*ldc+n-1]
	if bias != nil {
		_ = bias[n-1]
	}
	sgemmNT(m, n, k, a, lda, b, ldb, c, ldc, bias)
}
