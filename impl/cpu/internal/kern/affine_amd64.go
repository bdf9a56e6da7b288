//go:build !purego

package kern

var (
	affineAVX512Kernels = affineKernels{affineAVX512, affineSiLUAVX512}
	affineAVX2Kernels   = affineKernels{affineAVX2, affineSiLUAVX2}
)

// affineFor returns the Affine and AffineSiLU kernels of path p, nil on
// the Go path.
func affineFor(p ISA) *affineKernels {
	switch p {
	case ISAAVX512:
		return &affineAVX512Kernels
	case ISAAVX2:
		return &affineAVX2Kernels
	}
	return nil
}
