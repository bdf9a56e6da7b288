//go:build purego || !amd64

package kern

// convBlockedKernel is the signature of the SIMD tiles of ConvBlockedTile
// (strides in bytes; bias and res nil unless their flags are set).
type convBlockedKernel func(x *float32, taps *int, ntaps, cib, xBlock, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int, pf *float32, pfStep int)

func convBlockedFor(ISA) *[ConvBlockedMaxBlocks][ConvTileMaxPixels]convBlockedKernel { return nil }

// convBlockedBF16Kernel is the signature of the SIMD tiles of
// ConvBlockedTileBF16 (strides in bytes of the pairs and of out).
type convBlockedBF16Kernel func(x *uint32, taps *int, ntaps, cib, xBlock, pixStride int, w *uint32, bias, res, out *float32, outStride, outPix, flags int)

func convBlockedBF16For(ISA) *[ConvBlockedMaxBlocks][ConvBlockedMaxPixels]convBlockedBF16Kernel {
	return nil
}

// convNCHWKernel is the signature of the SIMD tiles of ConvNCHWTile
// (strides in bytes; bias and res nil unless their flags are set).
type convNCHWKernel func(x *float32, taps *int, ntaps, cin, chanStride, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int)

func convNCHWFor(ISA) *[ConvBlockedMaxBlocks][ConvTileMaxPixels]convNCHWKernel { return nil }
