//go:build !purego

package kern

// convBlockedKernel is the signature of the SIMD tiles of ConvBlockedTile
// (strides in bytes; bias and res nil unless their flags are set).
type convBlockedKernel func(x *float32, taps *int, ntaps, cib, xBlock, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int)

// convBlockedAVX512 holds the generated tiles of ConvBlockedTile,
// [nb-1][np-1] computing nb blocks of 16 output channels at np pixels.
var convBlockedAVX512 = [ConvBlockedMaxBlocks][ConvBlockedMaxPixels]convBlockedKernel{
	{convBlocked1x1AVX512, convBlocked1x2AVX512, convBlocked1x3AVX512, convBlocked1x4AVX512, convBlocked1x5AVX512, convBlocked1x6AVX512},
	{convBlocked2x1AVX512, convBlocked2x2AVX512, convBlocked2x3AVX512, convBlocked2x4AVX512, convBlocked2x5AVX512, convBlocked2x6AVX512},
	{convBlocked3x1AVX512, convBlocked3x2AVX512, convBlocked3x3AVX512, convBlocked3x4AVX512, convBlocked3x5AVX512, convBlocked3x6AVX512},
	{convBlocked4x1AVX512, convBlocked4x2AVX512, convBlocked4x3AVX512, convBlocked4x4AVX512, convBlocked4x5AVX512, convBlocked4x6AVX512},
}

// convBlockedFor returns the tiles of ConvBlockedTile on path p: the
// AVX-512 kernels, nil (the Go twin) on every other path.
func convBlockedFor(p ISA) *[ConvBlockedMaxBlocks][ConvBlockedMaxPixels]convBlockedKernel {
	if p == ISAAVX512 {
		return &convBlockedAVX512
	}
	return nil
}
