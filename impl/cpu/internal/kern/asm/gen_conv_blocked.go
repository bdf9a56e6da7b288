package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The flags of ConvBlockedTile (conv_blocked.go).
const (
	convAccumulate = 1 << iota // start from out's values instead of zero
	convBias                   // add bias
	convResidual               // then add res
	convReLU                   // then clamp at zero
)

// blockLanes is the channels of one block of the NCHW16c layout, the
// lanes of a zmm register.
const blockLanes = 16

// tileKind is which tile convBlocked emits: the float32 or bf16 tile of
// ConvBlockedTile / ConvBlockedTileBF16 on an NCHW16c image, or the
// float32 tile of ConvNCHWTile on an NCHW image.
type tileKind int

const (
	tileBlocked tileKind = iota
	tileBlockedBF16
	tileNCHW
)

// maxTilePixels is the most pixels of a tile of nb output blocks
// (ConvTilePixels): 24 accumulators, so 12 for one or two blocks, 6 for
// three or four; the bf16 tiles stop at 6.
func maxTilePixels(nb int, kind tileKind) int {
	if nb <= 2 && kind != tileBlockedBF16 {
		return 12
	}
	return 6
}

// convBlockedKernels emits the tiles of ConvBlockedTile
// (convBlocked{nb}x{np}AVX512 for nb ≤ 4 output channel blocks and np ≤
// maxTilePixels(nb) pixels), those of ConvBlockedTileBF16
// (convBlockedBF16{nb}x{np}AVX512, np ≤ 6) and of ConvNCHWTile
// (convNCHW{nb}x{np}AVX512), and the 2×2 average pool over NCHW16c rows.
func convBlockedKernels(zmm []VecPhysical) {
	for _, kind := range []tileKind{tileBlocked, tileBlockedBF16, tileNCHW} {
		for nb := 1; nb <= 4; nb++ {
			for np := 1; np <= maxTilePixels(nb, kind); np++ {
				convBlocked(nb, np, kind, zmm)
			}
		}
	}
	avgPool2x2Blocked()
	maxPool3s2Blocked()
}

// convBlocked emits
//
//	func convBlocked{nb}x{np}AVX512(x *float32, taps *int, ntaps, cib, xBlock, pixStride int,
//	    w, bias, res, out *float32, outStride, outPix, flags int, pf *float32, pfStep int)
//
// the tile of ConvBlockedTile of nb blocks of 16 output channels at np
// pixels, in its plain loop's order (each multiply-add fused):
//
//	for t < ntaps: for cb < cib: for c < 16: for j < nb: for p < np: for l < 16:
//	    acc[j][p][l] += x[taps[2t] + cb·xBlock + p·pixStride + c] ·
//	                    w[taps[2t+1] + (cb·16 + c)·nb·16 + j·16 + l]
//	then, at o = j·outStride + p·outPix + l:
//	    v = acc[j][p][l]    (starting from out[o] with convAccumulate, else 0)
//	    v += bias[j·16 + l] (convBias); v += res[o] (convResidual); v = max(v, 0) (convReLU)
//	    out[o] = v
//
// with the tap offsets in floats and xBlock, pixStride, outStride and
// outPix in bytes. The nb·np accumulators, the nb weight vectors of one input
// channel and one broadcast stay in registers (4×6 and 2×12: 29 and 27 of
// the 32); each channel c loads its nb weight vectors, then per pixel
// broadcasts x from memory and issues nb FMAs. The 16 channels of a block
// are unrolled; the pixels' addresses are one base per three pixels
// (pixels 0-2, 3-5, 6-8, 9-11) plus 0, 1 or 2 pixel strides in the
// addressing mode, so the loops multiply nothing.
// The flags are tested once, before and after the loops. A tile of four
// to six pixels prefetches the first six lines from its pixel np (the
// next tile's) in each block, one per channel step, a tile of seven to
// twelve the first twelve: the image comes from
// memory in a network, and the hardware prefetchers do not run ahead of
// the sixteen or more planes a tile reads at once (clip_rn50 1.06× at
// batch 1 and 8, detr_r50_small_b2 1.02-1.03×, six rounds; two tiles
// ahead ran the same, prefetching the residual and output did nothing).
// Each channel step also prefetches one line of pf into L2 (pf + 64·c),
// and pf moves on by pfStep bytes per input block: the caller points it
// at the weight it reads next, which comes from memory in a network. (A
// line per weight vector, nb per step, ran 3-6% slower on the 512-channel
// convolutions of clip_rn50: the extra loads cost the warm tiles more
// than the prefetch saved.)
//
// With tileBlockedBF16 it emits convBlockedBF16{nb}x{np}AVX512, the tile of
// ConvBlockedTileBF16, of the same signature without the prefetch (not
// measured on a CPU that runs it) and x and w of bf16 pairs:
// a block's pixel holds 8 pairs of neighbouring channels (32 bytes), a
// weight row per pair 16 lanes × 2 channels, so each step is one pair and
// one VDPBF16PS per accumulator, 8 steps per block; the tap offsets stay
// those of the float32 layout (halved here: shifted by one, not two) and
// the byte strides are the pair image's.
//
// With tileNCHW it emits convNCHW{nb}x{np}AVX512, the tile of
// ConvNCHWTile, whose image is NCHW: an input "block" is one channel
// (cib input channels, xBlock bytes apart: a channel plane), so each
// block is a single step of nb weight vectors and np broadcasts, and the
// weight moves on by one row of nb·16 lanes per channel; no prefetch.
func convBlocked(nb, np int, kind tileKind, zmm []VecPhysical) {
	name := fmt.Sprintf("convBlocked%dx%dAVX512", nb, np)
	sig := "func(x *float32, taps *int, ntaps, cib, xBlock, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int, pf *float32, pfStep int)"
	steps, shift := blockLanes, uint64(2) // input channels (or pairs) per block; log2 bytes per float offset
	bf16, prefetch := kind == tileBlockedBF16, kind == tileBlocked
	switch kind {
	case tileBlockedBF16:
		name = fmt.Sprintf("convBlockedBF16%dx%dAVX512", nb, np)
		sig = "func(x *uint32, taps *int, ntaps, cib, xBlock, pixStride int, w *uint32, bias, res, out *float32, outStride, outPix, flags int)"
		steps, shift = blockLanes/2, 1
	case tileNCHW:
		name = fmt.Sprintf("convNCHW%dx%dAVX512", nb, np)
		sig = "func(x *float32, taps *int, ntaps, cib, xBlock, pixStride int, w, bias, res, out *float32, outStride, outPix, flags int)"
		steps = 1
	}
	text(name, NOSPLIT, sig)
	Pragma("noescape")
	switch kind {
	case tileBlockedBF16:
		Doc(fmt.Sprintf("%s computes ConvBlockedTileBF16's tile of %d blocks × %d pixels: for j < %d, p < %d, l < 16, "+
			"acc chains dpbf16 over t < ntaps, cb < cib, q < 8 of the pairs x[(taps[2t] + cb·xBlock + p·pixStride)/2 + q] and "+
			"w[(taps[2t+1] + (cb·16)·%d)/2 + q·%d + j·16 + l] (from out[o] when flags&1, else from 0), then at o = j·outStride + p·outPix + l "+
			"out[o] = relu((acc + bias[j·16+l]) + res[o]), bias when flags&2, res when flags&4, relu (max(v, 0), NaN kept) when flags&8. "+
			"The taps are in floats of the float32 layout, xBlock and pixStride in bytes of the pairs, outStride and outPix in bytes.",
			name, nb, np, nb, np, nb*blockLanes, nb*blockLanes))
	case tileNCHW:
		Doc(fmt.Sprintf("%s computes ConvNCHWTile's tile of %d blocks × %d pixels: for j < %d, p < %d, l < 16, "+
			"acc = Σ_{t<ntaps} Σ_{ch<cib} x[taps[2t] + ch·xBlock + p·pixStride]·w[taps[2t+1] + ch·%d + j·16 + l] "+
			"(fused, in that order, from out[o] when flags&1, else from 0), then at o = j·outStride + p·outPix + l "+
			"out[o] = relu((acc + bias[j·16+l]) + res[o]), bias when flags&2, res when flags&4, relu (max(v, 0), NaN kept) when flags&8. "+
			"The taps are in floats, xBlock, pixStride, outStride and outPix in bytes.",
			name, nb, np, nb, np, nb*blockLanes))
	default:
		Doc(fmt.Sprintf("%s computes ConvBlockedTile's tile of %d blocks × %d pixels: for j < %d, p < %d, l < 16, "+
			"acc = Σ_{t<ntaps} Σ_{cb<cib} Σ_{c<16} x[taps[2t] + cb·xBlock + p·pixStride + c]·w[taps[2t+1] + (cb·16+c)·%d + j·16 + l] "+
			"(fused, in that order, from out[o] when flags&1, else from 0), then at o = j·outStride + p·outPix + l "+
			"out[o] = relu((acc + bias[j·16+l]) + res[o]), bias when flags&2, res when flags&4, relu (max(v, 0), NaN kept) when flags&8. "+
			"The taps are in floats, xBlock, pixStride, outStride and outPix in bytes. "+
			"Each input block's step c also prefetches the line pf + 64·c into L2, and pf moves on by pfStep bytes per input block.",
			name, nb, np, nb, np, nb*blockLanes))
	}
	acc := zmm[:nb*np] // acc[j·np + p]
	wv := zmm[nb*np : nb*np+nb]
	bc := zmm[nb*np+nb]
	a := func(j, p int) VecPhysical { return acc[j*np+p] }

	Comment("acc = out with ConvAccumulate, else 0")
	flags := Load(Param("flags"), GP64())
	TESTQ(U32(convAccumulate), flags)
	JNZ(LabelRef(name + "_load"))
	for _, v := range acc {
		VPXORD(v, v, v)
	}
	JMP(LabelRef(name + "_loops"))
	Label(name + "_load")
	tileRows(nb, np, Load(Param("out"), GP64()), Load(Param("outStride"), GP64()), Load(Param("outPix"), GP64()),
		func(m Mem, j, p int) { VMOVUPS(m, a(j, p)) })

	Label(name + "_loops")
	pt := Load(Param("taps"), GP64())
	nt := Load(Param("ntaps"), GP64())
	xBlock := Load(Param("xBlock"), GP64())
	ps := Load(Param("pixStride"), GP64())
	var ps3 Register
	if np > 3 {
		ps3 = GP64()
		LEAQ(Mem{Base: ps, Index: ps, Scale: 2}, ps3)
	}
	xp, wp, cb := GP64(), GP64(), GP64()
	var pf, pfStep Register // the float32 blocked tiles' prefetch
	if prefetch {
		pf, pfStep = Load(Param("pf"), GP64()), Load(Param("pfStep"), GP64())
	}
	// xb[k] is x of pixel 3k: xb[0] is xp, the others follow it by ps3.
	xb := []Register{xp}
	for k := 1; 3*k < np; k++ {
		xb = append(xb, GP64())
	}
	// pix is x of pixel p, d bytes on: xb[p/3] plus p%3 pixel strides.
	pix := func(p, d int) Mem {
		m := Mem{Base: xb[p/3], Disp: d}
		if p%3 > 0 {
			m.Index, m.Scale = ps, uint8(p%3)
		}
		return m
	}

	Label(name + "_tap")
	Comment("xp = x + 4·taps[2t], wp = w + 4·taps[2t+1]")
	MOVQ(Mem{Base: pt}, xp)
	SHLQ(Imm(shift), xp)
	xArg, err := Param("x").Resolve()
	if err != nil {
		panic(err)
	}
	ADDQ(xArg.Addr, xp)
	MOVQ(Mem{Base: pt, Disp: 8}, wp)
	SHLQ(Imm(shift), wp)
	wArg, err := Param("w").Resolve()
	if err != nil {
		panic(err)
	}
	ADDQ(wArg.Addr, wp)
	Load(Param("cib"), cb)

	Label(name + "_cb")
	for k := 1; k < len(xb); k++ {
		LEAQ(Mem{Base: xb[k-1], Index: ps3, Scale: 1}, xb[k])
	}
	// The next tile's lines: from pixel np, xb[(np-1)/3] plus 1-3 strides.
	lines := 6
	if np > 6 {
		lines = 12
	}
	var next Mem
	if np >= 4 {
		next = Mem{Base: xb[(np-1)/3], Index: ps3, Scale: 1}
		if r := np - 3*((np-1)/3); r < 3 {
			next.Index, next.Scale = ps, uint8(r)
		}
	}
	for c := 0; c < steps; c++ {
		what := "channel"
		if bf16 {
			what = "pair"
		}
		Comment(fmt.Sprintf("%s %d: acc[j][p] += broadcast(x[p·pixStride + %d]) · w[(%d·%d + j)·16 : …]", what, c, c, c, nb))
		for j := 0; j < nb; j++ {
			VMOVUPS(Mem{Base: wp, Disp: (c*nb + j) * 64}, wv[j])
		}
		if prefetch {
			PREFETCHT1(Mem{Base: pf, Disp: 64 * c}) // the weight the caller reads next
		}
		if np >= 4 && c < lines*steps/blockLanes { // line c of the next tile, from pixel np
			m := next
			m.Disp = 64 * c
			PREFETCHT0(m)
		}
		for p := 0; p < np; p++ {
			VBROADCASTSS(pix(p, 4*c), bc)
			for j := 0; j < nb; j++ {
				if bf16 {
					vdpbf16ps(a(j, p), wv[j], bc)
				} else {
					VFMADD231PS(wv[j], bc, a(j, p))
				}
			}
		}
	}
	ADDQ(xBlock, xp)
	ADDQ(addImm(steps*nb*blockLanes*4), wp)
	if prefetch {
		ADDQ(pfStep, pf)
	}
	DECQ(cb)
	JNZ(LabelRef(name + "_cb"))
	ADDQ(U8(16), pt)
	DECQ(nt)
	JNZ(LabelRef(name + "_tap"))

	// Each step rounds once, in the plain loop's order: the bias, then
	// the residual, then the clamp.
	flags = Load(Param("flags"), GP64())
	TESTQ(U32(convBias), flags)
	JZ(LabelRef(name + "_res"))
	Comment("acc[j][p] += bias[j·16 : …]")
	pb := Load(Param("bias"), GP64())
	for j := 0; j < nb; j++ {
		VMOVUPS(Mem{Base: pb, Disp: j * 64}, wv[j])
	}
	for j := 0; j < nb; j++ {
		for p := 0; p < np; p++ {
			VADDPS(wv[j], a(j, p), a(j, p))
		}
	}
	Label(name + "_res")
	TESTQ(U32(convResidual), flags)
	JZ(LabelRef(name + "_relu"))
	Comment("acc[j][p] += res[j·outStride + p·outPix : …]")
	tileRows(nb, np, Load(Param("res"), GP64()), Load(Param("outStride"), GP64()), Load(Param("outPix"), GP64()),
		func(m Mem, j, p int) { VADDPS(m, a(j, p), a(j, p)) })
	Label(name + "_relu")
	TESTQ(U32(convReLU), flags)
	JZ(LabelRef(name + "_store"))
	Comment("acc = max(0, acc), acc kept when NaN")
	VPXORD(bc, bc, bc)
	for _, v := range acc {
		VMAXPS(v, bc, v)
	}
	Label(name + "_store")
	Comment("out[j·outStride + p·outPix : …] = acc[j][p]")
	tileRows(nb, np, Load(Param("out"), GP64()), Load(Param("outStride"), GP64()), Load(Param("outPix"), GP64()),
		func(m Mem, j, p int) { VMOVUPS(a(j, p), m) })
	VZEROUPPER()
	RET()
}

// tileRows emits f(m, j, p) for j < nb, p < np with m the vector at
// base + j·stride + p·pix bytes: pixels 3k to 3k+2 of a block from a
// pointer 3k pixels on (base itself for k = 0), with 0, 1 or 2 pix in
// the addressing mode; base walks by stride per block (base is consumed).
func tileRows(nb, np int, base, stride, pix Register, f func(m Mem, j, p int)) {
	var pix3 Register
	bases := []Register{base}
	if np > 3 {
		for k := 1; 3*k < np; k++ {
			bases = append(bases, GP64())
		}
		pix3 = GP64()
		LEAQ(Mem{Base: pix, Index: pix, Scale: 2}, pix3)
	}
	for j := 0; j < nb; j++ {
		for k := 1; k < len(bases); k++ {
			LEAQ(Mem{Base: bases[k-1], Index: pix3, Scale: 1}, bases[k])
		}
		for p := 0; p < np; p++ {
			m := Mem{Base: bases[p/3]}
			if p%3 > 0 {
				m.Index, m.Scale = pix, uint8(p%3)
			}
			f(m, j, p)
		}
		if j < nb-1 {
			ADDQ(stride, base)
		}
	}
}

// avgPool2x2Blocked emits
//
//	func avgPool2x2BlockedRowAVX512(n int, r0, r1, out *float32)
//
// one output row of a 2×2 average pool of stride 2 over NCHW16c rows (a
// pixel is a vector of 16 channels), summed in avgPool2x2Row's order:
//
//	for j < n, l < 16:
//	    out[j·16+l] = (((r0[2j·16+l] + r0[(2j+1)·16+l]) + r1[2j·16+l]) + r1[(2j+1)·16+l]) · 0.25
//
// four pixels per iteration, then one at a time (pixelLoop; multiplying
// by 0.25 is dividing by 4 exactly). n must be positive.
func avgPool2x2Blocked() {
	name := "avgPool2x2BlockedRowAVX512"
	text(name, NOSPLIT, "func(n int, r0, r1, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[j·16+l] = (((r0[2j·16+l] + r0[(2j+1)·16+l]) + r1[2j·16+l]) + r1[(2j+1)·16+l]) · 0.25 for j < n, l < 16.")
	Load(Param("n"), RCX)
	Load(Param("r0"), RSI)
	Load(Param("r1"), RDX)
	Load(Param("out"), RDI)
	quarter := Z8
	MOVL(U32(0x3e800000), EAX) // 0.25
	VMOVD(EAX, X8)
	VBROADCASTSS(X8, quarter)
	const unroll = 4
	v := []VecPhysical{Z0, Z1, Z2, Z3}
	body := func(u int) {
		for i := 0; i < u; i++ {
			VMOVUPS(Mem{Base: RSI, Disp: 128 * i}, v[i])
			VADDPS(Mem{Base: RSI, Disp: 128*i + 64}, v[i], v[i])
		}
		for i := 0; i < u; i++ {
			VADDPS(Mem{Base: RDX, Disp: 128 * i}, v[i], v[i])
		}
		for i := 0; i < u; i++ {
			VADDPS(Mem{Base: RDX, Disp: 128*i + 64}, v[i], v[i])
		}
		for i := 0; i < u; i++ {
			VMULPS(quarter, v[i], v[i])
			VMOVUPS(v[i], Mem{Base: RDI, Disp: 64 * i})
		}
		ADDQ(U32(uint32(128*u)), RSI)
		ADDQ(U32(uint32(128*u)), RDX)
		ADDQ(U32(uint32(64*u)), RDI)
	}
	pixelLoop(name, unroll, body)
	VZEROUPPER()
	RET()
}

// maxPool3s2Blocked emits
//
//	func maxPool3s2BlockedRowAVX512(n int, src, out *float32)
//
// the horizontal pass of a 3-wide max pool of stride 2 over one NCHW16c
// row (a pixel is a vector of 16 channels), compared in the plain loop's
// order, each step as kern.Max (y when y > x or y is NaN, else x):
//
//	for j < n, l < 16:
//	    out[j·16+l] = max(max(src[2j·16+l], src[(2j+1)·16+l]), src[(2j+2)·16+l])
//
// four pixels per iteration, then one at a time (pixelLoop). n must be
// positive.
func maxPool3s2Blocked() {
	name := "maxPool3s2BlockedRowAVX512"
	text(name, NOSPLIT, "func(n int, src, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[j·16+l] = max(max(src[2j·16+l], src[(2j+1)·16+l]), src[(2j+2)·16+l]) for j < n, l < 16, " +
		"each max(x, y) y when y > x or y is NaN, else x.")
	Load(Param("n"), RCX)
	Load(Param("src"), RSI)
	Load(Param("out"), RDI)
	// maxInto sets acc = y when y > acc or y is NaN, else acc.
	maxInto := func(acc, y VecPhysical, k Register) {
		VMAXPS(acc, y, acc)
		VCMPPS(Imm(3), y, y, k) // unordered: y is NaN
		VMOVAPS(y, k, acc)
	}
	const unroll = 4
	acc := []VecPhysical{Z0, Z1, Z2, Z3}
	y := []VecPhysical{Z4, Z5, Z6, Z7}
	body := func(u int) {
		for i := 0; i < u; i++ {
			VMOVUPS(Mem{Base: RSI, Disp: 128 * i}, acc[i])
			VMOVUPS(Mem{Base: RSI, Disp: 128*i + 64}, y[i])
			maxInto(acc[i], y[i], K2)
			VMOVUPS(Mem{Base: RSI, Disp: 128*i + 128}, y[i])
			maxInto(acc[i], y[i], K2)
			VMOVUPS(acc[i], Mem{Base: RDI, Disp: 64 * i})
		}
		ADDQ(U32(uint32(128*u)), RSI)
		ADDQ(U32(uint32(64*u)), RDI)
	}
	pixelLoop(name, unroll, body)
	VZEROUPPER()
	RET()
}
