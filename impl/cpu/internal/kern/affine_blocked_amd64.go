//go:build !purego

package kern

// affineBlocked runs AffineBlocked's kernel on the SIMD paths and reports
// whether it did: false on the Go path, which takes the twin. The kernels
// are called directly, not through a func value, so that their arguments
// do not escape.
func affineBlocked(n int, a, b *[16]float32, x, y *float32, silu bool) bool {
	switch {
	case active == ISAAVX512 && silu:
		affineSiLUBlockedAVX512(n, &a[0], &b[0], x, y)
	case active == ISAAVX512:
		affineBlockedAVX512(n, &a[0], &b[0], x, y)
	case active == ISAAVX2 && silu:
		affineSiLUBlockedAVX2(n, &a[0], &b[0], x, y)
	case active == ISAAVX2:
		affineBlockedAVX2(n, &a[0], &b[0], x, y)
	default:
		return false
	}
	return true
}
