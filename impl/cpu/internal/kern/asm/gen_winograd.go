package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The Winograd F(2×2, 3×3) convolution's transforms (winograd.go in
// package kern gives the plain loops). Every kernel takes a count n that
// is a positive multiple of the vector width: the callers round their
// counts up and own the slack the rounding reads and writes.

// declareWinogradConsts emits the AVX-512 permutation indices: ilvLo and
// ilvHi interleave two vectors a, b into [a0 b0 a1 b1 …] (lanes 0-7 and
// 8-15 of each), evens and odds take the even and odd lanes of the
// 32-lane pair [a, b].
func declareWinogradConsts() {
	table := func(name string, f func(i int) int) {
		m := GLOBL("vk_"+name, RODATA|NOPTR)
		for i := 0; i < 16; i++ {
			DATA(4*i, U32(uint32(f(i))))
		}
		consts[name] = m
	}
	table("ilvlo", func(i int) int { return i/2 + 16*(i%2) })
	table("ilvhi", func(i int) int { return 8 + i/2 + 16*(i%2) })
	table("evens", func(i int) int { return 2 * i })
	table("odds", func(i int) int { return 2*i + 1 })
}

// winogradInput emits, for one channel and t < n tiles, the input
// transform V = Bᵀ d B of each tile's 4×4 patch
//
//	d[a][b] = q[((a&1)·2 + (b&1))·phase + t + (a>>1)·wq + (b>>1)]
//	X[a][ν] = (d[a][0]−d[a][2], d[a][1]+d[a][2], d[a][2]−d[a][1], d[a][1]−d[a][3])[ν]
//	v[(4ξ+ν)·vs + t] = (X[0][ν]−X[2][ν], X[1][ν]+X[2][ν], X[2][ν]−X[1][ν], X[1][ν]−X[3][ν])[ξ]
func (s vecISA) winogradInput() {
	name := "winogradInput" + s.suffix
	text(name, NOSPLIT, "func(n int, q *float32, phase, wq int, v *float32, vs int)")
	Pragma("noescape")
	Doc(name + " writes the Winograd input transform of n tiles (a multiple of the vector width): v[(4ξ+ν)·vs + t] = (Bᵀ d B)[ξ][ν], d[a][b] = q[((a&1)·2+(b&1))·phase + t + (a>>1)·wq + (b>>1)].")
	Load(Param("n"), RCX)
	Load(Param("q"), R8)
	Load(Param("phase"), R9)
	Load(Param("wq"), R10)
	Load(Param("v"), RDI)
	Load(Param("vs"), RBX)
	SHLQ(U8(2), R9)
	SHLQ(U8(2), R10)
	SHLQ(U8(2), RBX)
	LEAQ(Mem{Base: R9, Index: R9, Scale: 2}, R13)   // 3·phase
	LEAQ(Mem{Base: RBX, Index: RBX, Scale: 1}, R14) // 2·vs
	SHLQ(U8(1), R14)                                // 4·vs: the next ξ
	LEAQ(Mem{Base: R14, Index: R14, Scale: 2}, RDX) // 12·vs
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	x, y := s.v[0:4], s.v[4:8]
	d := func(a, b int) Mem {
		m := Mem{Base: R8, Disp: (b >> 1) * 4}
		if a>>1 == 1 {
			m.Base = R11
		}
		switch (a&1)*2 + b&1 {
		case 1:
			m.Index, m.Scale = R9, 1
		case 2:
			m.Index, m.Scale = R9, 2
		case 3:
			m.Index, m.Scale = R13, 1
		}
		return m
	}
	Label(name + "_loop")
	LEAQ(Mem{Base: R8, Index: R10, Scale: 1}, R11) // the patch's rows 2 and 3
	MOVQ(RDI, R12)
	for nu := 0; nu < 4; nu++ {
		winogradX(nu, "patch rows", func(a, b int) Op { return d(a, b) }, x)
		winogradStoreV(x, y, 0)
		if nu < 3 {
			ADDQ(RBX, R12)
		}
	}
	ADDQ(U32(uint32(s.bytes)), R8)
	ADDQ(U32(uint32(s.bytes)), RDI)
	SUBQ(U32(uint32(s.lanes)), RCX)
	JG(LabelRef(name + "_loop"))
	Label(name + "_done")
	s.end()
}

// winogradOutput emits, for one output channel and t < n tiles, the
// output transform Y = Aᵀ M A of the 16 products plus the bias, its two
// output rows interleaved:
//
//	M[ξ][ν] = m[(4ξ+ν)·ms + t]
//	S[ξ] = ((M[ξ][0]+M[ξ][1])+M[ξ][2], (M[ξ][1]−M[ξ][2])−M[ξ][3])
//	w0[2t+j] = ((S[0][j]+S[1][j])+S[2][j]) + bias
//	w1[2t+j] = ((S[1][j]−S[2][j])−S[3][j]) + bias
func (s vecISA) winogradOutput() {
	name := "winogradOutput" + s.suffix
	text(name, NOSPLIT, "func(n int, m *float32, ms int, bias float32, w0, w1 *float32)")
	Pragma("noescape")
	Doc(name + " writes the Winograd output transform of n tiles (a multiple of the vector width) plus bias, rows interleaved: w0[2t+j] = (Aᵀ M A)[0][j] + bias, w1[2t+j] = (Aᵀ M A)[1][j] + bias, M[ξ][ν] = m[(4ξ+ν)·ms + t].")
	Load(Param("n"), RCX)
	Load(Param("m"), RSI)
	Load(Param("ms"), R9)
	Load(Param("w0"), RDI)
	Load(Param("w1"), RDX)
	bias := s.v[15]
	loadFloat("bias", bias.AsX())
	s.bcast(bias, bias)
	SHLQ(U8(2), R9)
	LEAQ(Mem{Base: R9, Index: R9, Scale: 2}, R11) // 3·ms
	LEAQ(Mem{Base: R9, Index: R9, Scale: 1}, R10) // 2·ms
	SHLQ(U8(1), R10)                              // 4·ms: the next ξ
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	t := s.v[0:4]
	sv := [4][2]VecPhysical{{s.v[4], s.v[5]}, {s.v[6], s.v[7]}, {s.v[8], s.v[9]}, {s.v[10], s.v[11]}}
	tmp := s.v[12:14]
	if s.avx512 {
		VMOVUPS(k("ilvlo"), s.v[16])
		VMOVUPS(k("ilvhi"), s.v[17])
	}
	Label(name + "_loop")
	MOVQ(RSI, R12)
	winogradY(t, sv, bias, R10, 0)
	Comment("interleave Y[i][0] and Y[i][1] into row i")
	for i, dst := range []Register{RDI, RDX} {
		a, b := t[2*i], t[2*i+1]
		if s.avx512 {
			VMOVAPS(a, tmp[0])
			VPERMT2PS(b, s.v[16], tmp[0])
			VPERMT2PS(b, s.v[17], a)
			VMOVUPS(tmp[0], Mem{Base: dst})
			VMOVUPS(a, Mem{Base: dst, Disp: s.bytes})
			continue
		}
		VUNPCKLPS(b, a, tmp[0])
		VUNPCKHPS(b, a, tmp[1])
		VPERM2F128(U8(0x20), tmp[1], tmp[0], a)
		VPERM2F128(U8(0x31), tmp[1], tmp[0], b)
		VMOVUPS(a, Mem{Base: dst})
		VMOVUPS(b, Mem{Base: dst, Disp: s.bytes})
	}
	ADDQ(U32(uint32(s.bytes)), RSI)
	ADDQ(U32(uint32(2*s.bytes)), RDI)
	ADDQ(U32(uint32(2*s.bytes)), RDX)
	SUBQ(U32(uint32(s.lanes)), RCX)
	JG(LabelRef(name + "_loop"))
	Label(name + "_done")
	s.end()
}

// deinterleave emits even[j] = src[2j], odd[j] = src[2j+1] for j < n.
func (s vecISA) deinterleave() {
	name := "deinterleave" + s.suffix
	text(name, NOSPLIT, "func(n int, src, even, odd *float32)")
	Pragma("noescape")
	Doc(name + " sets even[j] = src[2j] and odd[j] = src[2j+1] for j < n (a multiple of the vector width).")
	Load(Param("n"), RCX)
	Load(Param("src"), RSI)
	Load(Param("even"), RDI)
	Load(Param("odd"), RDX)
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	a, b, e, o := s.v[0], s.v[1], s.v[2], s.v[3]
	if s.avx512 {
		VMOVUPS(k("evens"), s.v[4])
		VMOVUPS(k("odds"), s.v[5])
	}
	Label(name + "_loop")
	VMOVUPS(Mem{Base: RSI}, a)
	VMOVUPS(Mem{Base: RSI, Disp: s.bytes}, b)
	odd := s.evenOdd(a, b, e, o, s.v[4], s.v[5])
	VMOVUPS(e, Mem{Base: RDI})
	VMOVUPS(odd, Mem{Base: RDX})
	ADDQ(U32(uint32(2*s.bytes)), RSI)
	ADDQ(U32(uint32(s.bytes)), RDI)
	ADDQ(U32(uint32(s.bytes)), RDX)
	SUBQ(U32(uint32(s.lanes)), RCX)
	JG(LabelRef(name + "_loop"))
	Label(name + "_done")
	s.end()
}

// evenOdd splits the 2·lanes values of a (the first) and b into their
// even columns, into e, and their odd ones, into the register it returns:
// a on the AVX-512 path (evens and odds hold the k("evens") and
// k("odds") permutations; a is overwritten), o on the AVX2 path (two
// in-lane shuffles, then the 64-bit halves put in order).
func (s vecISA) evenOdd(a, b, e, o, evens, odds VecPhysical) VecPhysical {
	if s.avx512 {
		VMOVAPS(a, e)
		VPERMT2PS(b, evens, e)
		VPERMT2PS(b, odds, a)
		return a
	}
	VSHUFPS(U8(0x88), b, a, e)
	VSHUFPS(U8(0xDD), b, a, o)
	VPERMPD(U8(0xD8), e, e)
	VPERMPD(U8(0xD8), o, o)
	return o
}

// interleave emits dst[2j] = even[j], dst[2j+1] = odd[j] for j < n: the
// inverse of deinterleave (a pixel shuffle's row for a factor of 2).
func (s vecISA) interleave() {
	name := "interleave" + s.suffix
	text(name, NOSPLIT, "func(n int, even, odd, dst *float32)")
	Pragma("noescape")
	Doc(name + " sets dst[2j] = even[j] and dst[2j+1] = odd[j] for j < n (a multiple of the vector width).")
	Load(Param("n"), RCX)
	Load(Param("even"), RSI)
	Load(Param("odd"), RDX)
	Load(Param("dst"), RDI)
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	a, b, lo, hi := s.v[0], s.v[1], s.v[2], s.v[3]
	if s.avx512 {
		VMOVUPS(k("ilvlo"), s.v[4])
		VMOVUPS(k("ilvhi"), s.v[5])
	}
	Label(name + "_loop")
	VMOVUPS(Mem{Base: RSI}, a)
	VMOVUPS(Mem{Base: RDX}, b)
	if s.avx512 {
		Comment("lo = [a0 b0 … a7 b7], hi = [a8 b8 … a15 b15]")
		VMOVAPS(a, lo)
		VPERMT2PS(b, s.v[4], lo)
		VPERMT2PS(b, s.v[5], a)
		VMOVUPS(lo, Mem{Base: RDI})
		VMOVUPS(a, Mem{Base: RDI, Disp: s.bytes})
	} else {
		Comment("per 128-bit lane: lo = [a0 b0 a1 b1 | a4 b4 a5 b5], hi = [a2 b2 a3 b3 | a6 b6 a7 b7]")
		VUNPCKLPS(b, a, lo)
		VUNPCKHPS(b, a, hi)
		VPERM2F128(U8(0x20), hi, lo, a)
		VPERM2F128(U8(0x31), hi, lo, b)
		VMOVUPS(a, Mem{Base: RDI})
		VMOVUPS(b, Mem{Base: RDI, Disp: s.bytes})
	}
	ADDQ(U32(uint32(s.bytes)), RSI)
	ADDQ(U32(uint32(s.bytes)), RDX)
	ADDQ(U32(uint32(2*s.bytes)), RDI)
	SUBQ(U32(uint32(s.lanes)), RCX)
	JG(LabelRef(name + "_loop"))
	Label(name + "_done")
	s.end()
}

// maxNaN emits out[i] = y[i] when y[i] > x[i] or y[i] is NaN, else x[i]:
// the larger of the two, NaN when either is, x on ties (max pooling's
// comparison, in the order the Go twin makes it).
func (s vecISA) maxNaN() {
	name := "max" + s.suffix
	text(name, NOSPLIT, "func(n int, x, y, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[i] = y[i] if y[i] > x[i] or y[i] is NaN, else x[i], for i < n.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDX)
	Load(Param("out"), RDI)
	u := s.unroll
	a, b, c, m := s.v[:u], s.v[u:2*u], s.v[2*u:3*u], s.v[3*u:4*u]
	s.stream(name, []Register{RSI, RDX, RDI}, func(n int, tail bool, at func(p, j int) Mem) {
		Comment("out = y > x ? y : x, then y where y is NaN")
		for j := 0; j < n; j++ {
			s.ld(at(0, j), a[j], tail)
			s.ld(at(1, j), b[j], tail)
		}
		for j := 0; j < n; j++ {
			VMAXPS(a[j], b[j], c[j])
			if s.avx512 {
				VCMPPS(Imm(3), b[j], b[j], K2)
				VMOVAPS(b[j], K2, c[j])
			} else {
				VCMPPS(Imm(3), b[j], b[j], m[j])
				VBLENDVPS(m[j], b[j], c[j], c[j])
			}
			s.st(c[j], at(2, j), tail)
		}
	})
	s.end()
}

// winogradX emits X[a][ν] = (d[a][0]−d[a][2], d[a][1]+d[a][2],
// d[a][2]−d[a][1], d[a][1]−d[a][3])[ν] into x[a] for the four rows a of
// a tile (rows names them in the comment), in winogradInput's order. A
// pixel d(a, b) in a register is used in place; one in memory is loaded
// into x[a] first.
func winogradX(nu int, rows string, d func(a, b int) Op, x []VecPhysical) {
	Comment("X[a][ν] for the four " + rows + " a")
	first, second := [4]int{0, 1, 2, 1}[nu], [4]int{2, 2, 1, 3}[nu]
	op := VSUBPS
	if nu == 1 {
		op = VADDPS
	}
	for a := 0; a < 4; a++ {
		if r, ok := d(a, first).(VecPhysical); ok {
			op(d(a, second), r, x[a])
			continue
		}
		VMOVUPS(d(a, first), x[a])
		op(d(a, second), x[a], x[a])
	}
}

// winogradStoreV emits the V[ξ][ν] of the four ξ from the X[a][ν] in x
// (winogradInput's order) and stores them at R12 + disp, R12 + R14 +
// disp, R12 + 2·R14 + disp and R12 + RDX + disp (R12 is v at plane ν, R14
// four planes, RDX twelve).
func winogradStoreV(x, y []VecPhysical, disp int) {
	Comment("V[ξ][ν] for the four ξ")
	VSUBPS(x[2], x[0], y[0])
	VADDPS(x[2], x[1], y[1])
	VSUBPS(x[1], x[2], y[2])
	VSUBPS(x[3], x[1], y[3])
	VMOVUPS(y[0], Mem{Base: R12, Disp: disp})
	VMOVUPS(y[1], Mem{Base: R12, Index: R14, Scale: 1, Disp: disp})
	VMOVUPS(y[2], Mem{Base: R12, Index: R14, Scale: 2, Disp: disp})
	VMOVUPS(y[3], Mem{Base: R12, Index: RDX, Scale: 1, Disp: disp})
}

// winogradY emits winogradOutput's arithmetic: S[ξ] from the products
// M[ξ][0..3] at R12 + disp, R12 + R9 + disp, R12 + 2·R9 + disp and R12 +
// R11 + disp (R12 walking by next per ξ), then Y[0][j] into t[j] and
// Y[1][j] into t[2+j], each plus bias:
//
//	S[ξ] = ((M[ξ][0]+M[ξ][1])+M[ξ][2], (M[ξ][1]−M[ξ][2])−M[ξ][3])
//	Y[0][j] = ((S[0][j]+S[1][j])+S[2][j]) + bias,  Y[1][j] = ((S[1][j]−S[2][j])−S[3][j]) + bias
func winogradY(t []VecPhysical, sv [4][2]VecPhysical, bias VecPhysical, next Register, disp int) {
	for xi := 0; xi < 4; xi++ {
		Comment("S[ξ] from M[ξ][0..3]")
		VMOVUPS(Mem{Base: R12, Disp: disp}, t[0])
		VMOVUPS(Mem{Base: R12, Index: R9, Scale: 1, Disp: disp}, t[1])
		VMOVUPS(Mem{Base: R12, Index: R9, Scale: 2, Disp: disp}, t[2])
		VMOVUPS(Mem{Base: R12, Index: R11, Scale: 1, Disp: disp}, t[3])
		VADDPS(t[1], t[0], sv[xi][0])
		VADDPS(t[2], sv[xi][0], sv[xi][0])
		VSUBPS(t[2], t[1], sv[xi][1])
		VSUBPS(t[3], sv[xi][1], sv[xi][1])
		if xi < 3 {
			ADDQ(next, R12)
		}
	}
	Comment("Y[0][j] and Y[1][j], plus the bias")
	for j := 0; j < 2; j++ {
		VADDPS(sv[1][j], sv[0][j], t[j])
		VADDPS(sv[2][j], t[j], t[j])
		VADDPS(bias, t[j], t[j])
		VSUBPS(sv[2][j], sv[1][j], t[2+j])
		VSUBPS(sv[3][j], t[2+j], t[2+j])
		VADDPS(bias, t[2+j], t[2+j])
	}
}
