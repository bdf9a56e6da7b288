package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vectorKernels emits the elementwise and row kernels (LayerNorm, softmax,
// GELU, add/scale), each once per path: AVX-512 (16 lanes, masked tail)
// and AVX2+FMA (8 lanes, VMASKMOVPS tail). The Go drivers in package kern
// call them with n ≥ 1; every kernel handles any n, the tail included.
func vectorKernels() {
	declareConsts()
	for _, s := range []vecISA{
		{suffix: "AVX512", avx512: true, lanes: 16, bytes: 64, unroll: 4, v: []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
			Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}},
		{suffix: "AVX2", lanes: 8, bytes: 32, unroll: 2, v: []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}},
	} {
		s.add()
		s.relu()
		for _, residual := range []bool{false, true} {
			for _, relu := range []bool{false, true} {
				s.biasResidual(residual, relu)
			}
		}
		s.scale()
		s.addScaled()
		s.gelu()
		s.erfKernel()
		s.expKernel()
		s.quickGELU() // gen_quickgelu.go
		s.silu()
		s.softmaxRow()
		s.softmaxRows2()
		s.softmaxExpRow()
		s.softmaxExpRows2()
		s.layerNormRow()
		s.weightedRows()      // gen_gather.go
		s.weightedRowsHeads() // gen_gather.go: outlook attention
		s.moments()           // gen_moments.go: GroupNorm
		s.affine()
		s.affineSiLU()
		s.winogradInput()  // gen_winograd.go
		s.winogradOutput() // gen_winograd.go
		s.deinterleave()   // gen_winograd.go
		s.interleave()     // gen_winograd.go: pixel shuffle
		s.avgPool2x2()     // gen_pool.go
		s.maxNaN()         // gen_winograd.go: max pooling
	}
}

// vecISA is one SIMD path of the vector kernels.
type vecISA struct {
	suffix string // appended to every function name
	avx512 bool   // EVEX encodings, K1 tail mask, VSCALEFPS
	lanes  int    // float32 lanes per vector
	bytes  int    // bytes per vector
	unroll int    // vectors per main-loop iteration
	v      []VecPhysical
}

// mask is the AVX2 tail mask (all ones in the lanes < n); AVX-512 keeps
// its tail mask in K1.
func (s vecISA) mask() VecPhysical { return s.v[len(s.v)-1] }

// Polynomial coefficients, lowest degree first. They were fitted once in
// float64 (weighted minimax by Lawson's iteration on least squares over
// Chebyshev nodes; Trefethen, Approximation Theory and Approximation
// Practice, ch. 10 and 16) and are rounded to float32 here. The Go path
// (softmax_generic.go, gelu_generic.go) holds the same values:
// TestGeneratedCoefficientsMatchGo compares them bit for bit with the
// tables generated from these.
var (
	// exp(r) = 1 + r·(1 + r·(c0 + r·(c1 + … + r·c4))) on |r| ≤ ln2/2,
	// max relative error 3.1e-9 before float32 rounding.
	expCoef = []float32{0.499999935, 0.166665207, 0.0416683874, 0.00836870982, 0.00138146132}
	// erf(a) = Pᵢ(t) on the eight pieces [i/2, i/2 + ½) of 0 ≤ a < 4,
	// t = a − i/2, Pᵢ of degree 7 (erfPieces[j][i] is t^j's coefficient;
	// the line of t¹ is split, see erfHead), fitted piece by piece with
	// the coefficients rounded to float32 one at a time from t⁰ up, each
	// refit after the previous was rounded: max relative error 7.4e-8
	// after float32 evaluation (0.97 ulp), and erf rounds to 1 from 3.92
	// on. Piece 0 has no constant term, so its relative error holds down
	// to the smallest a.
	erfPieces = [8][8]float32{
		{0, 0.520499885, 0.842700779, 0.966105163, 0.995322287, 0.999593019, 0.999977887, 0.999999285},
		{-5.0058425e-08, 0.87878108, 0.415110111, 0.118927039, 0.0206626989, 0.00218383316, 0.00014369686, -2.25435297e-08},
		{-1.62325023e-06, -0.439341962, -0.415189832, -0.178291351, -0.0411974005, -0.00562302349, -0.000559731503, 0.000154379886},
		{-0.376076341, -0.147058383, 0.139331549, 0.137502253, 0.0465917066, 0.0104763741, 0.00249118754, -0.00203592191},
		{-0.000574071135, 0.186387271, 0.063924253, -0.0374525636, -0.025182303, -0.020767238, -0.010762684, 0.0118046841},
		{0.115914613, -0.0015379549, -0.0549729057, -0.0358751453, -0.0138002634, 0.0417329557, 0.0294947028, -0.034740109},
		{-0.00807165354, -0.0406056829, -0.0124666896, 0.0501927733, 0.0387318879, -0.0546128303, -0.0420864709, 0.050577689},
		{-0.0179325696, 0.00786751788, 0.0189146437, -0.0235209204, -0.0237129293, 0.0302507207, 0.0238896925, -0.0289103258},
	}
	// erfHead is the part of t¹'s coefficient added last, in one FMA
	// with the sum of the rest: piece 0's 2/√π is erfHead[0] +
	// erfPieces[1][0] (float32 hi and lo parts, so that erf(a) ≈ 2a/√π
	// keeps its relative accuracy for tiny a); the other pieces have all
	// of it in erfPieces[1] and 0 here.
	erfHead = [8]float32{1.12837923, 0, 0, 0, 0, 0, 0, 0}
)

// consts maps a name to its table: 16 copies of one 32-bit value (64
// bytes), read as a vector operand by both paths.
var consts = map[string]Mem{}

func declareConsts() {
	f := func(name string, v float32) { constU32(name, math.Float32bits(v)) }
	f("one", 1)
	f("half", 0.5)
	f("zero", 0)
	f("negmax", -math.MaxFloat32)
	f("erfcut", 3.92)           // erf rounds to 1 from here on
	f("erfmagic2", 1.5*(1<<23)) // ulp 1: i + it has i in its low bits
	f("erfmagic1", 1.5*(1<<22)) // ulp ½: i/2 + it has i in its low bits
	f("rsqrt2", float32(1/math.Sqrt2))
	f("log2e", float32(math.Log2E))
	// ln 2 split in a high part with 12 significant bits (so n·ln2hi is
	// exact for |n| < 2¹²) and the float32 remainder: Cody and Waite's
	// argument reduction (Cody & Waite, Software Manual for the
	// Elementary Functions, 1980).
	f("ln2hi", 0.693145751953125)
	f("ln2lo", float32(math.Ln2-0.693145751953125))
	f("explo", -104)  // exp(−104) < 2⁻¹⁴⁹/2: rounds to 0
	f("c1702", 1.702) // QuickGELU's slope
	constU32("absmask", 0x7fffffff)
	constU32("signmask", 0x80000000)
	constU32("neginf", 0xff800000)
	constU32("bias127", 127)
	for i, c := range expCoef {
		f(fmt.Sprintf("expc%d", i), c)
	}
	for j, row := range erfPieces {
		constTable(fmt.Sprintf("erft%d", j), row)
	}
	constTable("erfthead", erfHead)
	idx := GLOBL("vk_iota", RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(uint32(i)))
	}
	consts["iota"] = idx
	declareWinogradConsts()
}

// constTable declares a table of 8 values for VPERMPS, as 16 lanes (the
// 8 twice), so that AVX-512 can read it as a whole vector too.
func constTable(name string, v [8]float32) {
	m := GLOBL("vk_"+name, RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(math.Float32bits(v[i%8])))
	}
	consts[name] = m
}

func constU32(name string, v uint32) {
	m := GLOBL("vk_"+name, RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(v))
	}
	consts[name] = m
}

func k(name string) Mem {
	m, ok := consts[name]
	if !ok {
		panic("no constant " + name)
	}
	return m
}

// ld loads one vector (the lanes < n only, others zero, when tail).
func (s vecISA) ld(m Mem, dst VecPhysical, tail bool) {
	switch {
	case !tail:
		VMOVUPS(m, dst)
	case s.avx512:
		VMOVUPS_Z(m, K1, dst)
	default:
		VMASKMOVPS(m, s.mask(), dst)
	}
}

// st stores one vector (the lanes < n only when tail).
func (s vecISA) st(src VecPhysical, m Mem, tail bool) {
	switch {
	case !tail:
		VMOVUPS(src, m)
	case s.avx512:
		VMOVUPS(src, K1, m)
	default:
		VMASKMOVPS(src, s.mask(), m)
	}
}

// setMask makes the tail mask from the count 1 ≤ n < lanes in CX.
func (s vecISA) setMask() {
	if s.avx512 {
		Comment("K1 = lanes < n")
		MOVL(U32(1), EAX)
		SHLL(CL, EAX)
		DECL(EAX)
		KMOVW(EAX, K1)
		return
	}
	Comment("mask = lanes < n: broadcast(n) > [0 1 … 7]")
	m := s.mask()
	VMOVD(ECX, m.AsX())
	VPBROADCASTD(m.AsX(), m)
	VPCMPGTD(k("iota"), m, m)
}

// stream emits the loop that walks n (in CX) floats of the arrays whose
// pointers are ptrs, unroll vectors at a time, then one, then a masked
// tail. body(u, tail, at) emits the work on u vectors, where at(p, j) is
// vector j of array p. CX and ptrs are consumed.
func (s vecISA) stream(label string, ptrs []Register, body func(u int, tail bool, at func(p, j int) Mem)) {
	at := func(p, j int) Mem { return Mem{Base: ptrs[p], Disp: j * s.bytes} }
	step := func(u int) {
		for _, p := range ptrs {
			ADDQ(U32(uint32(u*s.bytes)), p)
		}
		SUBQ(U32(uint32(u*s.lanes)), RCX)
	}
	Label(label + "_blocks")
	CMPQ(RCX, U32(uint32(s.unroll*s.lanes)))
	JB(LabelRef(label + "_vectors"))
	body(s.unroll, false, at)
	step(s.unroll)
	JMP(LabelRef(label + "_blocks"))
	Label(label + "_vectors")
	CMPQ(RCX, U32(uint32(s.lanes)))
	JB(LabelRef(label + "_tail"))
	body(1, false, at)
	step(1)
	JMP(LabelRef(label + "_vectors"))
	Label(label + "_tail")
	TESTQ(RCX, RCX)
	JZ(LabelRef(label + "_done"))
	s.setMask()
	body(1, true, at)
	Label(label + "_done")
}

// reduce folds the vectors acc into the scalar acc[0].AsX() with op
// (VADDPS or VMAXPS), using tmp.
func (s vecISA) reduce(op func(...Op), acc []VecPhysical, tmp VecPhysical) {
	for w := 1; w < len(acc); w *= 2 {
		for i := 0; i+w < len(acc); i += 2 * w {
			op(acc[i+w], acc[i], acc[i])
		}
	}
	a := acc[0]
	if s.avx512 {
		VEXTRACTF64X4(Imm(1), a, tmp.AsY())
		op(tmp.AsY(), a.AsY(), a.AsY())
	}
	VEXTRACTF128(Imm(1), a.AsY(), tmp.AsX())
	op(tmp.AsX(), a.AsX(), a.AsX())
	VMOVHLPS(a.AsX(), a.AsX(), tmp.AsX())
	op(tmp.AsX(), a.AsX(), a.AsX())
	VMOVSHDUP(a.AsX(), tmp.AsX())
	op(tmp.AsX(), a.AsX(), a.AsX())
}

func (s vecISA) bcast(x, dst VecPhysical) { VBROADCASTSS(x.AsX(), dst) }

func (s vecISA) end() {
	VZEROUPPER()
	RET()
}

// add emits out[i] = x[i] + y[i] for i < n.
func (s vecISA) add() {
	name := "add" + s.suffix
	text(name, NOSPLIT, "func(n int, x, y, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[i] = x[i] + y[i] for i < n.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDX)
	Load(Param("out"), RDI)
	a, b := s.v[:s.unroll], s.v[s.unroll:2*s.unroll]
	s.stream(name, []Register{RSI, RDX, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		Comment("out = x + y")
		for j := 0; j < u; j++ {
			s.ld(at(0, j), a[j], tail)
			s.ld(at(1, j), b[j], tail)
		}
		for j := 0; j < u; j++ {
			VADDPS(b[j], a[j], a[j])
			s.st(a[j], at(2, j), tail)
		}
	})
	s.end()
}

// relu emits out[i] = max(x[i], 0) for i < n; a NaN stays NaN (it is
// the operand VMAXPS returns when either is NaN).
func (s vecISA) relu() {
	name := "relu" + s.suffix
	text(name, NOSPLIT, "func(n int, x, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[i] = max(x[i], 0) for i < n (NaN stays NaN).")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("out"), RDI)
	zero := s.v[s.unroll]
	VXORPS(zero, zero, zero)
	a := s.v[:s.unroll]
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		Comment("out = max(0, x), x returned when NaN")
		for j := 0; j < u; j++ {
			s.ld(at(0, j), a[j], tail)
		}
		for j := 0; j < u; j++ {
			VMAXPS(a[j], zero, a[j])
			s.st(a[j], at(1, j), tail)
		}
	})
	s.end()
}

// biasResidual emits the one-pass finish of a convolution's outputs:
// out[i] = (x[i] + b) + r[i] for i < n, the residual r only when residual,
// then max(·, 0) when relu (NaN stays NaN, as relu's).
func (s vecISA) biasResidual(residual, relu bool) {
	name, sig, what := "biasAdd", "func(n int, b float32, x, out *float32)", "x[i] + b"
	if residual {
		name, sig, what = "biasResidual", "func(n int, b float32, x, r, out *float32)", "(x[i] + b) + r[i]"
	}
	if relu {
		name, what = name+"ReLU", "max("+what+", 0)"
	}
	name += s.suffix
	text(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name + " sets out[i] = " + what + " for i < n (NaN stays NaN).")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	ptrs := []Register{RSI}
	if residual {
		Load(Param("r"), RDX)
		ptrs = append(ptrs, RDX)
	}
	Load(Param("out"), RDI)
	ptrs = append(ptrs, RDI)
	a, c := s.v[:s.unroll], s.v[s.unroll:2*s.unroll]
	vb, zero := s.v[2*s.unroll], s.v[2*s.unroll+1]
	Comment("b in every lane")
	loadFloat("b", vb.AsX())
	s.bcast(vb, vb)
	if relu {
		VXORPS(zero, zero, zero)
	}
	s.stream(name, ptrs, func(u int, tail bool, at func(p, j int) Mem) {
		Comment("out = " + what)
		for j := 0; j < u; j++ {
			s.ld(at(0, j), a[j], tail)
			if residual {
				s.ld(at(1, j), c[j], tail)
			}
		}
		for j := 0; j < u; j++ {
			VADDPS(vb, a[j], a[j])
			if residual {
				VADDPS(c[j], a[j], a[j])
			}
			if relu {
				VMAXPS(a[j], zero, a[j])
			}
			s.st(a[j], at(len(ptrs)-1, j), tail)
		}
	})
	s.end()
}

// scale emits out[i] = alpha·x[i] for i < n.
func (s vecISA) scale() {
	name := "scale" + s.suffix
	text(name, NOSPLIT, "func(n int, alpha float32, x, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[i] = alpha·x[i] for i < n.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("out"), RDI)
	alpha := s.v[2*s.unroll]
	Comment("alpha in every lane")
	loadFloat("alpha", alpha.AsX())
	s.bcast(alpha, alpha)
	a := s.v[:s.unroll]
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		Comment("out = alpha·x")
		for j := 0; j < u; j++ {
			s.ld(at(0, j), a[j], tail)
		}
		for j := 0; j < u; j++ {
			VMULPS(alpha, a[j], a[j])
			s.st(a[j], at(1, j), tail)
		}
	})
	s.end()
}

// addScaled emits out[i] = x[i] + alpha·y[i] (one fused multiply-add).
func (s vecISA) addScaled() {
	name := "addScaled" + s.suffix
	text(name, NOSPLIT, "func(n int, alpha float32, x, y, out *float32)")
	Pragma("noescape")
	Doc(name + " sets out[i] = x[i] + alpha·y[i] for i < n, with one rounding (fused multiply-add).")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDX)
	Load(Param("out"), RDI)
	alpha := s.v[2*s.unroll]
	Comment("alpha in every lane")
	loadFloat("alpha", alpha.AsX())
	s.bcast(alpha, alpha)
	a, b := s.v[:s.unroll], s.v[s.unroll:2*s.unroll]
	s.stream(name, []Register{RSI, RDX, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		Comment("out = alpha·y + x")
		for j := 0; j < u; j++ {
			s.ld(at(0, j), a[j], tail)
			s.ld(at(1, j), b[j], tail)
		}
		for j := 0; j < u; j++ {
			VFMADD213PS(a[j], alpha, b[j])
			s.st(b[j], at(2, j), tail)
		}
	})
	s.end()
}

// erfRegs are the registers of one vector's erf: the argument in a
// (clobbered), a vector with its sign in sign (kept: the argument itself
// or any multiple of it by a positive number), the result in p; i and c
// are scratch, and so is the saturation mask, in k on AVX-512 and in m on
// AVX2.
type erfRegs struct {
	a, sign, i, p, c, m VecPhysical
	k                   OpmaskPhysical
}

// erf emits p = erf(a) on the vectors of rs, interleaved: with a = |a|,
// the piece i = ⌊2a⌋ and t = a − i/2 (exact),
//
//	p = Pᵢ(t) = (…(c7ᵢ·t + c6ᵢ)·t + … + c1ᵢ)·t + c0ᵢ, then p += headᵢ·t
//
// each coefficient picked for its lane's piece from an 8-entry table by
// VPERMPS, whose index is the low bits of a float: i/2 + 1.5·2²² on
// AVX-512 (VRNDSCALEPS gives ⌊2a⌋/2), i + 1.5·2²³ on AVX2; p = 1 where
// a ≥ 3.92 (erf rounds to 1 there; ±Inf too), then the sign of sign is
// copied onto p. NaN gives NaN. One table lookup per coefficient and a
// Horner chain of 8 FMAs replace two polynomials of 6 and 13 terms both
// evaluated in every lane, and one of the two blends that chose between
// them: 1.5× the old kernel's speed on AVX-512 (BenchmarkGELU).
func (s vecISA) erf(rs []erfRegs) {
	Comment("a = |a|; the lanes a ≥ 3.92 (ordered: NaN is not)")
	for _, r := range rs {
		if s.avx512 {
			VPANDD(k("absmask"), r.a, r.a)
			VCMPPS(Imm(0x1d), k("erfcut"), r.a, r.k)
		} else {
			VANDPS(k("absmask"), r.a, r.a)
			VCMPPS(Imm(0x1d), k("erfcut"), r.a, r.m)
		}
	}
	Comment("i = the piece, t = a − i/2 (in a), i's index bits = i + magic")
	for _, r := range rs {
		if s.avx512 {
			VRNDSCALEPS(Imm(0x19), r.a, r.i) // ⌊2a⌋/2: one fraction bit, round down, no precision exception
			VSUBPS(r.i, r.a, r.a)
			VADDPS(k("erfmagic1"), r.i, r.i)
		} else {
			VADDPS(r.a, r.a, r.i)
			VROUNDPS(Imm(0x9), r.i, r.i) // ⌊2a⌋, no precision exception
			VFNMADD231PS(k("half"), r.i, r.a)
			VADDPS(k("erfmagic2"), r.i, r.i)
		}
	}
	Comment("p = Horner over the piece's coefficients, t⁷ down to t⁰")
	top := len(erfPieces) - 1
	for _, r := range rs {
		VPERMPS(k(fmt.Sprintf("erft%d", top)), r.i, r.p)
	}
	for j := top - 1; j >= 0; j-- {
		for _, r := range rs {
			VPERMPS(k(fmt.Sprintf("erft%d", j)), r.i, r.c)
			VFMADD213PS(r.c, r.a, r.p)
		}
	}
	Comment("p += head·t; p = 1 where a ≥ 3.92; p |= sign(sign)")
	for _, r := range rs {
		VPERMPS(k("erfthead"), r.i, r.c)
		VFMADD231PS(r.c, r.a, r.p)
		if s.avx512 {
			VMOVUPS(k("one"), r.k, r.p)
			VPANDD(k("signmask"), r.sign, r.c)
			VPORD(r.c, r.p, r.p)
		} else {
			VBLENDVPS(r.m, k("one"), r.p, r.p)
			VANDPS(k("signmask"), r.sign, r.c)
			VORPS(r.c, r.p, r.p)
		}
	}
}

// erfRegSet hands out per-vector registers from first on, with the sign
// taken from signs[j]: 4 per vector and mask K2+j on AVX-512 (K1 is the
// tail's), 5 per vector on AVX2.
func (s vecISA) erfRegSet(first int, signs []VecPhysical) []erfRegs {
	rs := make([]erfRegs, len(signs))
	per := 5
	if s.avx512 {
		per = 4
	}
	for j := range rs {
		b := first + per*j
		rs[j] = erfRegs{a: s.v[b], sign: signs[j], i: s.v[b+1], p: s.v[b+2], c: s.v[b+3]}
		if s.avx512 {
			rs[j].k = []OpmaskPhysical{K2, K3, K4, K5}[j]
		} else {
			rs[j].m = s.v[b+4]
		}
	}
	return rs
}

// gelu emits y = (x·0.5)·(1 + erf(x·(1/√2))), PyTorch's exact GELU.
func (s vecISA) gelu() {
	name := "gelu" + s.suffix
	text(name, NOSPLIT, "func(n int, x, y *float32)")
	Pragma("noescape")
	Doc(name + " sets y[i] = (x[i]·0.5)·(1 + erf(x[i]·(1/√2))) for i < n, with gelu(−Inf) = 0 and −0 results as +0.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDI)
	negmax := s.v[0]
	Comment("−MaxFloat32 in a register: max's NaN operand must be the other one")
	VMOVUPS(k("negmax"), negmax)
	xs := s.v[1 : 1+s.unroll]
	rs := s.erfRegSet(1+s.unroll, xs)
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		Comment("a = x·(1/√2)")
		for j := 0; j < u; j++ {
			s.ld(at(0, j), xs[j], tail)
			VMULPS(k("rsqrt2"), xs[j], rs[j].a)
		}
		s.erf(rs[:u])
		Comment("y = (max(x, −MaxFloat32)·0.5)·(1 + erf) + 0: finite at −Inf, and −0 becomes +0")
		for j := 0; j < u; j++ {
			VADDPS(k("one"), rs[j].p, rs[j].p)
			VMAXPS(xs[j], negmax, xs[j])
			VMULPS(k("half"), xs[j], xs[j])
			VFMADD213PS(k("zero"), xs[j], rs[j].p)
			s.st(rs[j].p, at(1, j), tail)
		}
	})
	s.end()
}

// erfKernel emits y = erf(x), the erf of gelu alone (for accuracy tests).
func (s vecISA) erfKernel() {
	name := "erf" + s.suffix
	text(name, NOSPLIT, "func(n int, x, y *float32)")
	Pragma("noescape")
	Doc(name + " sets y[i] = erf(x[i]) for i < n: the erf of gelu" + s.suffix + ", for the accuracy tests.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDI)
	us := s.v[:s.unroll]
	rs := s.erfRegSet(s.unroll, us)
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		for j := 0; j < u; j++ {
			s.ld(at(0, j), us[j], tail)
			VMOVAPS(us[j], rs[j].a)
		}
		s.erf(rs[:u])
		for j := 0; j < u; j++ {
			s.st(rs[j].p, at(1, j), tail)
		}
	})
	s.end()
}

// expRegs are the registers of one vector's exp: the argument in r
// (clobbered), the result in p; n is scratch.
type expRegs struct{ r, n, p VecPhysical }

// exp emits p = exp(r) for r ≤ 0 (or NaN, which stays NaN): r is clamped
// to −104 (below which exp rounds to 0), then exp(r) = 2ⁿ·exp(r − n·ln2)
// with n = round(r·log2e); the Cody–Waite reduced argument is in
// [−ln2/2, ln2/2] and exp of it a degree-6 polynomial. AVX-512 scales
// with VSCALEFPS; AVX2 multiplies by 2^⌊n/2⌋ and 2^(n−⌊n/2⌋), both
// normal for n ≥ −150, so subnormal results are rounded once.
func (s vecISA) exp(rs []expRegs, lo VecPhysical) {
	Comment("r = max(r, −104) (NaN stays NaN); n = round(r·log2e)")
	for _, e := range rs {
		VMAXPS(e.r, lo, e.r)
		VMULPS(k("log2e"), e.r, e.n)
		if s.avx512 {
			VRNDSCALEPS(Imm(0), e.n, e.n)
		} else {
			VROUNDPS(Imm(0), e.n, e.n)
		}
	}
	Comment("r −= n·ln2 (hi, then lo)")
	for _, e := range rs {
		VFNMADD231PS(k("ln2hi"), e.n, e.r)
	}
	for _, e := range rs {
		VFNMADD231PS(k("ln2lo"), e.n, e.r)
	}
	Comment("p = 1 + r·(1 + r·(c0 + r·(c1 + …)))")
	for _, e := range rs {
		VMOVUPS(k(fmt.Sprintf("expc%d", len(expCoef)-1)), e.p)
	}
	for i := len(expCoef) - 2; i >= 0; i-- {
		for _, e := range rs {
			VFMADD213PS(k(fmt.Sprintf("expc%d", i)), e.r, e.p)
		}
	}
	for i := 0; i < 2; i++ {
		for _, e := range rs {
			VFMADD213PS(k("one"), e.r, e.p)
		}
	}
	if s.avx512 {
		Comment("p ·= 2ⁿ")
		for _, e := range rs {
			VSCALEFPS(e.n, e.p, e.p)
		}
		return
	}
	Comment("p ·= 2^h · 2^(n−h), h = n>>1, each as the bits (e+127)<<23")
	for _, e := range rs {
		VCVTPS2DQ(e.n, e.n)
		VPSRAD(Imm(1), e.n, e.r)
		VPSUBD(e.r, e.n, e.n)
		VPADDD(k("bias127"), e.r, e.r)
		VPSLLD(Imm(23), e.r, e.r)
		VPADDD(k("bias127"), e.n, e.n)
		VPSLLD(Imm(23), e.n, e.n)
		VMULPS(e.r, e.p, e.p)
		VMULPS(e.n, e.p, e.p)
	}
}

func (s vecISA) expRegSet(u, first int) []expRegs {
	rs := make([]expRegs, u)
	for j := range rs {
		b := first + 3*j
		rs[j] = expRegs{s.v[b], s.v[b+1], s.v[b+2]}
	}
	return rs
}

// expKernel emits y = exp(x) for x ≤ 0, the exp of softmax alone (for
// accuracy tests).
func (s vecISA) expKernel() {
	name := "exp" + s.suffix
	text(name, NOSPLIT, "func(n int, x, y *float32)")
	Pragma("noescape")
	Doc(name + " sets y[i] = exp(x[i]) for i < n and x[i] ≤ 0: the exp of softmaxRow" + s.suffix + ", for the accuracy tests.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDI)
	lo := s.v[0]
	VMOVUPS(k("explo"), lo)
	rs := s.expRegSet(s.unroll, 1)
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		for j := 0; j < u; j++ {
			s.ld(at(0, j), rs[j].r, tail)
		}
		s.exp(rs[:u], lo)
		for j := 0; j < u; j++ {
			s.st(rs[j].p, at(1, j), tail)
		}
	})
	s.end()
}

// maxPass emits acc[0] = max_i scale·x[i] (lowest lane) over the RCX ≥ 1
// values at RSI, with sc holding scale in every lane; lo, acc and t are
// clobbered. softmaxRow's first pass and flashMax.
func (s vecISA) maxPass(label string, sc, lo VecPhysical, acc, t []VecPhysical) {
	s.maxPassRows(label, []Register{RSI}, sc, lo, [][]VecPhysical{acc}, t)
}

// maxPassRows is maxPass over several rows of the same length at once,
// row r at ptrs[r] with its maximum in accs[r][0]: the rows' loads, maxima
// and reductions interleave, so one row's latency hides behind the
// other's work. Each row's maxima go through the same partial maxima, in
// the same order, as maxPass's.
func (s vecISA) maxPassRows(label string, ptrs []Register, sc, lo VecPhysical, accs [][]VecPhysical, t []VecPhysical) {
	VMOVUPS(k("neginf"), lo)
	for _, acc := range accs {
		for _, a := range acc {
			VMOVUPS(lo, a)
		}
	}
	s.stream(label, ptrs, func(u int, tail bool, at func(p, j int) Mem) {
		for r, acc := range accs {
			for j := 0; j < u; j++ {
				s.ld(at(r, j), t[j], tail)
				VMULPS(sc, t[j], t[j])
			}
			for j := 0; j < u; j++ {
				switch {
				case !tail:
					VMAXPS(t[j], acc[j], acc[j])
				case s.avx512:
					VMAXPS(t[j], acc[j], K1, acc[j])
				default:
					Comment("lanes ≥ n become −Inf")
					VBLENDVPS(s.mask(), t[j], lo, t[j])
					VMAXPS(t[j], acc[j], acc[j])
				}
			}
		}
	})
	for r, acc := range accs {
		s.reduce(VMAXPS, acc, t[r])
	}
}

// expSumPass emits dst[i] = exp(scale·x[i] − m) over the RCX ≥ 1 values
// of x at ptrs[0], dst at the last of ptrs (the same pointer for in
// place), and acc[0] = Σ_i dst[i] (lowest lane), summed over the acc
// partial sums; sc and m hold scale and m in every lane, lo, acc and t
// (and the exp registers after acc) are clobbered. softmaxRow's second
// pass and flashExp.
func (s vecISA) expSumPass(label string, ptrs []Register, sc, lo, m VecPhysical, acc, t []VecPhysical) {
	s.expSumPassRows(label, ptrs, [][2]int{{0, len(ptrs) - 1}}, sc, lo, []VecPhysical{m}, [][]VecPhysical{acc}, t, 3+s.unroll)
}

// expSumPassRows is expSumPass over several rows of the same length at
// once: row r reads x at ptrs[io[r][0]], writes dst at ptrs[io[r][1]],
// subtracts ms[r] and sums into accs[r][0], the rows' work interleaved
// (the exp registers, from s.v[expFrom] on, serve each row in turn; t
// from its second entry is clobbered by the reductions).
func (s vecISA) expSumPassRows(label string, ptrs []Register, io [][2]int, sc, lo VecPhysical, ms []VecPhysical, accs [][]VecPhysical, t []VecPhysical, expFrom int) {
	VMOVUPS(k("explo"), lo)
	for _, acc := range accs {
		for _, a := range acc {
			VXORPS(a, a, a)
		}
	}
	rs := s.expRegSet(s.unroll, expFrom)
	s.stream(label, ptrs, func(u int, tail bool, at func(p, j int) Mem) {
		for r, acc := range accs {
			for j := 0; j < u; j++ {
				s.ld(at(io[r][0], j), rs[j].r, tail)
				VMULPS(sc, rs[j].r, rs[j].r)
				VSUBPS(ms[r], rs[j].r, rs[j].r)
			}
			s.exp(rs[:u], lo)
			for j := 0; j < u; j++ {
				s.st(rs[j].p, at(io[r][1], j), tail)
				switch {
				case !tail:
					VADDPS(rs[j].p, acc[j], acc[j])
				case s.avx512:
					VADDPS(rs[j].p, acc[j], K1, acc[j])
				default:
					Comment("lanes ≥ n add 0")
					VANDPS(s.mask(), rs[j].p, rs[j].p)
					VADDPS(rs[j].p, acc[j], acc[j])
				}
			}
		}
	})
	for r, acc := range accs {
		s.reduce(VADDPS, acc, t[r])
	}
}

// softmaxRow emits the softmax of one row of scale·x in three passes.
func (s vecISA) softmaxRow() {
	s.softmaxRows("softmaxRow"+s.suffix, 1, true,
		"sets y[i] = exp(v[i] − m)/Σ_j exp(v[j] − m) for i < n, where v = scale·x (rounded) and m = max v;",
		"y is first written with the exponentials, then scaled by 1/Σ. n must be positive.")
}

// softmaxRows2 emits softmaxRow on two rows of the same length at once,
// each pass over both rows before the next: the reductions, the division
// and the latency of each pass's last vectors, which a row of a few
// hundred values waits on three times, then overlap between the rows.
// Every row's arithmetic is softmaxRow's, in the same order.
func (s vecISA) softmaxRows2() {
	s.softmaxRows("softmaxRows2"+s.suffix, 2, true,
		"sets y0 to the softmax of scale·x0 and y1 to that of scale·x1, each as softmaxRow"+s.suffix+" does,",
		"over n values each, the two rows' passes interleaved. n must be positive.")
}

// softmaxExpRow emits softmaxRow without its last pass: the
// exponentials and, at inv, 1/Σ, whose product softmaxRow stores.
func (s vecISA) softmaxExpRow() {
	s.softmaxRows("softmaxExpRow"+s.suffix, 1, false,
		"sets y[i] = exp(v[i] − m) for i < n, where v = scale·x (rounded) and m = max v, and *inv = 1/Σ_i y[i]:",
		"softmaxRow"+s.suffix+"'s first two passes, y[i]·*inv being its output bit for bit. n must be positive.")
}

// softmaxExpRows2 emits softmaxExpRow on two rows at once, as
// softmaxRows2 does softmaxRow.
func (s vecISA) softmaxExpRows2() {
	s.softmaxRows("softmaxExpRows2"+s.suffix, 2, false,
		"does what softmaxExpRow"+s.suffix+" does on x0 into y0 and inv[0], and on x1 into y1 and inv[1],",
		"the two rows' passes interleaved. n must be positive.")
}

// softmaxRows emits the softmax kernel name of rows rows (1 or 2) of n
// values each, x and y for one row, x0, y0, x1, y1 for two, in three
// passes over all the rows: m = max scale·x, y = exp(scale·x − m) and its
// sum Σ, y ·= 1/Σ. Without normalize it stops before the last pass and
// stores each row's 1/Σ at inv[r] (a last argument, inv *float32).
func (s vecISA) softmaxRows(name string, rows int, normalize bool, doc ...string) {
	xs, ys := []string{"x"}, []string{"y"}
	params := "x, y *float32"
	if rows == 2 {
		xs, ys = []string{"x0", "x1"}, []string{"y0", "y1"}
		params = "x0, y0, x1, y1 *float32"
	}
	sig := "func(n int, " + params + ", scale float32)"
	if !normalize {
		sig = "func(n int, " + params + ", scale float32, inv *float32)"
	}
	text(name, NOSPLIT, sig)
	Pragma("noescape")
	doc[0] = name + " " + doc[0]
	Doc(doc...)
	u := s.unroll
	Load(Param("n"), RDX)
	sc, lo := s.v[0], s.v[1]
	ms := s.v[2 : 2+rows] // each row's maximum, then its 1/Σ
	// The partial sums come first: the reductions' VEX forms reach only
	// the low 16 registers.
	accs := make([][]VecPhysical, rows)
	for r := range accs {
		accs[r] = s.v[2+rows+r*u : 2+rows+(r+1)*u]
	}
	t := s.v[2+rows+rows*u : 2+rows+(rows+1)*u]
	xr, yr := []Register{RSI, R8}[:rows], []Register{RDI, R9}[:rows]
	Comment("scale in every lane")
	loadFloat("scale", sc.AsX())
	s.bcast(sc, sc)

	Comment("pass 1: m = max_i scale·x[i], per row")
	MOVQ(RDX, RCX)
	for r := range rows {
		Load(Param(xs[r]), xr[r])
	}
	s.maxPassRows(name+"_max", xr, sc, lo, accs, t)
	for r := range rows {
		s.bcast(accs[r][0], ms[r])
	}

	Comment("pass 2: y[i] = exp(scale·x[i] − m), Σ in acc, per row")
	MOVQ(RDX, RCX)
	var ptrs []Register
	var io [][2]int
	for r := range rows {
		Load(Param(xs[r]), xr[r])
		Load(Param(ys[r]), yr[r])
		ptrs = append(ptrs, xr[r], yr[r])
		io = append(io, [2]int{2 * r, 2*r + 1})
	}
	s.expSumPassRows(name+"_exp", ptrs, io, sc, lo, ms, accs, t, 2+rows+rows*u)
	Comment("inv = 1/Σ in every lane, per row (in m's register)")
	inv := ms
	for r := range rows {
		VMOVSS(k("one"), inv[r].AsX())
		VDIVSS(accs[r][0].AsX(), inv[r].AsX(), inv[r].AsX())
	}
	if !normalize {
		Load(Param("inv"), RAX)
		for r := range rows {
			VMOVSS(inv[r].AsX(), Mem{Base: RAX, Disp: 4 * r})
		}
		s.end()
		return
	}
	for r := range rows {
		s.bcast(inv[r], inv[r])
	}

	Comment("pass 3: y[i] ·= inv, per row")
	MOVQ(RDX, RCX)
	for r := range rows {
		Load(Param(ys[r]), yr[r])
	}
	s.stream(name+"_norm", yr, func(v int, tail bool, at func(p, j int) Mem) {
		for r := range rows {
			for j := 0; j < v; j++ {
				s.ld(at(r, j), t[j], tail)
				VMULPS(inv[r], t[j], t[j])
				s.st(t[j], at(r, j), tail)
			}
		}
	})
	s.end()
}

// layerNormRow emits the LayerNorm of one row in three passes: the mean
// μ, then the corrected two-pass moments of d = x − μ (Chan, Golub and
// LeVeque, "Algorithms for computing the sample variance", 1983): with
// μ rounded to float32, δ = Σd/n is the part of the mean it lost, σ² =
// Σd²/n − δ², and the output uses (x − μ) − δ, so the result does not
// degrade with |μ|/σ.
func (s vecISA) layerNormRow() {
	name := "layerNormRow" + s.suffix
	text(name, NOSPLIT, "func(n int, x, gamma, beta, y *float32, eps float32)")
	Pragma("noescape")
	Doc(name+" sets y[i] = ((x[i] − μ) − δ)·r·gamma[i] + beta[i] for i < n, with μ = Σx/n, δ = Σ(x − μ)/n,",
		"σ² = Σ(x − μ)²/n − δ² and r = 1/sqrt(σ² + eps), the sums in float32 over several partial sums. n must be positive.")
	Load(Param("n"), RDX)
	mean, rstd, fn, lo := s.v[0], s.v[1], s.v[2], s.v[3]
	// The vectors reduce uses come first: its VEX forms reach only the
	// low 16 registers.
	acc := s.v[4 : 4+s.unroll]
	acc2 := s.v[4+s.unroll : 4+2*s.unroll]
	t := s.v[4+2*s.unroll : 4+3*s.unroll]
	g := s.v[4+3*s.unroll : 4+4*s.unroll]
	Comment("fn = float32(n)")
	VXORPS(fn.AsX(), fn.AsX(), fn.AsX())
	VCVTSI2SSQ(RDX, fn.AsX(), fn.AsX())

	Comment("pass 1: μ = Σ x / n")
	MOVQ(RDX, RCX)
	Load(Param("x"), RSI)
	for _, a := range acc {
		VXORPS(a, a, a)
	}
	s.stream(name+"_sum", []Register{RSI}, func(u int, tail bool, at func(p, j int) Mem) {
		for j := 0; j < u; j++ {
			s.ld(at(0, j), t[j], tail)
			VADDPS(t[j], acc[j], acc[j])
		}
	})
	s.reduce(VADDPS, acc, t[0])
	VDIVSS(fn.AsX(), acc[0].AsX(), mean.AsX())
	s.bcast(mean, mean)

	Comment("pass 2: Σ d and Σ d², d = x − μ (0 in lanes ≥ n)")
	MOVQ(RDX, RCX)
	Load(Param("x"), RSI)
	for j := range acc {
		VXORPS(acc[j], acc[j], acc[j])
		VXORPS(acc2[j], acc2[j], acc2[j])
	}
	s.stream(name+"_var", []Register{RSI}, func(u int, tail bool, at func(p, j int) Mem) {
		for j := 0; j < u; j++ {
			s.ld(at(0, j), t[j], tail)
			switch {
			case !tail:
				VSUBPS(mean, t[j], t[j])
			case s.avx512:
				VSUBPS_Z(mean, t[j], K1, t[j])
			default:
				VSUBPS(mean, t[j], t[j])
				VANDPS(s.mask(), t[j], t[j])
			}
			VADDPS(t[j], acc2[j], acc2[j])
			VFMADD231PS(t[j], t[j], acc[j])
		}
	})
	s.reduce(VADDPS, acc2, t[0])
	s.reduce(VADDPS, acc, t[0])
	Comment("δ = Σd/n; r = 1/sqrt(max(Σd²/n − δ², 0) + eps)")
	VDIVSS(fn.AsX(), acc2[0].AsX(), lo.AsX())
	VDIVSS(fn.AsX(), acc[0].AsX(), acc[0].AsX())
	VFNMADD231SS(lo.AsX(), lo.AsX(), acc[0].AsX())
	VXORPS(t[0].AsX(), t[0].AsX(), t[0].AsX())
	VMAXSS(t[0].AsX(), acc[0].AsX(), acc[0].AsX())
	loadFloat("eps", t[0].AsX())
	VADDSS(t[0].AsX(), acc[0].AsX(), acc[0].AsX())
	VSQRTSS(acc[0].AsX(), acc[0].AsX(), acc[0].AsX())
	VMOVSS(k("one"), rstd.AsX())
	VDIVSS(acc[0].AsX(), rstd.AsX(), rstd.AsX())
	s.bcast(rstd, rstd)
	s.bcast(lo, lo)

	Comment("pass 3: y = (((x − μ) − δ)·r)·gamma + beta")
	MOVQ(RDX, RCX)
	Load(Param("x"), RSI)
	Load(Param("gamma"), R8)
	Load(Param("beta"), R9)
	Load(Param("y"), RDI)
	s.stream(name+"_out", []Register{RSI, R8, R9, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		for j := 0; j < u; j++ {
			s.ld(at(0, j), t[j], tail)
			s.ld(at(1, j), g[j], tail)
			VSUBPS(mean, t[j], t[j])
			VSUBPS(lo, t[j], t[j])
			VMULPS(rstd, t[j], t[j])
		}
		for j := 0; j < u; j++ {
			s.ld(at(2, j), acc[j], tail)
			VFMADD213PS(acc[j], g[j], t[j])
			s.st(t[j], at(3, j), tail)
		}
	})
	s.end()
}
