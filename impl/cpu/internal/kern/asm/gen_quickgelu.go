package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// quickGELU emits y = x·sigmoid(1.702·x), CLIP's QuickGELU, with the exp
// of softmax on a non-positive argument only: for e = exp(−|1.702·x|),
// sigmoid(1.702·x) is 1/(1 + e) where x ≥ 0 and e/(1 + e) elsewhere, so
//
//	y = x·(x ≥ 0 ? 1 : e) / (1 + e)
//
// NaN stays NaN; +Inf gives +Inf and −Inf gives NaN (−Inf·0), as
// PyTorch's x * torch.sigmoid(1.702 * x) does.
func (s vecISA) quickGELU() {
	name := "quickGELU" + s.suffix
	s.sigmoidGate(name, "c1702", false, name+" sets y[i] = x[i]·sigmoid(1.702·x[i]) for i < n, computed as x·(x ≥ 0 ? 1 : e)/(1 + e)",
		"with e = exp(−|1.702·x|).")
}

// silu emits y = x·sigmoid(x), the swish of VQGAN's nonlinearity, the
// same way with e = exp(−|x|).
func (s vecISA) silu() {
	name := "silu" + s.suffix
	s.sigmoidGate(name, "", false, name+" sets y[i] = x[i]·sigmoid(x[i]) for i < n, computed as x·(x ≥ 0 ? 1 : e)/(1 + e)",
		"with e = exp(−|x|).")
}

// sigmoidGate emits y = x·sigmoid(a·x) with a the constant named slope
// (a = 1 when slope is ""). With affine the kernel takes two more
// arguments, func(n int, a, b float32, x, y *float32), and gates
// x' = a·x[i] + b (one fused multiply-add) instead of x[i].
func (s vecISA) sigmoidGate(name, slope string, affine bool, doc ...string) {
	if affine {
		text(name, NOSPLIT, "func(n int, a, b float32, x, y *float32)")
	} else {
		text(name, NOSPLIT, "func(n int, x, y *float32)")
	}
	Pragma("noescape")
	Doc(doc...)
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDI)
	lo := s.v[0]
	VMOVUPS(k("explo"), lo)
	xs := s.v[1 : 1+s.unroll]
	rs := s.expRegSet(s.unroll, 1+s.unroll)
	va, vb := s.v[1+4*s.unroll], s.v[2+4*s.unroll]
	if affine {
		Comment("a and b in every lane (loaded through a low register: MOVSS reaches X0-X15 only)")
		loadFloat("a", xs[0].AsX())
		s.bcast(xs[0], va)
		loadFloat("b", xs[0].AsX())
		s.bcast(xs[0], vb)
	}
	s.stream(name, []Register{RSI, RDI}, func(u int, tail bool, at func(p, j int) Mem) {
		var load func(j int)
		if affine {
			Comment("x = a·x + b")
			for j := 0; j < u; j++ {
				s.ld(at(0, j), xs[j], tail)
				VFMADD213PS(vb, va, xs[j])
			}
		} else {
			load = func(j int) { s.ld(at(0, j), xs[j], tail) }
		}
		s.gateVecs(slope, xs[:u], rs[:u], lo, load, func(j int) { s.st(xs[j], at(1, j), tail) })
	})
	s.end()
}

// gateVecs emits xs[j] = xs[j]·sigmoid(c·xs[j]) for every vector of xs,
// with c the constant named slope (c = 1 when slope is ""), as
//
//	x·(x ≥ 0 ? 1 : e)/(1 + e),  e = exp(−|c·x|)
//
// the vectors interleaved: rs are their exp registers and lo holds −104
// (explo) in every lane. load(j), when not nil, is emitted where vector j
// is first read (loading xs[j]), store(j) as soon as xs[j] holds its
// result. sigmoidGate and the NCHW16c affineBlocked kernels share it, so
// that they give the same bits.
func (s vecISA) gateVecs(slope string, xs []VecPhysical, rs []expRegs, lo VecPhysical, load, store func(j int)) {
	if slope != "" {
		Comment("r = −|1.702·x|")
	} else {
		Comment("r = −|x|")
	}
	for j := range xs {
		if load != nil {
			load(j)
		}
		src := xs[j]
		if slope != "" {
			VMULPS(k(slope), xs[j], rs[j].r)
			src = rs[j].r
		}
		if s.avx512 {
			VPORD(k("signmask"), src, rs[j].r)
		} else {
			VORPS(k("signmask"), src, rs[j].r)
		}
	}
	s.exp(rs, lo)
	Comment("n = x ≥ 0 ? 1 : e;  r = 1 + e;  y = x·n / r")
	for j := range xs {
		e := rs[j]
		if s.avx512 {
			VCMPPS(Imm(0x1d), k("zero"), xs[j], K2) // x ≥ 0, ordered
			VMOVAPS(e.p, e.n)
			VMOVUPS(k("one"), K2, e.n)
		} else {
			VCMPPS(Imm(0x1d), k("zero"), xs[j], e.r)
			VBLENDVPS(e.r, k("one"), e.p, e.n)
		}
		VADDPS(k("one"), e.p, e.r)
		VMULPS(e.n, xs[j], xs[j])
		VDIVPS(e.r, xs[j], xs[j])
		store(j)
	}
}
