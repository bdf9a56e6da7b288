package kern

// sgemmNT dispatches to the active path: on a SIMD path B is packed for
// this call and the packed GEMM runs; on the Go path the blocked dot
// products run directly.
func sgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	if _, ok := microKernelFor(active); !ok {
		sgemmNTGo(m, n, k, a, lda, b, ldb, c, ldc, bias)
		return
	}
	SgemmPacked(m, a, lda, PackBT(n, k, b, ldb), c, ldc, bias, 0, n)
}
