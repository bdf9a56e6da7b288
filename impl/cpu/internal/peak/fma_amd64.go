//go:build !purego

package peak

// simdKernel returns the assembly FMA loop of path p.
func simdKernel(p ISA) (fmaKernel, bool) {
	switch p {
	case ISAAVX512:
		return fmaKernel{isa: p, lanes: 16, chains: 24, run: func(n int, x, y float32, acc []float32) {
			fmaAVX512(n, x, y, (*[384]float32)(acc))
		}}, true
	case ISAAVX2:
		return fmaKernel{isa: p, lanes: 8, chains: 12, run: func(n int, x, y float32, acc []float32) {
			fmaAVX2(n, x, y, (*[96]float32)(acc))
		}}, true
	}
	return fmaKernel{}, false
}
