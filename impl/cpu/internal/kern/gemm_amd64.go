//go:build !purego

package kern

// sgemmNTSIMD returns the SIMD SgemmNT for path p, or nil.
func sgemmNTSIMD(p ISA) sgemmNTFunc {
	switch p {
	case ISAAVX512:
		return func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
			var out [16]float32
			sgemmNTTiled(m, n, k, a, lda, b, ldb, c, ldc, bias, 4, 4, 16, func(kf int, ap *float32, bp *float32) []float32 {
				dot4x4AVX512(kf, ap, lda, bp, ldb, &out)
				return out[:]
			})
		}
	case ISAAVX2:
		return func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, bias []float32) {
			var out [8]float32
			sgemmNTTiled(m, n, k, a, lda, b, ldb, c, ldc, bias, 4, 2, 8, func(kf int, ap *float32, bp *float32) []float32 {
				dot4x2AVX2(kf, ap, lda, bp, ldb, &out)
				return out[:]
			})
		}
	}
	return nil
}
