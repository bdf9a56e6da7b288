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

// gatherHeadsFor returns the WeightedRowsHeads kernel of path p for rows
// of d values: one to four whole vectors; nil otherwise and on the Go path.
func gatherHeadsFor(p ISA, d int) weightedRowsHeadsKernel {
	var ks [4]weightedRowsHeadsKernel
	lanes := 16
	switch p {
	case ISAAVX512:
		ks = [4]weightedRowsHeadsKernel{weightedRowsHeads1AVX512, weightedRowsHeads2AVX512, weightedRowsHeads3AVX512, weightedRowsHeads4AVX512}
	case ISAAVX2:
		ks, lanes = [4]weightedRowsHeadsKernel{weightedRowsHeads1AVX2, weightedRowsHeads2AVX2, weightedRowsHeads3AVX2, weightedRowsHeads4AVX2}, 8
	default:
		return nil
	}
	if d%lanes != 0 || d/lanes > 4 {
		return nil
	}
	return ks[d/lanes-1]
}
