//go:build !purego

package kern

var (
	gemmAVX512 = microKernel{mr: 12, nr: 32, fn: gemm12x32AVX512, direct: gemmDirect12x32AVX512,
		tails: []rowsKernel[packedFn]{{4, gemm4x32AVX512}, {8, gemm8x32AVX512}},
		short: []shortKernel{{9, gemm9x32AVX512, gemmDirect9x32AVX512}, {10, gemm10x32AVX512, gemmDirect10x32AVX512},
			{11, gemm11x32AVX512, gemmDirect11x32AVX512}}}
	gemmAVX2 = microKernel{mr: 6, nr: 16, fn: gemm6x16AVX2, direct: gemmDirect6x16AVX2, directAll: true}
)

// microKernelFor returns the packed-GEMM kernel of path p.
func microKernelFor(p ISA) (microKernel, bool) {
	switch p {
	case ISAAVX512:
		return gemmAVX512, true
	case ISAAVX2:
		return gemmAVX2, true
	}
	return microKernel{}, false
}

// tapsKernelFor returns the in-place-B microkernel of path p.
func tapsKernelFor(p ISA) (tapsKernel, bool) {
	switch p {
	case ISAAVX512:
		return tapsKernel{mr: 12, nr: 32, fn: gemmTaps12x32AVX512,
			tails: []rowsKernel[tapsFn]{{4, gemmTaps4x32AVX512}, {8, gemmTaps8x32AVX512}}}, true
	case ISAAVX2:
		return tapsKernel{mr: 6, nr: 16, fn: gemmTaps6x16AVX2}, true
	}
	return tapsKernel{}, false
}
