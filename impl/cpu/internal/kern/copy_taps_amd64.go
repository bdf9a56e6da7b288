//go:build !purego

package kern

// copyTaps12For returns the 12-value panel copy of path p, nil on the Go
// path. The kernel uses AVX2 encodings, which the AVX-512 path has too.
func copyTaps12For(p ISA) func(n int, src *float32, taps *int, dst *float32) {
	if p == ISAAVX512 || p == ISAAVX2 {
		return copyTaps12AVX2
	}
	return nil
}

// transposeRows12 runs the 12-row panel transpose (n steps of 8 columns)
// on the SIMD paths and reports whether it did; the Go path returns false.
// The kernel is called directly, not through a func value, so that the
// caller's offsets stay on its stack.
func transposeRows12(n int, src *float32, offs *int, dst *float32) bool {
	if active != ISAAVX512 && active != ISAAVX2 {
		return false
	}
	transposeRows12AVX2(n, src, offs, dst)
	return true
}
