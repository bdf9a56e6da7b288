//go:build !purego

package kern

var (
	flashAVX512K = flashKernels{max: flashMaxAVX512, exp: flashExpAVX512}
	flashAVX2K   = flashKernels{max: flashMaxAVX2, exp: flashExpAVX2}
)

// flashFor returns the online-softmax row kernels of path p, nil on the Go
// path.
func flashFor(p ISA) *flashKernels {
	switch p {
	case ISAAVX512:
		return &flashAVX512K
	case ISAAVX2:
		return &flashAVX2K
	}
	return nil
}
