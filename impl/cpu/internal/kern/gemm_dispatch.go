package kern

// sgemmNT dispatches to the active path. Paths without a SIMD version of
// this kernel use the Go path.
func sgemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
	if f := sgemmNTSIMD(active); f != nil {
		f(m, n, k, a, lda, b, ldb, c, ldc, bias)
		return
	}
	sgemmNTGo(m, n, k, a, lda, b, ldb, c, ldc, bias)
}

type sgemmNTFunc func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32)
