//go:build !purego

package kern

// gatherFor returns the WeightedRows kernel of path p, nil on the Go path.
func gatherFor(p ISA) weightedRowsKernel {
	switch p {
	case ISAAVX512:
		return weightedRowsAVX512
	case ISAAVX2:
		return weightedRowsAVX2
	}
	return nil
}
