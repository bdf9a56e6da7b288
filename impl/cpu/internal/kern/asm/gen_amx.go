package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// AMX tile registers the bf16 AMX kernel uses: four accumulators (a 2×2
// grid of 16×16 float32 tiles), two tiles of A (16 rows by 16 pairs each)
// and two of B (16 pairs by 16 columns each).
const (
	tmmC00, tmmC01, tmmC10, tmmC11 = 0, 1, 2, 3
	tmmA0, tmmA1, tmmB0, tmmB1     = 4, 5, 6, 7
)

// amxKernels emits gemmBF16AMXRows (the AMX-BF16 microkernel: a column of
// 32×32 tiles summed into C in place) and amxPeakLoop (independent
// TDPBF16PS chains, the AMX-BF16 peak).
func amxKernels() {
	amxRowsKernel()
	amxPeakLoop()
}

// amxPeakLoop emits
//
//	func amxPeakBF16(n int, a, b *uint32, acc *float32, cfg *byte)
//
// which zeroes six 16×16 accumulator tiles, loads one tile of A and one
// of B (16 rows of 16 pairs each, 64 bytes apart) and runs n iterations of
// six TDPBF16PS, one per accumulator (independent chains, enough to cover
// the instruction's latency), then stores the six tiles to acc (6·256
// floats, 64 bytes a row): acc[t·256 + m·16 + j] = n · Σ_k a[m·16+k]·b[k·16+j]
// summed in pairs. n must be positive.
func amxPeakLoop() {
	const name = "amxPeakBF16"
	text(name, NOSPLIT, "func(n int, a, b *uint32, acc *float32, cfg *byte)")
	Pragma("noescape")
	Doc(name + " runs n iterations of six independent TDPBF16PS (accumulator tiles 0-5 += tile 6 · tile 7, loaded from a and b) and stores the six accumulators to acc (6·256 floats); n must be positive; cfg is amxConfig.")
	Load(Param("cfg"), RAX)
	ldTileCfg(RAX)
	for t := 0; t < 6; t++ {
		tileZero(t)
	}
	Load(Param("a"), RSI)
	Load(Param("b"), RDI)
	MOVQ(U32(64), RCX)
	tileLoad(6, RSI, RCX, 0)
	tileLoad(7, RDI, RCX, 0)
	Load(Param("n"), R8)
	Label(name + "_loop")
	for t := 0; t < 6; t++ {
		tdpbf16ps(t, 6, 7)
	}
	DECQ(R8)
	JNZ(LabelRef(name + "_loop"))
	Load(Param("acc"), RAX)
	for t := 0; t < 6; t++ {
		tileStore(t, RAX, RCX, t*1024)
	}
	tileRelease()
	RET()
}

// gpIndex is the 4-bit register number of a 64-bit general register
// (RAX 0 … R15 15): its low three bits go into ModRM or SIB, the fourth
// into the VEX prefix's X̄ (an index) or B̄ (a base).
func gpIndex(r Register) int {
	for i, x := range []Register{RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15} {
		if r == x {
			return i
		}
	}
	panic(fmt.Sprintf("amx: %s is not a 64-bit general register", r.Asm()))
}

// vex0F38 writes the bytes of a VEX-encoded instruction of map 0F38, W0,
// L0, prefix pp (00: none, 01: 66, 10: F3, 11: F2), VEX.vvvv v and opcode
// op, followed by rest (ModRM, SIB, displacement):
//
//	C4 (R̄ X̄ B̄ 0 0 0 1 0) (0 v̄v̄v̄v̄ 0 p p) op rest…
//
// with R̄ set and X̄, B̄ the complements of xb's bits 1 and 0 (the fourth
// bits of a memory operand's index and base, sibMem; 0 for none). reads
// and writes are the registers the instruction reads and writes, for
// avo's liveness. avo v0.6.0 and the Go assembler have no AMX mnemonics,
// so the instructions are written as bytes; the tests run each
// (TestSgemmBF16MatchesOracle, TestSgemmSourceBF16, TestAMXRowsKernel).
func vex0F38(comment string, pp, v, op, xb int, reads, writes []Op, rest ...int) {
	Comment(comment)
	bytes := append([]int{0xC4, 0xE2 ^ (xb&3)<<5, (^v&15)<<3 | pp, op}, rest...)
	for i, b := range bytes {
		in := &ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(uint8(b))}}
		if i == 0 {
			in.Inputs, in.Outputs = reads, writes
			in.ISA = []string{"AMX-BF16"}
		}
		Instruction(in)
	}
}

// sibMem is the ModRM (with reg) and SIB and displacement bytes of the
// memory operand [base + index·1 + disp], the tile loads' and stores'
// "sibmem" form (index is the row stride in bytes), and the fourth bits of
// index and base (xb, for vex0F38).
func sibMem(reg int, base, index Register, disp int) (xb int, rest []int) {
	b, x := gpIndex(base), gpIndex(index)
	if b&7 == 5 || x == 4 {
		panic("amx: no BP or R13 base, no SP index")
	}
	xb = x>>3<<1 | b>>3
	sib := (x&7)<<3 | b&7
	switch {
	case disp == 0:
		return xb, []int{reg<<3 | 4, sib}
	case disp >= -128 && disp < 128:
		return xb, []int{1<<6 | reg<<3 | 4, sib, disp & 0xff}
	}
	return xb, []int{2<<6 | reg<<3 | 4, sib, disp & 0xff, disp >> 8 & 0xff, disp >> 16 & 0xff, disp >> 24 & 0xff}
}

// tileLoad emits TILELOADD tmm, [base + stride + disp]: rows of the tile
// from base+disp, stride bytes apart (VEX.128.F2.0F38.W0 4B).
func tileLoad(tmm int, base, stride Register, disp int) {
	xb, rest := sibMem(tmm, base, stride, disp)
	vex0F38(fmt.Sprintf("TILELOADD TMM%d, [%s + %s + %d]", tmm, base.Asm(), stride.Asm(), disp), 0b11, 0, 0x4B, xb,
		[]Op{base, stride}, nil, rest...)
}

// tileStore emits TILESTORED [base + stride + disp], tmm
// (VEX.128.F3.0F38.W0 4B).
func tileStore(tmm int, base, stride Register, disp int) {
	xb, rest := sibMem(tmm, base, stride, disp)
	vex0F38(fmt.Sprintf("TILESTORED [%s + %s + %d], TMM%d", base.Asm(), stride.Asm(), disp, tmm), 0b10, 0, 0x4B, xb,
		[]Op{base, stride}, nil, rest...)
}

// tdpbf16ps emits TDPBF16PS acc, a, b (VEX.128.F3.0F38.W0 5C, ModRM.reg
// acc, ModRM.rm a, VEX.vvvv b): for each row m and column n of acc and
// pair k, acc[m][n] += a[m].pair[k] · b[k].pair[n] in bf16 pairs.
func tdpbf16ps(acc, a, b int) {
	vex0F38(fmt.Sprintf("TDPBF16PS TMM%d, TMM%d, TMM%d", acc, a, b), 0b10, b, 0x5C, 0, nil, nil, 0xC0|acc<<3|a)
}

// tileZero emits TILEZERO tmm (VEX.128.F2.0F38.W0 49 11:tmm:000).
func tileZero(tmm int) {
	vex0F38(fmt.Sprintf("TILEZERO TMM%d", tmm), 0b11, 0, 0x49, 0, nil, nil, 0xC0|tmm<<3)
}

// ldTileCfg emits LDTILECFG [base] (VEX.128.NP.0F38.W0 49 /0): the tile
// shapes from the 64-byte configuration at base, every tile zeroed.
func ldTileCfg(base Register) {
	b := gpIndex(base)
	if b > 7 || b == 4 || b == 5 {
		panic("amx: LDTILECFG base must be one of RAX, RCX, RDX, RBX, RSI, RDI")
	}
	vex0F38(fmt.Sprintf("LDTILECFG [%s]", base.Asm()), 0b00, 0, 0x49, 0, []Op{base}, nil, b)
}

// tileRelease emits TILERELEASE (VEX.128.NP.0F38.W0 49 C0): the tiles
// back to their initial state, so that the OS saves no tile data for the
// thread.
func tileRelease() {
	vex0F38("TILERELEASE", 0b00, 0, 0x49, 0, nil, nil, 0xC0)
}

// amxRowsKernel emits
//
//	func gemmBF16AMXRows(kt int, a *uint32, lda int, b *uint32, c *float32, ldc int, accumulate int, tiles int, half int, bias *float32, cfg *byte)
//
// which computes, for t < tiles, r < R (the rows cfg gives the tiles: 32,
// or with half at most 16) and j < 32,
//
//	c[(t·32+r)·ldc+j] = (c[(t·32+r)·ldc+j] or bias[j] or 0) + Σ_{p<16·kt} dot(a[(t·32+r)·lda+p], b[p·32+j])
//
// with TDPBF16PS, the accumulators starting from c's old value when
// accumulate != 0, else from bias (every row, loaded with a row stride of
// 0) when bias is not nil, else from zero, the sums stored to c in place: one B panel (32
// columns, PackBTBF16's layout, 128 bytes a row of pairs) against a
// column of row tiles of A, the panel's tiles reloaded from L1 for each.
// cfg shapes the tiles (amxRowsConfig): A0, C00 and C01 the first 16 rows
// (or all R with half), A1, C10 and C11 the rest, B0 and B1 16 pairs of
// 16 columns; it is loaded once and the tiles are released at the end.
func amxRowsKernel() {
	const name = "gemmBF16AMXRows"
	text(name, NOSPLIT, "func(kt int, a *uint32, lda int, b *uint32, c *float32, ldc int, accumulate int, tiles int, half int, bias *float32, cfg *byte)")
	Pragma("noescape")
	Doc(name + " computes c[(t·32+r)·ldc+j] = (c[(t·32+r)·ldc+j] if accumulate, else bias[j] if bias, else 0) + Σ_{p<16·kt} dot(a[(t·32+r)·lda+p], b[p·32+j]) for t < tiles, r < the rows cfg shapes (32, or at most 16 with half), j < 32 with AMX TDPBF16PS, summed into c in place; cfg is amxRowsConfigs'.")
	Load(Param("cfg"), RAX)
	ldTileCfg(RAX)
	Load(Param("a"), R12) // this tile's first row of A
	Load(Param("lda"), RDX)
	SHLQ(Imm(2), RDX) // lda in bytes
	Load(Param("c"), R9)
	Load(Param("ldc"), R10)
	SHLQ(Imm(2), R10) // ldc in bytes
	MOVQ(R10, R11)
	SHLQ(Imm(4), R11)   // 16 rows of C
	MOVQ(U32(128), RCX) // a B panel row: 32 pairs
	Load(Param("accumulate"), R13)
	Load(Param("tiles"), R14)
	Load(Param("half"), R15)

	Label(name + "_tile")
	Comment("the accumulators: c's tiles, or zero")
	LEAQ(Mem{Base: R9, Index: R11, Scale: 1}, RAX) // C's second 16 rows
	TESTQ(R13, R13)
	JZ(LabelRef(name + "_zero"))
	tileLoad(tmmC00, R9, R10, 0)
	tileLoad(tmmC01, R9, R10, 64)
	TESTQ(R15, R15)
	JNZ(LabelRef(name + "_k"))
	tileLoad(tmmC10, RAX, R10, 0)
	tileLoad(tmmC11, RAX, R10, 64)
	JMP(LabelRef(name + "_k"))
	Label(name + "_zero")
	Load(Param("bias"), RBX)
	TESTQ(RBX, RBX)
	JZ(LabelRef(name + "_clear"))
	Comment("every row of the accumulators the bias: a row stride of 0")
	XORQ(R8, R8)
	tileLoad(tmmC00, RBX, R8, 0)
	tileLoad(tmmC01, RBX, R8, 64)
	tileLoad(tmmC10, RBX, R8, 0)
	tileLoad(tmmC11, RBX, R8, 64)
	JMP(LabelRef(name + "_k"))
	Label(name + "_clear")
	for _, t := range []int{tmmC00, tmmC01, tmmC10, tmmC11} {
		tileZero(t)
	}

	Label(name + "_k")
	MOVQ(R12, RSI)
	MOVQ(RDX, RBX)
	SHLQ(Imm(4), RBX)
	ADDQ(RSI, RBX) // A's second 16 rows
	Load(Param("b"), RDI)
	Load(Param("kt"), R8)
	TESTQ(R15, R15)
	JNZ(LabelRef(name + "_half"))

	Label(name + "_loop")
	tileLoad(tmmA0, RSI, RDX, 0)
	tileLoad(tmmB0, RDI, RCX, 0)
	tileLoad(tmmB1, RDI, RCX, 64)
	tileLoad(tmmA1, RBX, RDX, 0)
	tdpbf16ps(tmmC00, tmmA0, tmmB0)
	tdpbf16ps(tmmC01, tmmA0, tmmB1)
	tdpbf16ps(tmmC10, tmmA1, tmmB0)
	tdpbf16ps(tmmC11, tmmA1, tmmB1)
	ADDQ(Imm(64), RSI)
	ADDQ(Imm(64), RBX)
	ADDQ(U32(2048), RDI)
	DECQ(R8)
	JNZ(LabelRef(name + "_loop"))
	tileStore(tmmC10, RAX, R10, 0)
	tileStore(tmmC11, RAX, R10, 64)
	JMP(LabelRef(name + "_store"))

	Label(name + "_half")
	tileLoad(tmmA0, RSI, RDX, 0)
	tileLoad(tmmB0, RDI, RCX, 0)
	tileLoad(tmmB1, RDI, RCX, 64)
	tdpbf16ps(tmmC00, tmmA0, tmmB0)
	tdpbf16ps(tmmC01, tmmA0, tmmB1)
	ADDQ(Imm(64), RSI)
	ADDQ(U32(2048), RDI)
	DECQ(R8)
	JNZ(LabelRef(name + "_half"))

	Label(name + "_store")
	tileStore(tmmC00, R9, R10, 0)
	tileStore(tmmC01, R9, R10, 64)
	Comment("the next 32 rows of A and C")
	MOVQ(RDX, RAX)
	SHLQ(Imm(5), RAX)
	ADDQ(RAX, R12)
	LEAQ(Mem{Base: R9, Index: R11, Scale: 2}, R9)
	DECQ(R14)
	JNZ(LabelRef(name + "_tile"))
	tileRelease()
	RET()
}
