package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// dotChains emits
//
//	func NAME(n int, a, b uint32, acc *[len(accs)·16]float32)
//
// computing, n times, for every lane i of every chain, acc[i] += a.hi·b.hi
// + a.lo·b.lo (a and b each a pair of bf16, the high and low halves): one
// VDPBF16PS per vector register of acc per iteration, the registers
// independent chains, so the loop runs at the bf16 dot-product units'
// throughput.
func dotChains(name string, accs []VecPhysical, va, vb VecPhysical) {
	size := len(accs) * 16
	TEXT(name, NOSPLIT, fmt.Sprintf("func(n int, a, b uint32, acc *[%d]float32)", size))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes, n times, acc[i] += a.hi·b.hi + a.lo·b.lo for i < %d (a, b: bf16 pairs): %d independent chains of VDPBF16PS; n must be positive.",
		name, size, len(accs)))
	n := Load(Param("n"), GP64())
	p := Load(Param("acc"), GP64())
	Comment("va = broadcast(a), vb = broadcast(b)")
	for _, x := range []struct {
		param string
		v     VecPhysical
	}{{"a", va}, {"b", vb}} {
		VPBROADCASTD(Load(Param(x.param), GP32()), x.v)
	}
	for i, v := range accs {
		VMOVUPS(Mem{Base: p, Disp: i * 64}, v)
	}
	Label(name + "_loop")
	for _, v := range accs {
		vdpbf16ps(v, va, vb)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	for i, v := range accs {
		VMOVUPS(v, Mem{Base: p, Disp: i * 64})
	}
	VZEROUPPER()
	RET()
}

// vdpbf16ps emits VDPBF16PS zmm acc, zmm src1, zmm src2 as its EVEX bytes
// (EVEX.512.F3.0F38.W0 52 /r), which neither avo v0.6.0 nor the Go
// assembler has a mnemonic for: the same encoder as the kernels'
// generator (impl/cpu/internal/kern/asm/gen_bf16.go, which documents the
// bit fields and whose output the kern tests disassemble).
func vdpbf16ps(acc, src1, src2 VecPhysical) {
	d, s1, s2 := int(acc.PhysicalIndex()), int(src1.PhysicalIndex()), int(src2.PhysicalIndex())
	inv := func(x, bit int) int { return (x>>bit)&1 ^ 1 }
	p0 := inv(d, 3)<<7 | inv(s2, 4)<<6 | inv(s2, 3)<<5 | inv(d, 4)<<4 | 0b0010
	p1 := (^s1&15)<<3 | 1<<2 | 0b10
	p2 := 0b10<<5 | inv(s1, 4)<<3
	modrm := 0b11<<6 | (d&7)<<3 | s2&7
	Comment(fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", d, s1, s2))
	for i, b := range []int{0x62, p0, p1, p2, 0x52, modrm} {
		in := &ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(uint8(b))}}
		if i == 0 {
			in.Inputs, in.Outputs = []Op{acc, src1, src2}, []Op{acc}
			in.ISA = []string{"AVX512_BF16"}
		}
		Instruction(in)
	}
}
