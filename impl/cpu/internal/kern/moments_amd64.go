//go:build !purego

package kern

// momentsFor returns the Moments sums kernel of path p, nil on the Go
// path.
func momentsFor(p ISA) func(n int, x *float32, shift float32, sums *float64) {
	switch p {
	case ISAAVX512:
		return momentsAVX512
	case ISAAVX2:
		return momentsAVX2
	}
	return nil
}
