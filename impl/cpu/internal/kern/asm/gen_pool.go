package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// avgPool2x2 emits
//
//	func avgPool2x2Row<ISA>(n int, r0, r1, out *float32)
//
// one output row of a 2×2 average pool of stride 2 from the two input
// rows under it, summed in the plain loop's order:
//
//	for j < n: out[j] = (((r0[2j] + r0[2j+1]) + r1[2j]) + r1[2j+1]) · 0.25
//
// (n a multiple of the vector width; multiplying by 0.25 is dividing by 4
// exactly). Each input row's two vectors are split into their even and
// odd columns as deinterleave does.
func (s vecISA) avgPool2x2() {
	name := "avgPool2x2Row" + s.suffix
	text(name, NOSPLIT, "func(n int, r0, r1, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[j] = (((r0[2j] + r0[2j+1]) + r1[2j]) + r1[2j+1]) · 0.25 for j < n (a multiple of the vector width).")
	Load(Param("n"), RCX)
	Load(Param("r0"), RSI)
	Load(Param("r1"), RDX)
	Load(Param("out"), RDI)
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	quarter := s.v[8]
	MOVL(U32(0x3e800000), EAX) // 0.25
	VMOVD(EAX, X15)
	VBROADCASTSS(X15, quarter)
	if s.avx512 {
		VMOVUPS(k("evens"), s.v[6])
		VMOVUPS(k("odds"), s.v[7])
	}
	// split sets e to the even columns of the 2·lanes values at m and
	// returns the register of their odd columns (evenOdd), a or o.
	split := func(m Mem, a, b, e, o VecPhysical) VecPhysical {
		VMOVUPS(m, a)
		m.Disp += s.bytes
		VMOVUPS(m, b)
		return s.evenOdd(a, b, e, o, s.v[6], s.v[7])
	}
	Label(name + "_loop")
	e0, e1 := s.v[0], s.v[2]
	o0 := split(Mem{Base: RSI}, s.v[4], s.v[5], e0, s.v[1])
	o1 := split(Mem{Base: RDX}, s.v[9], s.v[10], e1, s.v[3])
	VADDPS(o0, e0, e0)
	VADDPS(e1, e0, e0)
	VADDPS(o1, e0, e0)
	VMULPS(quarter, e0, e0)
	VMOVUPS(e0, Mem{Base: RDI})
	ADDQ(U32(uint32(2*s.bytes)), RSI)
	ADDQ(U32(uint32(2*s.bytes)), RDX)
	ADDQ(U32(uint32(s.bytes)), RDI)
	SUBQ(U32(uint32(s.lanes)), RCX)
	JG(LabelRef(name + "_loop"))
	Label(name + "_done")
	s.end()
}
