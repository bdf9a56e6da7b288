//go:build !purego

package kern

var (
	geluAVX512K = geluKernels{gelu: geluAVX512, erf: erfAVX512}
	geluAVX2K   = geluKernels{gelu: geluAVX2, erf: erfAVX2}
)

// geluFor returns the GELU kernels of path p, nil on the Go path.
func geluFor(p ISA) *geluKernels {
	switch p {
	case ISAAVX512:
		return &geluAVX512K
	case ISAAVX2:
		return &geluAVX2K
	}
	return nil
}
