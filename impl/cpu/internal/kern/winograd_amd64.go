//go:build !purego

package kern

var (
	winogradAVX512 = winogradKernels{input: winogradInputAVX512, output: winogradOutputAVX512, deinterleave: deinterleaveAVX512, interleave: interleaveAVX512,
		avgPool2x2: avgPool2x2RowAVX512, avgPoolHalf: avgPool2x2RowAVX2}
	winogradAVX2 = winogradKernels{input: winogradInputAVX2, output: winogradOutputAVX2, deinterleave: deinterleaveAVX2, interleave: interleaveAVX2,
		avgPool2x2: avgPool2x2RowAVX2}
)

// winogradFor returns the Winograd kernels of path p, nil on the Go path.
func winogradFor(p ISA) *winogradKernels {
	switch p {
	case ISAAVX512:
		return &winogradAVX512
	case ISAAVX2:
		return &winogradAVX2
	}
	return nil
}
