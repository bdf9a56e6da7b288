//go:build !purego

package kern

// winogradInputBlocked runs WinogradInputBlocked's kernel on the SIMD
// paths and reports whether it did: false on the Go path, which takes the
// twin. The kernels are called directly, not through a func value, so
// that their arguments do not escape.
func winogradInputBlocked(n int, x *float32, rowStride int, v *float32, vStride int) bool {
	switch active {
	case ISAAVX512:
		winogradInputBlockedAVX512(n, x, rowStride, v, vStride)
	case ISAAVX2:
		winogradInputBlockedAVX2(n, x, rowStride, v, vStride)
	default:
		return false
	}
	return true
}

// winogradOutputBlocked runs WinogradOutputBlocked's kernel on the SIMD
// paths and reports whether it did (as winogradInputBlocked).
func winogradOutputBlocked(n int, m *float32, mStride int, bias *[16]float32, res, y *float32, rowStride int, relu bool) bool {
	r := 0
	if relu {
		r = 1
	}
	switch active {
	case ISAAVX512:
		winogradOutputBlockedAVX512(n, m, mStride, &bias[0], res, y, rowStride, r)
	case ISAAVX2:
		winogradOutputBlockedAVX2(n, m, mStride, &bias[0], res, y, rowStride, r)
	default:
		return false
	}
	return true
}
