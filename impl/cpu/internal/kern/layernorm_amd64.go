//go:build !purego

package kern

// layerNormFor returns the LayerNorm row kernel of path p, nil on the Go
// path.
func layerNormFor(p ISA) func(n int, x, gamma, beta, y *float32, eps float32) {
	switch p {
	case ISAAVX512:
		return layerNormRowAVX512
	case ISAAVX2:
		return layerNormRowAVX2
	}
	return nil
}
