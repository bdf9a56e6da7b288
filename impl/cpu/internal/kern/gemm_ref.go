package kern

// sgemmNTRef is SgemmNT as the plain loop of its doc comment: the oracle
// the fast paths are tested against.
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
