//go:build !purego

package kern

// siluFor returns the SiLU kernel of path p, nil on the Go path.
func siluFor(p ISA) func(n int, x, y *float32) {
	switch p {
	case ISAAVX512:
		return siluAVX512
	case ISAAVX2:
		return siluAVX2
	}
	return nil
}
