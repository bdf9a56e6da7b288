package kern

import "math"

// bfloat16 is the upper half of a float32: sign, the same 8-bit exponent,
// 7 fraction bits. The bf16 GEMM (gemm_bf16.go) rounds its inputs to it
// with RoundBF16 and sums the products in float32 the way the AVX512_BF16
// instruction VDPBF16PS does (dpbf16); docs/cpu-bf16.md says what was
// measured and how.

// RoundBF16 returns x rounded to bfloat16: to nearest, ties to even. NaN
// stays NaN (sign and the top fraction bits kept, made quiet so that it
// does not become an infinity), ±Inf stays ±Inf, a value past the largest
// bfloat16 rounds to ±Inf, and a subnormal float32 becomes a zero of its
// sign, as VCVTNE2PS2BF16 does.
func RoundBF16(x float32) uint16 {
	b := math.Float32bits(x)
	switch {
	case b&0x7fffffff > 0x7f800000:
		return uint16(b>>16) | 0x0040
	case b&0x7f800000 == 0:
		return uint16(b>>16) & 0x8000
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BF16ToFloat32 returns the float32 whose upper half is h (exact).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// RoundToBF16 sets dst[i] = BF16ToFloat32(RoundBF16(src[i])): src as the
// bf16 GEMM sees it, in float32 (for tests and tolerance measurements).
func RoundToBF16(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = BF16ToFloat32(RoundBF16(v))
	}
}

// pairBF16 packs x0 and x1, rounded, as VDPBF16PS reads one lane: x0 in
// the low half (the even k), x1 in the high half.
func pairBF16(x0, x1 float32) uint32 { return uint32(RoundBF16(x0)) | uint32(RoundBF16(x1))<<16 }

// packPairs sets dst[p] = pairBF16(src[2p], src[2p+1]) for p < ⌈len(src)/2⌉,
// the missing last value zero.
func packPairs(dst []uint32, src []float32) {
	n := len(src) / 2
	dst = dst[:(len(src)+1)/2]
	src2 := src[:2*n]
	for p := cvtBlocks(dst, src2) / 2; p < n; p++ {
		dst[p] = uint32(RoundBF16(src2[2*p])) | uint32(RoundBF16(src2[2*p+1]))<<16 // pairBF16, inlined
	}
	if len(src)%2 != 0 {
		dst[n] = uint32(RoundBF16(src[2*n]))
	}
}

// packPairsScaled is packPairs of scale·src, each product rounded to
// float32 before it is rounded to bf16:
//
//	for p < ⌈len(src)/2⌉: dst[p] = pairBF16(float32(scale·src[2p]), float32(scale·src[2p+1]))  (the missing last value zero)
func packPairsScaled(dst []uint32, src []float32, scale float32) {
	n := len(src) / 2
	dst = dst[:(len(src)+1)/2]
	src2 := src[:2*n]
	for p := cvtScaledBlocks(dst, src2, scale) / 2; p < n; p++ {
		dst[p] = uint32(RoundBF16(float32(scale*src2[2*p]))) | uint32(RoundBF16(float32(scale*src2[2*p+1])))<<16
	}
	if len(src)%2 != 0 {
		dst[n] = uint32(RoundBF16(float32(scale * src[2*n])))
	}
}

// minNormal32 is the smallest normal float32, 2⁻¹²⁶.
const minNormal32 = 0x1p-126

// dpbf16 is the Go twin of one float32 lane of VDPBF16PS acc, a, b, as
// measured on AMD Zen 4 (TestDPBF16Twin compares it with the instruction
// on every machine that has it): with a = a1:a0 and b = b1:b0 (high:low
// bf16 halves),
//
//	t := acc + a1·b1  // rounded to float32
//	t = t + a0·b0     // rounded to float32
//
// where each product is exact (even below float32's normal range), each
// sum is rounded to nearest even with an unbounded exponent and then, if
// below 2⁻¹²⁶ in magnitude, replaced by a zero of its sign; bf16
// subnormal inputs and a subnormal acc count as zero. The MXCSR plays no
// part. That is the order and the flushing of the SDM's pseudocode
// (high pair first, DAZ, FTZ, round to nearest even).
func dpbf16(acc float32, a, b uint32) float32 {
	acc = flushTiny(acc)
	acc = addProductBF16(acc, uint16(a>>16), uint16(b>>16))
	return addProductBF16(acc, uint16(a), uint16(b))
}

// addProductBF16 returns acc + x·y for bf16 x and y, acc a float32 that
// is not subnormal, rounded as dpbf16 says.
func addProductBF16(acc float32, x, y uint16) float32 {
	fx, fy := bf16DAZ(x), bf16DAZ(y)
	p := float32(fx * fy) // the conversion keeps the compiler from fusing it into the sum
	switch e := math.Float32bits(p) >> 23 & 0xff; {
	case e != 0 && e != 0xff, // normal: the product is exact
		e == 0 && (fx == 0 || fy == 0),              // an exact zero
		e == 0xff && (isSpecial(x) || isSpecial(y)): // Inf or NaN from an Inf or NaN input
		return flushTiny(acc + p)
	}
	// The product left float32's range (below 2⁻¹²⁶ or past its largest
	// value): it is exact in float64.
	return addExact(acc, float64(fx)*float64(fy))
}

// addExact returns acc + p rounded as dpbf16 says, for p exact in float64
// and finite, acc a float32 that is not subnormal.
func addExact(acc float32, p float64) float32 {
	// s = acc + p rounded to odd in float64 (TwoSum gives the error), so
	// that rounding s again to 24 bits is the correct rounding of acc + p.
	a := float64(acc)
	s := a + p
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bb := s - a
	if e := (a - (s - bb)) + (p - bb); e != 0 && math.Float64bits(s)&1 == 0 {
		bits := math.Float64bits(s)
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
		s = math.Float64frombits(bits)
	}
	// Round to 24 significant bits, nearest even, exponent unbounded.
	const drop = 52 - 23
	bits := math.Float64bits(s)
	rem := bits & (1<<drop - 1)
	bits &^= 1<<drop - 1
	if half := uint64(1) << (drop - 1); rem > half || rem == half && bits&(1<<drop) != 0 {
		bits += 1 << drop
	}
	r := math.Float64frombits(bits)
	if math.Abs(r) < minNormal32 {
		return float32(math.Copysign(0, r))
	}
	return float32(r) // exact, or ±Inf past float32's range
}

// bf16DAZ returns h as a float32, a subnormal bf16 as a zero of its sign.
func bf16DAZ(h uint16) float32 {
	if h&0x7f80 == 0 {
		h &= 0x8000
	}
	return BF16ToFloat32(h)
}

// isSpecial reports whether bf16 h is ±Inf or NaN.
func isSpecial(h uint16) bool { return h&0x7f80 == 0x7f80 }

// flushTiny returns x, or a zero of its sign when x is subnormal.
func flushTiny(x float32) float32 {
	if b := math.Float32bits(x); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// PackPairs rounds src to bf16 pairs of neighbouring values,
// dst[p] = bf16(src[2p]) | bf16(src[2p+1])<<16 for p < ⌈len(src)/2⌉ (the
// missing last value zero), to nearest even (RoundBF16): a blocked image
// so rounded is the input of ConvBlockedTileBF16.
func PackPairs(dst []uint32, src []float32) { packPairs(dst, src) }

// BF16OnAMX reports whether the bf16 GEMM runs on AMX tiles (HasAMX, on
// the AVX-512 path, unless SetAMX turned them off).
func BF16OnAMX() bool { return bf16UsesAMX() }
