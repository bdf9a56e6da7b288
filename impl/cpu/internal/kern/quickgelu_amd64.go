//go:build !purego

package kern

// quickGELUFor returns the QuickGELU kernel of path p, nil on the Go path.
func quickGELUFor(p ISA) func(n int, x, y *float32) {
	switch p {
	case ISAAVX512:
		return quickGELUAVX512
	case ISAAVX2:
		return quickGELUAVX2
	}
	return nil
}
