package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// weightedRows emits
//
//	func weightedRowsSUFFIX(n int, src *float32, offs *int32, w *float32, taps int, out *float32)
//
// out[d] = Σ_{j<taps} w[j]·src[offs[j]+d] for d < n: one output row as a
// weighted sum of taps rows of src, the inner step of bilinear sampling
// (four corner rows per sampling point). The channels are walked in blocks
// of unroll vectors, then two, then one, then a masked tail; within a block
// the accumulators stay in registers while the taps are streamed, so each
// offset and weight is read once per block. taps may be 0 (out = 0).
func (s vecISA) weightedRows() {
	name := "weightedRows" + s.suffix
	text(name, NOSPLIT, "func(n int, src *float32, offs *int32, w *float32, taps int, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[d] = Σ_{j<taps} w[j]·src[offs[j]+d] for d < n.")
	Load(Param("n"), RCX)
	Load(Param("src"), RSI)
	Load(Param("offs"), RBX)
	Load(Param("w"), RDX)
	Load(Param("taps"), R8)
	Load(Param("out"), RDI)
	acc := s.v[:s.unroll]
	wv := s.v[s.unroll]
	tmp := s.v[s.unroll+1]
	block := func(label string, u int, tail bool) {
		Comment("zero the accumulators")
		for j := 0; j < u; j++ {
			VXORPS(acc[j], acc[j], acc[j])
		}
		XORQ(R9, R9)
		Label(label + "_taps")
		CMPQ(R9, R8)
		JAE(LabelRef(label + "_store"))
		Comment("acc += w[j]·src[offs[j] + d : …]")
		MOVLQSX(Mem{Base: RBX, Index: R9, Scale: 4}, R10)
		VBROADCASTSS(Mem{Base: RDX, Index: R9, Scale: 4}, wv)
		for j := 0; j < u; j++ {
			m := Mem{Base: RSI, Index: R10, Scale: 4, Disp: j * s.bytes}
			if tail {
				s.ld(m, tmp, true)
				VFMADD231PS(tmp, wv, acc[j])
			} else {
				VFMADD231PS(m, wv, acc[j])
			}
		}
		INCQ(R9)
		JMP(LabelRef(label + "_taps"))
		Label(label + "_store")
		for j := 0; j < u; j++ {
			s.st(acc[j], Mem{Base: RDI, Disp: j * s.bytes}, tail)
		}
	}
	sizes := []int{s.unroll}
	if s.unroll > 2 {
		sizes = append(sizes, 2)
	}
	if s.unroll > 1 {
		sizes = append(sizes, 1)
	}
	for _, u := range sizes {
		label := name + "_v" + string(rune('0'+u))
		Label(label)
		CMPQ(RCX, U32(uint32(u*s.lanes)))
		JB(LabelRef(label + "_next"))
		block(label, u, false)
		ADDQ(U32(uint32(u*s.bytes)), RSI)
		ADDQ(U32(uint32(u*s.bytes)), RDI)
		SUBQ(U32(uint32(u*s.lanes)), RCX)
		JMP(LabelRef(label))
		Label(label + "_next")
	}
	TESTQ(RCX, RCX)
	JZ(LabelRef(name + "_done"))
	s.setMask()
	block(name+"_tail", 1, true)
	Label(name + "_done")
	s.end()
}
