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

// weightedRowsHeads emits, for u = 1 … 4,
//
//	func weightedRowsHeads{u}SUFFIX(heads int, src *float32, offs, where *int32, taps int, attn *float32, headStride int, out *float32)
//
// WeightedRows for every head of an outlook attention's pixel at once,
// the heads' rows d = u vectors wide and side by side in src and out, each
// head's weights gathered from attn:
//
//	for h < heads, c < d: out[h·d + c] = Σ_{t<taps} attn[where[t] + h·headStride] · src[offs[t] + h·d + c]
//
// the sum over t in order from zero, each product fused into it (the bits
// of WeightedRows on one head with w[t] = attn[where[t] + h·headStride]).
// headStride is in floats; taps must be positive.
func (s vecISA) weightedRowsHeads() {
	for u := 1; u <= 4; u++ {
		name := "weightedRowsHeads" + string(rune('0'+u)) + s.suffix
		text(name, NOSPLIT, "func(heads int, src *float32, offs, where *int32, taps int, attn *float32, headStride int, out *float32)")
		Pragma("noescape")
		Doc(name + " sets out[h·d + c] = Σ_{t<taps} attn[where[t] + h·headStride]·src[offs[t] + h·d + c] for h < heads, " +
			"c < d = " + string(rune('0'+u)) + " vectors, the sum fused in order from zero.")
		Load(Param("heads"), RCX)
		Load(Param("src"), RSI)
		Load(Param("offs"), RBX)
		Load(Param("where"), R12)
		Load(Param("taps"), R8)
		Load(Param("attn"), RDX)
		Load(Param("headStride"), R13)
		SHLQ(Imm(2), R13)
		Load(Param("out"), RDI)
		acc := s.v[:u]
		wv := s.v[u]
		Label(name + "_head")
		for j := 0; j < u; j++ {
			VXORPS(acc[j], acc[j], acc[j])
		}
		XORQ(R9, R9)
		Label(name + "_taps")
		Comment("acc += attn[where[t]]·src[offs[t] : …] (this head's attn and src)")
		MOVLQSX(Mem{Base: RBX, Index: R9, Scale: 4}, R10)
		MOVLQSX(Mem{Base: R12, Index: R9, Scale: 4}, R11)
		VBROADCASTSS(Mem{Base: RDX, Index: R11, Scale: 4}, wv)
		for j := 0; j < u; j++ {
			VFMADD231PS(Mem{Base: RSI, Index: R10, Scale: 4, Disp: j * s.bytes}, wv, acc[j])
		}
		INCQ(R9)
		CMPQ(R9, R8)
		JB(LabelRef(name + "_taps"))
		for j := 0; j < u; j++ {
			VMOVUPS(acc[j], Mem{Base: RDI, Disp: j * s.bytes})
		}
		ADDQ(U32(uint32(u*s.bytes)), RSI)
		ADDQ(U32(uint32(u*s.bytes)), RDI)
		ADDQ(R13, RDX)
		DECQ(RCX)
		JNZ(LabelRef(name + "_head"))
		s.end()
	}
}
