//go:build !purego

package kern

// avgPool2x2BlockedRow runs AvgPool2x2BlockedRow's kernel on the AVX-512
// path and reports whether it did: false on the other paths, which take
// the Go twin. The kernel is called directly, not through a func value,
// so that its arguments do not escape.
func avgPool2x2BlockedRow(n int, r0, r1, out *float32) bool {
	if active != ISAAVX512 {
		return false
	}
	avgPool2x2BlockedRowAVX512(n, r0, r1, out)
	return true
}

// maxPool3s2BlockedRow runs MaxPool3s2BlockedRow's kernel on the AVX-512
// path and reports whether it did, as avgPool2x2BlockedRow does.
func maxPool3s2BlockedRow(n int, src, out *float32) bool {
	if active != ISAAVX512 {
		return false
	}
	maxPool3s2BlockedRowAVX512(n, src, out)
	return true
}
