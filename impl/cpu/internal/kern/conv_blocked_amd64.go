//go:build !purego

package kern

// convBlockedKernel is the signature of the SIMD tiles of ConvBlockedTile
// (strides in bytes; bias and res nil unless their flags are set; pf the
// line the first input block prefetches, pfStep its step in bytes).
type convBlockedKernel func(x *float32, taps *int, ntaps, cib, xBlock, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int, pf *float32, pfStep int)

// convBlockedAVX512 holds the generated tiles of ConvBlockedTile,
// [nb-1][np-1] computing nb blocks of 16 output channels at np pixels
// (np ≤ ConvTilePixels(nb); nil past it).
var convBlockedAVX512 = [ConvBlockedMaxBlocks][ConvTileMaxPixels]convBlockedKernel{
	{convBlocked1x1AVX512, convBlocked1x2AVX512, convBlocked1x3AVX512, convBlocked1x4AVX512, convBlocked1x5AVX512, convBlocked1x6AVX512, convBlocked1x7AVX512, convBlocked1x8AVX512, convBlocked1x9AVX512, convBlocked1x10AVX512, convBlocked1x11AVX512, convBlocked1x12AVX512},
	{convBlocked2x1AVX512, convBlocked2x2AVX512, convBlocked2x3AVX512, convBlocked2x4AVX512, convBlocked2x5AVX512, convBlocked2x6AVX512, convBlocked2x7AVX512, convBlocked2x8AVX512, convBlocked2x9AVX512, convBlocked2x10AVX512, convBlocked2x11AVX512, convBlocked2x12AVX512},
	{convBlocked3x1AVX512, convBlocked3x2AVX512, convBlocked3x3AVX512, convBlocked3x4AVX512, convBlocked3x5AVX512, convBlocked3x6AVX512},
	{convBlocked4x1AVX512, convBlocked4x2AVX512, convBlocked4x3AVX512, convBlocked4x4AVX512, convBlocked4x5AVX512, convBlocked4x6AVX512},
}

// convBlockedFor returns the tiles of ConvBlockedTile on path p: the
// AVX-512 kernels, nil (the Go twin) on every other path.
func convBlockedFor(p ISA) *[ConvBlockedMaxBlocks][ConvTileMaxPixels]convBlockedKernel {
	if p == ISAAVX512 {
		return &convBlockedAVX512
	}
	return nil
}

// convBlockedBF16Kernel is the signature of the SIMD tiles of
// ConvBlockedTileBF16 (strides in bytes of the pairs and of out).
type convBlockedBF16Kernel func(x *uint32, taps *int, ntaps, cib, xBlock, pixStride int, w *uint32, bias, res, out *float32, outStride, outPix, flags int)

// convBlockedBF16AVX512 holds the generated tiles of ConvBlockedTileBF16,
// [nb-1][np-1] as convBlockedAVX512's.
var convBlockedBF16AVX512 = [ConvBlockedMaxBlocks][ConvBlockedMaxPixels]convBlockedBF16Kernel{
	{convBlockedBF161x1AVX512, convBlockedBF161x2AVX512, convBlockedBF161x3AVX512, convBlockedBF161x4AVX512, convBlockedBF161x5AVX512, convBlockedBF161x6AVX512},
	{convBlockedBF162x1AVX512, convBlockedBF162x2AVX512, convBlockedBF162x3AVX512, convBlockedBF162x4AVX512, convBlockedBF162x5AVX512, convBlockedBF162x6AVX512},
	{convBlockedBF163x1AVX512, convBlockedBF163x2AVX512, convBlockedBF163x3AVX512, convBlockedBF163x4AVX512, convBlockedBF163x5AVX512, convBlockedBF163x6AVX512},
	{convBlockedBF164x1AVX512, convBlockedBF164x2AVX512, convBlockedBF164x3AVX512, convBlockedBF164x4AVX512, convBlockedBF164x5AVX512, convBlockedBF164x6AVX512},
}

// convBlockedBF16For returns the tiles of ConvBlockedTileBF16 on path p:
// the AVX-512 kernels on a CPU with AVX512_BF16, nil (the Go twin)
// elsewhere.
func convBlockedBF16For(p ISA) *[ConvBlockedMaxBlocks][ConvBlockedMaxPixels]convBlockedBF16Kernel {
	if p == ISAAVX512 && HasBF16() {
		return &convBlockedBF16AVX512
	}
	return nil
}

// convNCHWKernel is the signature of the SIMD tiles of ConvNCHWTile
// (strides in bytes; bias and res nil unless their flags are set).
type convNCHWKernel func(x *float32, taps *int, ntaps, cin, chanStride, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int)

// convNCHWAVX512 holds the generated tiles of ConvNCHWTile, [nb-1][np-1]
// as convBlockedAVX512's.
var convNCHWAVX512 = [ConvBlockedMaxBlocks][ConvTileMaxPixels]convNCHWKernel{
	{convNCHW1x1AVX512, convNCHW1x2AVX512, convNCHW1x3AVX512, convNCHW1x4AVX512, convNCHW1x5AVX512, convNCHW1x6AVX512, convNCHW1x7AVX512, convNCHW1x8AVX512, convNCHW1x9AVX512, convNCHW1x10AVX512, convNCHW1x11AVX512, convNCHW1x12AVX512},
	{convNCHW2x1AVX512, convNCHW2x2AVX512, convNCHW2x3AVX512, convNCHW2x4AVX512, convNCHW2x5AVX512, convNCHW2x6AVX512, convNCHW2x7AVX512, convNCHW2x8AVX512, convNCHW2x9AVX512, convNCHW2x10AVX512, convNCHW2x11AVX512, convNCHW2x12AVX512},
	{convNCHW3x1AVX512, convNCHW3x2AVX512, convNCHW3x3AVX512, convNCHW3x4AVX512, convNCHW3x5AVX512, convNCHW3x6AVX512},
	{convNCHW4x1AVX512, convNCHW4x2AVX512, convNCHW4x3AVX512, convNCHW4x4AVX512, convNCHW4x5AVX512, convNCHW4x6AVX512},
}

// convNCHWFor returns the tiles of ConvNCHWTile on path p: the AVX-512
// kernels, nil (the Go twin) on every other path.
func convNCHWFor(p ISA) *[ConvBlockedMaxBlocks][ConvTileMaxPixels]convNCHWKernel {
	if p == ISAAVX512 {
		return &convNCHWAVX512
	}
	return nil
}
