package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// transposeStrip emits
//
//	func transposeStripAVX2(blocks int, src *float32, lds int, dst *float32, ldd int)
//
// which transposes an 8-row strip of src, 8 columns at a time:
//
//	for j < 8·blocks, r < 8: dst[j·ldd + r] = src[r·lds + j]
//
// (lds and ldd in elements). Each 8×8 block is loaded as eight row
// vectors, transposed in registers (unpack, shuffle, 128-bit permute) and
// stored as eight column vectors. AVX2 encodings only, so the AVX-512
// path uses it too.
func transposeStrip() {
	name := "transposeStripAVX2"
	text(name, NOSPLIT, "func(blocks int, src *float32, lds int, dst *float32, ldd int)")
	Pragma("noescape")
	Doc(name + " sets dst[j·ldd + r] = src[r·lds + j] for r < 8, j < 8·blocks.")
	Load(Param("blocks"), RCX)
	Load(Param("src"), RSI)
	Load(Param("lds"), RAX)
	Load(Param("dst"), RDI)
	Load(Param("ldd"), RDX)
	SHLQ(U8(2), RAX) // bytes
	SHLQ(U8(2), RDX)
	r := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}
	t := []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	Label(name + "_loop")
	TESTQ(RCX, RCX)
	JZ(LabelRef(name + "_done"))
	Comment("load rows 0..7 of the block")
	MOVQ(RSI, R8)
	for i := 0; i < 8; i++ {
		VMOVUPS(Mem{Base: R8}, r[i])
		if i < 7 {
			ADDQ(RAX, R8)
		}
	}
	Comment("interleave pairs of rows")
	for i := 0; i < 8; i += 2 {
		VUNPCKLPS(r[i+1], r[i], t[i])
		VUNPCKHPS(r[i+1], r[i], t[i+1])
	}
	Comment("gather 4-element columns within each 128-bit lane")
	for _, q := range [][2]int{{0, 0}, {4, 4}} {
		a, b := q[0], q[1]
		VSHUFPS(U8(0x44), t[b+2], t[a], r[a+0])
		VSHUFPS(U8(0xEE), t[b+2], t[a], r[a+1])
		VSHUFPS(U8(0x44), t[b+3], t[a+1], r[a+2])
		VSHUFPS(U8(0xEE), t[b+3], t[a+1], r[a+3])
	}
	Comment("join the lanes of rows 0–3 and 4–7")
	for i := 0; i < 4; i++ {
		VPERM2F128(U8(0x20), r[i+4], r[i], t[i])
		VPERM2F128(U8(0x31), r[i+4], r[i], t[i+4])
	}
	Comment("store columns 0..7 of the block")
	MOVQ(RDI, R8)
	for i := 0; i < 8; i++ {
		VMOVUPS(t[i], Mem{Base: R8})
		ADDQ(RDX, R8)
	}
	MOVQ(R8, RDI)
	ADDQ(U32(32), RSI)
	DECQ(RCX)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
