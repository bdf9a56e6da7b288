package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// groupNormBlockedKernels emits GroupNorm's kernels on one block plane of
// the NCHW16c layout (n pixels, each a vector of 16 channels, the lanes):
// the per-lane moments and the per-lane affine map, the latter also with
// the swish fused, once per path. It uses vectorKernels' constants, so it
// runs after vectorKernels.
func groupNormBlockedKernels(zmm, ymm []VecPhysical) {
	for _, s := range []vecISA{
		{suffix: "AVX512", avx512: true, lanes: 16, bytes: 64, unroll: 4, v: zmm},
		{suffix: "AVX2", lanes: 8, bytes: 32, unroll: 2, v: ymm},
	} {
		s.momentsBlocked()
		s.affineBlocked(false)
		s.affineBlocked(true)
	}
}

// momentsBlocked emits
//
//	func momentsBlocked{AVX512,AVX2}(n int, x, shift *float32, s1, s2 *float64)
//
// the per-lane shifted sums of the n pixels of one NCHW16c block plane:
//
//	for p < n, l < 16: d = float64(x[16p+l]) − float64(shift[l]); s1[l] += d; s2[l] += d·d
//
// Each pixel is widened to float64 as it is loaded (VCVTPS2PD: two zmm or
// four ymm of float64), the widened shift subtracted (exact) and d and d²
// (one fused multiply-add) summed in the partial sums of its slot: four
// pixels per iteration on AVX-512, each with its own accumulators, so the
// additions are four independent chains per vector; one on AVX2, whose
// sixteen registers hold one slot (four vectors of d and four of d² are
// already four chains each). At the end the slots are added pairwise and
// the sums added to s1 and s2 (read, add, write back).
func (s vecISA) momentsBlocked() {
	name := "momentsBlocked" + s.suffix
	text(name, NOSPLIT, "func(n int, x, shift *float32, s1, s2 *float64)")
	Pragma("noescape")
	Doc(name+" adds to s1[l] and s2[l] the sums of d and d² over p < n, d = float64(x[16p+l]) − float64(shift[l]), l < 16,",
		"in float64 over several partial sums.")
	dp := 2 * blockLanes / s.lanes // float64 vectors per pixel
	half := s.bytes / 2            // bytes of float32 widened into one vector
	slots := min(4, (len(s.v)-dp)/(3*dp))
	sh := s.v[:dp]
	acc := s.v[dp : dp+slots*dp] // slot q, vector i: acc[q·dp + i]
	acc2 := s.v[dp+slots*dp : dp+2*slots*dp]
	t := s.v[dp+2*slots*dp : dp+3*slots*dp]
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("shift"), RDX)
	Comment("shift widened to float64; the partial sums = 0")
	for i, v := range sh {
		VCVTPS2PD(Mem{Base: RDX, Disp: i * half}, v)
	}
	for j := range acc {
		VXORPD(acc[j], acc[j], acc[j])
		VXORPD(acc2[j], acc2[j], acc2[j])
	}
	pixelLoop(name, slots, func(u int) {
		Comment(fmt.Sprintf("%d pixel(s): d = float64(x) − shift; acc += d; acc2 += d·d", u))
		for j := 0; j < u*dp; j++ {
			VCVTPS2PD(Mem{Base: RSI, Disp: j * half}, t[j])
		}
		for j := 0; j < u*dp; j++ {
			VSUBPD(sh[j%dp], t[j], t[j])
			VADDPD(t[j], acc[j], acc[j])
			VFMADD231PD(t[j], t[j], acc2[j])
		}
		ADDQ(addImm(u*blockLanes*4), RSI)
	})
	Comment("add the slots pairwise, then s1 += acc, s2 += acc2")
	for w := 1; w < slots; w *= 2 {
		for q := 0; q+w < slots; q += 2 * w {
			for i := 0; i < dp; i++ {
				VADDPD(acc[(q+w)*dp+i], acc[q*dp+i], acc[q*dp+i])
				VADDPD(acc2[(q+w)*dp+i], acc2[q*dp+i], acc2[q*dp+i])
			}
		}
	}
	Load(Param("s1"), RDI)
	Load(Param("s2"), RDX)
	for i := 0; i < dp; i++ {
		m1, m2 := Mem{Base: RDI, Disp: i * s.bytes}, Mem{Base: RDX, Disp: i * s.bytes}
		VADDPD(m1, acc[i], acc[i])
		VMOVUPD(acc[i], m1)
		VADDPD(m2, acc2[i], acc2[i])
		VMOVUPD(acc2[i], m2)
	}
	s.end()
}

// affineBlocked emits
//
//	func affine{,SiLU}Blocked{AVX512,AVX2}(n int, a, b, x, y *float32)
//
// the per-lane affine map of the n pixels of one NCHW16c block plane,
// then, with silu, the swish:
//
//	for p < n, l < 16: v = a[l]·x[16p+l] + b[l]; y[16p+l] = silu ? v·sigmoid(v) : v
//
// each value computed by the instructions affine and affineSiLU use on
// one value (v in one fused multiply-add, the swish by gateVecs), so the
// results are theirs bit for bit. a and b stay in registers (one zmm or
// two ymm each); the vectors of s.unroll values go per iteration (four
// pixels on AVX-512, one on AVX2). y may be x.
func (s vecISA) affineBlocked(silu bool) {
	name, what := "affineBlocked"+s.suffix, "v"
	if silu {
		name, what = "affineSiLUBlocked"+s.suffix, "v·sigmoid(v)"
	}
	text(name, NOSPLIT, "func(n int, a, b, x, y *float32)")
	Pragma("noescape")
	doc := []string{fmt.Sprintf("%s sets y[16p+l] = %s for p < n, l < 16, v = a[l]·x[16p+l] + b[l] (one rounding),", name, what)}
	if silu {
		doc = append(doc, "the swish computed as affineSiLU"+s.suffix+" computes it, v·(v ≥ 0 ? 1 : e)/(1 + e) with e = exp(−|v|).")
	} else {
		doc[0] = doc[0][:len(doc[0])-1] + "; y may be x."
	}
	Doc(doc...)
	vp := blockLanes / s.lanes // vectors per pixel
	ppi := s.unroll / vp       // pixels per iteration
	// sigmoidGate's registers: −104, the values, their exp registers,
	// then a and b.
	lo := s.v[0]
	xs := s.v[1 : 1+s.unroll]
	rs := s.expRegSet(s.unroll, 1+s.unroll)
	va := s.v[1+4*s.unroll : 1+4*s.unroll+vp]
	vb := s.v[1+4*s.unroll+vp : 1+4*s.unroll+2*vp]
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("y"), RDI)
	Load(Param("a"), RAX)
	Load(Param("b"), RDX)
	Comment("a and b, one value per lane")
	for i := 0; i < vp; i++ {
		VMOVUPS(Mem{Base: RAX, Disp: i * s.bytes}, va[i])
		VMOVUPS(Mem{Base: RDX, Disp: i * s.bytes}, vb[i])
	}
	if silu {
		VMOVUPS(k("explo"), lo)
	}
	pixelLoop(name, ppi, func(u int) {
		nv := u * vp
		store := func(j int) { VMOVUPS(xs[j], Mem{Base: RDI, Disp: j * s.bytes}) }
		Comment("x = a·x + b")
		for j := 0; j < nv; j++ {
			VMOVUPS(Mem{Base: RSI, Disp: j * s.bytes}, xs[j])
			VFMADD213PS(vb[j%vp], va[j%vp], xs[j])
		}
		if silu {
			s.gateVecs("", xs[:nv], rs[:nv], lo, nil, store)
		} else {
			for j := 0; j < nv; j++ {
				store(j)
			}
		}
		ADDQ(addImm(u*blockLanes*4), RSI)
		ADDQ(addImm(u*blockLanes*4), RDI)
	})
	s.end()
}
