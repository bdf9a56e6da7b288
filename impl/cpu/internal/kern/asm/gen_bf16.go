package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// bf16Kernels emits the AVX512_BF16 kernels: the bf16 GEMM microkernels
// (12, 8 and 4 rows of 32 columns; see gemmKernel, mode aDirectBF16) and
// cvtBF16AVX512 (rounding to bf16 pairs), and dpbf16AVX512, one VDPBF16PS
// on three vectors, with which the tests compare the instruction with its
// Go twin.
func bf16Kernels(zmm []VecPhysical) {
	gemmKernel("gemmBF16x12AVX512", 12, 12, 2, zmm, 64, aDirectBF16)
	gemmKernel("gemmBF16x8AVX512", 8, 12, 2, zmm, 64, aDirectBF16)
	gemmKernel("gemmBF16x4AVX512", 4, 12, 2, zmm, 64, aDirectBF16)
	cvtBF16Kernel(false)
	cvtBF16Kernel(true)
	pairRowsBF16Kernel()
	dpbf16Probe()
}

// dpbf16Probe emits
//
//	func dpbf16AVX512(acc, a, b *uint32)
//
// which runs VDPBF16PS on the 16 lanes at acc, a and b once: for i < 16,
// acc[i] += a.hi·b.hi, then += a.lo·b.lo, where .lo and .hi are the bf16
// halves of a[i] and b[i] (the instruction's rounding: dpbf16 in bf16.go).
func dpbf16Probe() {
	text("dpbf16AVX512", NOSPLIT, "func(acc, a, b *uint32)")
	Pragma("noescape")
	Doc("dpbf16AVX512 sets acc[i] = dpbf16(acc[i], a[i], b[i]) for i < 16 with one VDPBF16PS: the instruction dpbf16 (bf16.go) is the Go twin of, for the tests.")
	pacc := Load(Param("acc"), GP64())
	pa := Load(Param("a"), GP64())
	pb := Load(Param("b"), GP64())
	VMOVUPS(Mem{Base: pacc}, Z0)
	VMOVUPS(Mem{Base: pa}, Z1)
	VMOVUPS(Mem{Base: pb}, Z2)
	vdpbf16ps(Z0, Z1, Z2)
	VMOVUPS(Z0, Mem{Base: pacc})
	VZEROUPPER()
	RET()
}

// vdpbf16ps emits VDPBF16PS zmm acc, zmm src1, zmm src2 (Intel operand
// order: acc.fp32[i] += src1.bf16[2i+1]·src2.bf16[2i+1] + src1.bf16[2i]·
// src2.bf16[2i]). avo v0.6.0 has no mnemonic for it, nor has the Go
// assembler, so it is written as its bytes (evexRR): the EVEX encoding
// EVEX.512.F3.0F38.W0 52 /r.
func vdpbf16ps(acc, src1, src2 VecPhysical) {
	Comment(fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d (Intel order: Z%d += Z%d·Z%d in bf16 pairs)",
		acc.PhysicalIndex(), src1.PhysicalIndex(), src2.PhysicalIndex(), acc.PhysicalIndex(), src1.PhysicalIndex(), src2.PhysicalIndex()))
	evexRR(0x52, 0b10, acc, src1, src2, true)
}

// vcvtne2ps2bf16 emits VCVTNE2PS2BF16 zmm dst, zmm src1, zmm src2 (Intel
// order: dst.bf16[i] = round(src2.fp32[i]), dst.bf16[16+i] =
// round(src1.fp32[i]) for i < 16, to nearest even, subnormals to zero),
// EVEX.512.F2.0F38.W0 72 /r, as its bytes (evexRR).
func vcvtne2ps2bf16(dst, src1, src2 VecPhysical) {
	Comment(fmt.Sprintf("VCVTNE2PS2BF16 Z%d, Z%d, Z%d (Intel order: Z%d = bf16(Z%d):bf16(Z%d), high:low)",
		dst.PhysicalIndex(), src1.PhysicalIndex(), src2.PhysicalIndex(), dst.PhysicalIndex(), src1.PhysicalIndex(), src2.PhysicalIndex()))
	evexRR(0x72, 0b11, dst, src1, src2, false)
}

// evexRR writes the bytes of the 512-bit EVEX instruction of map 0F38,
// W0, prefix pp (01: 66, 10: F3, 11: F2) and opcode op with register
// operands dst (ModRM.reg), src1 (EVEX.vvvv) and src2 (ModRM.rm), no mask,
// no broadcast:
//
//	62 P0 P1 P2 op ModRM
//	P0 = R̄ X̄ B̄ R̄′ 0 0 1 0    (map 0F38; R, R′: bits 3, 4 of dst; B, X: bits 3, 4 of src2)
//	P1 = W=0 v̄v̄v̄v̄ 1 p p      (vvvv: bits 0-3 of src1, inverted)
//	P2 = z=0 L′L=10 b=0 V̄′ aaa=000 (512 bits; V′: bit 4 of src1, inverted)
//	ModRM = 11 dst[2:0] src2[2:0]
//
// accumulates says dst is also read. The tests disassemble the assembled
// object (TestVDPBF16PSEncoding) and compare each instruction with its Go
// twin (TestDPBF16Twin, TestCvtBF16Twin).
func evexRR(op, pp int, dst, src1, src2 VecPhysical, accumulates bool) {
	d, s1, s2 := int(dst.PhysicalIndex()), int(src1.PhysicalIndex()), int(src2.PhysicalIndex())
	inv := func(x, bit int) int { return (x>>bit)&1 ^ 1 }
	p0 := inv(d, 3)<<7 | inv(s2, 4)<<6 | inv(s2, 3)<<5 | inv(d, 4)<<4 | 0b0010
	p1 := (^s1&15)<<3 | 1<<2 | pp
	p2 := 0b10<<5 | inv(s1, 4)<<3
	modrm := 0b11<<6 | (d&7)<<3 | s2&7
	for i, b := range []int{0x62, p0, p1, p2, op, modrm} {
		in := &ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(uint8(b))}}
		if i == 0 {
			// What the instruction reads and writes, for avo's liveness.
			in.Inputs, in.Outputs = []Op{src1, src2}, []Op{dst}
			if accumulates {
				in.Inputs = append(in.Inputs, dst)
			}
			in.ISA = []string{"AVX512_BF16"}
		}
		Instruction(in)
	}
}

// cvtBF16Kernel emits, without scaled,
//
//	func cvtBF16AVX512(blocks int, src *float32, dst *uint32)
//
// which rounds 32·blocks floats to bf16 pairs, dst[p] = bf16(src[2p]) |
// bf16(src[2p+1])<<16 for p < 16·blocks, 32 floats per VCVTNE2PS2BF16
// (RoundBF16 is its Go twin); and with scaled
//
//	func cvtScaledBF16AVX512(blocks int, src *float32, dst *uint32, scale float32)
//
// the same of scale·src: each value multiplied by scale (rounded to
// float32) before it is rounded to bf16. blocks must be positive.
func cvtBF16Kernel(scaled bool) {
	name := "cvtBF16AVX512"
	if scaled {
		name = "cvtScaledBF16AVX512"
		text(name, NOSPLIT, "func(blocks int, src *float32, dst *uint32, scale float32)")
		Pragma("noescape")
		Doc(name+" sets dst[p] = RoundBF16(scale·src[2p]) | RoundBF16(scale·src[2p+1])<<16 for p < 16·blocks,",
			"each product rounded to float32 first; blocks must be positive.")
	} else {
		text(name, NOSPLIT, "func(blocks int, src *float32, dst *uint32)")
		Pragma("noescape")
		Doc(name + " sets dst[p] = RoundBF16(src[2p]) | RoundBF16(src[2p+1])<<16 for p < 16·blocks, with VCVTNE2PS2BF16; blocks must be positive.")
	}
	n := Load(Param("blocks"), GP64())
	ps := Load(Param("src"), GP64())
	pd := Load(Param("dst"), GP64())
	if scaled {
		loadFloat("scale", X3)
		VBROADCASTSS(X3, Z3)
	}
	Label(name + "_loop")
	for i, z := range []VecPhysical{Z0, Z1} {
		if scaled {
			VMULPS(Mem{Base: ps, Disp: 64 * i}, Z3, z)
		} else {
			VMOVUPS(Mem{Base: ps, Disp: 64 * i}, z)
		}
	}
	vcvtne2ps2bf16(Z2, Z1, Z0)
	VMOVUPS(Z2, Mem{Base: pd})
	ADDQ(Imm(128), ps)
	ADDQ(Imm(64), pd)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	VZEROUPPER()
	RET()
}

// pairRowsBF16Kernel emits
//
//	func pairRowsBF16AVX512(steps int, src *float32, ld int, dst *uint32)
//
// which packs the steps of one 32-column panel of a row-major B [k, n]
// (rows ld floats apart) for the bf16 microkernel, each step pairing two
// rows of B column by column:
//
//	for p < steps, j < 32: dst[32p + j] = RoundBF16(src[2p·ld + j]) | RoundBF16(src[(2p+1)·ld + j])<<16
//
// For each 16 columns, one VCVTNE2PS2BF16 rounds both rows (row 2p in the
// low 16 words, row 2p+1 in the high ones) and one VPERMW interleaves the
// words into the pairs. steps must be positive.
func pairRowsBF16Kernel() {
	text("pairRowsBF16AVX512", NOSPLIT, "func(steps int, src *float32, ld int, dst *uint32)")
	Pragma("noescape")
	Doc("pairRowsBF16AVX512 sets dst[32p + j] = RoundBF16(src[2p·ld + j]) | RoundBF16(src[(2p+1)·ld + j])<<16 for p < steps, j < 32; steps must be positive.")
	idx := GLOBL("vk_pairwords", RODATA|NOPTR)
	for j := 0; j < 16; j++ {
		// word 2j of the result is word j (row 2p), word 2j+1 word 16+j (row 2p+1)
		DATA(4*j, U32(uint32(j)|uint32(16+j)<<16))
	}
	n := Load(Param("steps"), GP64())
	ps := Load(Param("src"), GP64())
	ld := Load(Param("ld"), GP64())
	pd := Load(Param("dst"), GP64())
	SHLQ(U8(2), ld)
	VMOVDQU32(idx, Z8)
	Label("pairRowsBF16AVX512_loop")
	for half := 0; half < 2; half++ {
		VMOVUPS(Mem{Base: ps, Disp: 64 * half}, Z0)
		VMOVUPS(Mem{Base: ps, Index: ld, Scale: 1, Disp: 64 * half}, Z1)
		vcvtne2ps2bf16(Z2, Z1, Z0)
		VPERMW(Z2, Z8, Z3)
		VMOVUPS(Z3, Mem{Base: pd, Disp: 64 * half})
	}
	LEAQ(Mem{Base: ps, Index: ld, Scale: 2}, ps)
	ADDQ(Imm(128), pd)
	DECQ(n)
	JNZ(LabelRef("pairRowsBF16AVX512_loop"))
	VZEROUPPER()
	RET()
}
