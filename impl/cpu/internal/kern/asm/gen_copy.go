package main

import (
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
	TEXT(name, NOSPLIT, "func(n int, src *float32, taps *int, dst *float32)")
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
