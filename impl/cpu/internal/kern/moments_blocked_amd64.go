//go:build !purego

package kern

// momentsBlocked runs MomentsBlocked's kernel on the SIMD paths and
// reports whether it did: false on the Go path, which takes the twin. The
// kernels are called directly, not through a func value, so that their
// arguments do not escape.
func momentsBlocked(n int, x *float32, shift *[16]float32, s1, s2 *[16]float64) bool {
	switch active {
	case ISAAVX512:
		momentsBlockedAVX512(n, x, &shift[0], &s1[0], &s2[0])
	case ISAAVX2:
		momentsBlockedAVX2(n, x, &shift[0], &s1[0], &s2[0])
	default:
		return false
	}
	return true
}
