//go:build !purego

package kern

var (
	softmaxAVX512K = softmaxKernels{row: softmaxRowAVX512, rows2: softmaxRows2AVX512,
		expRow: softmaxExpRowAVX512, expRows2: softmaxExpRows2AVX512, exp: expAVX512}
	softmaxAVX2K = softmaxKernels{row: softmaxRowAVX2, rows2: softmaxRows2AVX2,
		expRow: softmaxExpRowAVX2, expRows2: softmaxExpRows2AVX2, exp: expAVX2}
)

// softmaxFor returns the softmax kernels of path p, nil on the Go path.
func softmaxFor(p ISA) *softmaxKernels {
	switch p {
	case ISAAVX512:
		return &softmaxAVX512K
	case ISAAVX2:
		return &softmaxAVX2K
	}
	return nil
}
