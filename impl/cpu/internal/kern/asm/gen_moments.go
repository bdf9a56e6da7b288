package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// moments emits
//
//	func NAME(n int, x *float32, shift float32, sums *float64)
//
// the float64 sums of GroupNorm's statistics: with d = float64(x[i]) −
// float64(shift) (exact),
//
//	sums[0] = Σ_{i<n} d,  sums[1] = Σ_{i<n} d²
//
// over n a multiple of 8 (the caller adds the rest), with 4 partial sums
// of each in vectors of float64 lanes (8 on AVX-512, 4 on AVX2), so the
// additions are not one dependency chain. The floats are widened to
// float64 as they are loaded (VCVTPS2PD).
func (s vecISA) moments() {
	name := "moments" + s.suffix
	text(name, NOSPLIT, "func(n int, x *float32, shift float32, sums *float64)")
	Pragma("noescape")
	Doc(name+" sets sums[0] = Σ d and sums[1] = Σ d² over i < n, d = float64(x[i]) − float64(shift),",
		"in float64 over several partial sums; n must be a multiple of 8.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("sums"), RDI)
	const parts = 4
	sh := s.v[0]
	acc := s.v[1 : 1+parts]
	acc2 := s.v[1+parts : 1+2*parts]
	t := s.v[1+2*parts : 1+3*parts]
	Comment("shift as float64 in every lane")
	loadFloat("shift", sh.AsX())
	VCVTSS2SD(sh.AsX(), sh.AsX(), sh.AsX())
	VBROADCASTSD(sh.AsX(), sh)
	for j := range acc {
		VXORPD(acc[j], acc[j], acc[j])
		VXORPD(acc2[j], acc2[j], acc2[j])
	}
	// Each vector holds lanes/2 float64 values, read from bytes/2 bytes
	// of floats.
	per, bytes := s.lanes/2, s.bytes/2
	body := func(u int) {
		for j := 0; j < u; j++ {
			VCVTPS2PD(Mem{Base: RSI, Disp: j * bytes}, t[j])
		}
		for j := 0; j < u; j++ {
			VSUBPD(sh, t[j], t[j])
			VADDPD(t[j], acc[j], acc[j])
			VFMADD231PD(t[j], t[j], acc2[j])
		}
		ADDQ(U32(uint32(u*bytes)), RSI)
		SUBQ(U32(uint32(u*per)), RCX)
	}
	Label(name + "_blocks")
	CMPQ(RCX, U32(uint32(parts*per)))
	JB(LabelRef(name + "_vectors"))
	body(parts)
	JMP(LabelRef(name + "_blocks"))
	Label(name + "_vectors")
	CMPQ(RCX, U32(uint32(per)))
	JB(LabelRef(name + "_done"))
	body(1)
	JMP(LabelRef(name + "_vectors"))
	Label(name + "_done")
	Comment("fold the partial sums: sums[0] = Σ acc, sums[1] = Σ acc2")
	for i, a := range [][]VecPhysical{acc, acc2} {
		s.reduce64(a, t[0])
		VMOVSD(a[0].AsX(), Mem{Base: RDI, Disp: 8 * i})
	}
	s.end()
}

// reduce64 adds the float64 vectors acc into the scalar acc[0].AsX(),
// using tmp.
func (s vecISA) reduce64(acc []VecPhysical, tmp VecPhysical) {
	for w := 1; w < len(acc); w *= 2 {
		for i := 0; i+w < len(acc); i += 2 * w {
			VADDPD(acc[i+w], acc[i], acc[i])
		}
	}
	a := acc[0]
	if s.avx512 {
		VEXTRACTF64X4(Imm(1), a, tmp.AsY())
		VADDPD(tmp.AsY(), a.AsY(), a.AsY())
	}
	VEXTRACTF128(Imm(1), a.AsY(), tmp.AsX())
	VADDPD(tmp.AsX(), a.AsX(), a.AsX())
	VUNPCKHPD(a.AsX(), a.AsX(), tmp.AsX())
	VADDSD(tmp.AsX(), a.AsX(), a.AsX())
}

// affine emits y[i] = a·x[i] + b for i < n (one fused multiply-add):
// GroupNorm's normalize, scale and shift of one channel.
func (s vecISA) affine() {
	name := "affine" + s.suffix
	text(name, NOSPLIT, "func(n int, a, b float32, x, y *float32)")
	Pragma("noescape")
	Doc(name + " sets y[i] = a·x[i] + b for i < n, with one rounding (fused multiply-add).")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDI)
	va, vb := s.v[2*s.unroll], s.v[2*s.unroll+1]
	Comment("a and b in every lane")
	loadFloat("a", va.AsX())
	s.bcast(va, va)
	loadFloat("b", vb.AsX())
	s.bcast(vb, vb)
	xs := s.v[:s.unroll]
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		for j := 0; j < u; j++ {
			s.ld(at(0, j), xs[j], tail)
		}
		for j := 0; j < u; j++ {
			VFMADD213PS(vb, va, xs[j])
			s.st(xs[j], at(1, j), tail)
		}
	})
	s.end()
}

// affineSiLU emits y[i] = silu(a·x[i] + b), GroupNorm with VQGAN's swish
// fused: the affine value rounded once, then silu's sigmoid gate.
func (s vecISA) affineSiLU() {
	name := "affineSiLU" + s.suffix
	s.sigmoidGate(name, "", true, name+" sets y[i] = v·sigmoid(v) for i < n, v = a·x[i] + b (one rounding),",
		"computed as v·(v ≥ 0 ? 1 : e)/(1 + e) with e = exp(−|v|).")
}
