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

// transposeRows runs the panel transpose of a rows-wide panel (n steps of
// 8 columns) on the SIMD paths and reports whether it did: false on the Go
// path and for widths without a kernel. The kernels are called directly,
// not through func values, so that the caller's offsets stay on its stack.
func transposeRows(rows, n int, src *float32, offs *int, dst *float32) bool {
	if active != ISAAVX512 && active != ISAAVX2 {
		return false
	}
	switch rows {
	case 12:
		transposeRows12AVX2(n, src, offs, dst)
	case 16:
		transposeRows16AVX2(n, src, offs, dst)
	case 32:
		transposeRows32AVX2(n, src, offs, dst)
	default:
		return false
	}
	return true
}

// rowPanels runs the four-row-to-panels copy of width nr (n panels) on the
// SIMD paths and reports whether it did: false on the Go path and for
// widths without a kernel.
func rowPanels(nr, n int, src *float32, ld int, dst *float32, stride int) bool {
	if active != ISAAVX512 && active != ISAAVX2 {
		return false
	}
	switch nr {
	case 16:
		rowPanels16AVX2(n, src, ld, dst, stride)
	case 32:
		rowPanels32AVX2(n, src, ld, dst, stride)
	default:
		return false
	}
	return true
}
