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
