//go:build !purego

package kern

// transposeFor returns the 8×8-block transpose of path p, nil on the Go
// path. The kernel uses AVX2 encodings, which the AVX-512 path has too.
func transposeFor(p ISA) transposeKernel {
	if p == ISAAVX512 || p == ISAAVX2 {
		return transposeStripAVX2
	}
	return nil
}
