package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// copyTaps12 emits
//
//	func copyTaps12AVX2(n int, src *float32, taps *int, dst *float32)
//
// which packs one 12-row panel of a convolution's windows when the twelve
// windows are neighbours in one output row at unit stride, so that each
// tap's twelve values are contiguous in the image:
//
//	for p < n, r < 12: dst[p·12 + r] = src[taps[p] + r]
//
// one 8-wide and one 4-wide load and store per tap. AVX2 encodings only,
// so the AVX-512 path uses it too.
func copyTaps12() {
	name := "copyTaps12AVX2"
	text(name, NOSPLIT, "func(n int, src *float32, taps *int, dst *float32)")
	Pragma("noescape")
	Doc(name + " sets dst[p·12 + r] = src[taps[p] + r] for p < n, r < 12.")
	Load(Param("n"), RCX)
	Load(Param("src"), RSI)
	Load(Param("taps"), RBX)
	Load(Param("dst"), RDI)
	Label(name + "_loop")
	TESTQ(RCX, RCX)
	JZ(LabelRef(name + "_done"))
	MOVQ(Mem{Base: RBX}, RAX)
	VMOVUPS(Mem{Base: RSI, Index: RAX, Scale: 4}, Y0)
	VMOVUPS(Mem{Base: RSI, Index: RAX, Scale: 4, Disp: 32}, X1)
	VMOVUPS(Y0, Mem{Base: RDI})
	VMOVUPS(X1, Mem{Base: RDI, Disp: 32})
	ADDQ(U8(8), RBX)
	ADDQ(U8(48), RDI)
	DECQ(RCX)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// transposeRows emits, for R = rows (a multiple of 4),
//
//	func transposeRowsRAVX2(n int, src *float32, offs *int, dst *float32)
//
// which packs R rows that start anywhere in src into one R-wide GEMM panel
// (R = 12: an A panel; R = 16 or 32: a panel of Bᵀ), eight columns per
// step:
//
//	for p < 8·n, r < R: dst[p·R + r] = src[offs[r] + p]
//
// Each group of four rows is loaded 8 wide, transposed 4×4 within each
// 128-bit lane (unpack low/high in singles, then in doubles) and stored
// as two 4-value pieces per column: lane 0 holds columns 0-3, lane 1
// columns 4-7. AVX2 encodings only, so the AVX-512 path uses it too.
func transposeRows(rows int) {
	name := fmt.Sprintf("transposeRows%dAVX2", rows)
	text(name, NOSPLIT, "func(n int, src *float32, offs *int, dst *float32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[p·%d + r] = src[offs[r] + p] for p < 8·n, r < %d.", name, rows, rows))
	Load(Param("n"), RCX)
	Load(Param("src"), RSI)
	Load(Param("offs"), RBX)
	Load(Param("dst"), RDI)
	in := []VecPhysical{Y0, Y1, Y2, Y3}
	pairs := []VecPhysical{Y4, Y5, Y6, Y7}
	cols := []VecPhysical{Y8, Y9, Y10, Y11}
	Label(name + "_loop")
	TESTQ(RCX, RCX)
	JZ(LabelRef(name + "_done"))
	for g := 0; g < rows/4; g++ {
		Comment("rows 4g … 4g+3, columns p … p+7")
		for i, y := range in {
			MOVQ(Mem{Base: RBX, Disp: 8 * (4*g + i)}, RAX)
			VMOVUPS(Mem{Base: RSI, Index: RAX, Scale: 4}, y)
		}
		Comment("pairs: (r0,r1) and (r2,r3) interleaved, low and high halves of each lane")
		VUNPCKLPS(in[1], in[0], pairs[0])
		VUNPCKHPS(in[1], in[0], pairs[1])
		VUNPCKLPS(in[3], in[2], pairs[2])
		VUNPCKHPS(in[3], in[2], pairs[3])
		Comment("column j of the lane: r0[j] r1[j] r2[j] r3[j]")
		VUNPCKLPD(pairs[2], pairs[0], cols[0])
		VUNPCKHPD(pairs[2], pairs[0], cols[1])
		VUNPCKLPD(pairs[3], pairs[1], cols[2])
		VUNPCKHPD(pairs[3], pairs[1], cols[3])
		for j, y := range cols {
			VMOVUPS(y.AsX(), Mem{Base: RDI, Disp: 4 * (j*rows + 4*g)})
			VEXTRACTF128(Imm(1), y, Mem{Base: RDI, Disp: 4 * ((4+j)*rows + 4*g)})
		}
	}
	ADDQ(U8(32), RSI)
	ADDQ(U32(8*rows*4), RDI)
	DECQ(RCX)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// rowPanels emits, for a panel width of nr floats (16 or 32),
//
//	func rowPanelsNrAVX2(n int, src *float32, ld int, dst *float32, stride int)
//
// which deals four rows of a matrix (ld values apart) out to the panels of
// a packed GEMM operand, nr values of each row per panel:
//
//	for j < n, r < 4, c < nr: dst[j·stride + r·nr + c] = src[r·ld + j·nr + c]
//
// so that each panel gets 4·nr consecutive values per step rather than one
// row's nr at a stride of the whole panel (a stride of 32 KiB at 256 rows
// put every store of a row in one L1 set). AVX2 encodings only, so the
// AVX-512 path uses it too.
func rowPanels(nr int) {
	name := fmt.Sprintf("rowPanels%dAVX2", nr)
	text(name, NOSPLIT, "func(n int, src *float32, ld int, dst *float32, stride int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[j·stride + r·%d + c] = src[r·ld + j·%d + c] for j < n, r < 4, c < %d.", name, nr, nr, nr))
	Load(Param("n"), RCX)
	Load(Param("src"), RSI)
	Load(Param("ld"), RBX)
	Load(Param("dst"), RDI)
	Load(Param("stride"), RDX)
	SHLQ(U8(2), RDX)
	SHLQ(U8(2), RBX)
	rows := []GPPhysical{RSI, R8, R9, R10}
	for r := 1; r < 4; r++ {
		LEAQ(Mem{Base: rows[r-1], Index: RBX, Scale: 1}, rows[r])
	}
	vecs := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}[:nr/2]
	per := nr / 8
	Label(name + "_loop")
	TESTQ(RCX, RCX)
	JZ(LabelRef(name + "_done"))
	for r, base := range rows {
		for i := 0; i < per; i++ {
			VMOVUPS(Mem{Base: base, Disp: 32 * i}, vecs[r*per+i])
		}
	}
	for i, y := range vecs {
		VMOVUPS(y, Mem{Base: RDI, Disp: 32 * i})
	}
	for _, base := range rows {
		ADDQ(U8(nr*4), base)
	}
	ADDQ(RDX, RDI)
	DECQ(RCX)
	JMP(LabelRef(name + "_loop"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
