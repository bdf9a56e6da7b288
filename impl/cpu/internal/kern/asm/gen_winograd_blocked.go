package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The Winograd F(2×2, 3×3) transforms on the NCHW16c layout
// (winograd_blocked.go in package kern gives the plain loops): a pixel is
// a vector of 16 channels, so every operation of winogradInput and
// winogradOutput is vertical over the channels, one zmm (two ymm) per
// pixel, and nothing is interleaved. The arithmetic is theirs, operation
// for operation, so the kernels round as the Go twins do.

// winogradBlockedKernels emits the input and output transforms on NCHW16c
// rows for AVX-512 and AVX2.
func winogradBlockedKernels(zmm, ymm []VecPhysical) {
	winogradInputBlockedAVX512(zmm)
	avx512 := vecISA{suffix: "AVX512", avx512: true, lanes: 16, bytes: 64, v: zmm}
	avx2 := vecISA{suffix: "AVX2", lanes: 8, bytes: 32, v: ymm}
	avx2.winogradInputBlockedHalves()
	avx512.winogradOutputBlocked()
	avx2.winogradOutputBlocked()
}

// winogradBlockedRow is the pixel d[a][b] of the tile at SI, b·64 + disp
// bytes along row a (rows R9 bytes apart, R10 = 3·R9).
func winogradBlockedRow(a, b, disp int) Mem {
	m := Mem{Base: RSI, Disp: 64*b + disp}
	switch a {
	case 1:
		m.Index, m.Scale = R9, 1
	case 2:
		m.Index, m.Scale = R9, 2
	case 3:
		m.Index, m.Scale = R10, 1
	}
	return m
}

// winogradInputBlockedArgs loads the arguments of an input transform: n
// in CX, x in SI, rowStride in R9 (bytes) and R10 = 3·rowStride, v in DI,
// vStride in BX (bytes), R14 = 4·vStride (the next ξ), DX = 12·vStride.
func winogradInputBlockedArgs() {
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	Load(Param("rowStride"), R9)
	Load(Param("v"), RDI)
	Load(Param("vStride"), RBX)
	SHLQ(U8(2), R9)
	SHLQ(U8(2), RBX)
	LEAQ(Mem{Base: R9, Index: R9, Scale: 2}, R10)   // 3·rowStride
	LEAQ(Mem{Base: RBX, Index: RBX, Scale: 1}, R14) // 2·vStride
	SHLQ(U8(1), R14)                                // 4·vStride: the next ξ
	LEAQ(Mem{Base: R14, Index: R14, Scale: 2}, RDX) // 12·vStride
}

// winogradInputBlockedAVX512 emits
//
//	func winogradInputBlockedAVX512(n int, x *float32, rowStride int, v *float32, vStride int)
//
// the input transform of n tiles along a row of tiles of one channel
// block (WinogradInputBlocked): for k < n, l < 16,
//
//	d[a][b] = x[a·rowStride + (2k + b)·16 + l]
//	X[a] = (d[a][0]−d[a][2], d[a][1]+d[a][2], d[a][2]−d[a][1], d[a][1]−d[a][3])
//	v[(4ξ+ν)·vStride + 16k + l] = (X[0][ν]−X[2][ν], X[1][ν]+X[2][ν], X[2][ν]−X[1][ν], X[1][ν]−X[3][ν])[ξ]
//
// A tile's 16 pixels are 16 zmm, one column of four rows in each of four
// groups; tiles are 2 pixels apart, so a tile's columns 2 and 3 are the
// next tile's 0 and 1. Two tiles per iteration swap the roles of the
// groups (A B C D, then C D A B), so each pixel is loaded once; a last
// odd tile takes one more pass (n = 28 on the AVX-512 Xeon: 332 ns, against
// 420 ns loading each pixel where an operation uses it, as the AVX2 kernel
// does). n must be positive.
func winogradInputBlockedAVX512(zmm []VecPhysical) {
	name := "winogradInputBlockedAVX512"
	text(name, NOSPLIT, "func(n int, x *float32, rowStride int, v *float32, vStride int)")
	Pragma("noescape")
	Doc(name + " writes the Winograd input transform of n tiles of one NCHW16c channel block: v[(4ξ+ν)·vStride + 16k + l] = (Bᵀ d B)[ξ][ν], d[a][b] = x[a·rowStride + (2k+b)·16 + l], l < 16.")
	winogradInputBlockedArgs()
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	group := func(i int) []VecPhysical { return zmm[4*i : 4*i+4] } // one column, rows 0-3
	ga, gb, gc, gd := group(0), group(1), group(2), group(3)
	x, y := zmm[16:20], zmm[20:24]
	loadCol := func(g []VecPhysical, b int) {
		for a := 0; a < 4; a++ {
			VMOVUPS(winogradBlockedRow(a, b, 0), g[a])
		}
	}
	// tile emits the transform of the tile whose columns are in c[0..3],
	// stored disp bytes after DI.
	tile := func(c [4][]VecPhysical, disp int) {
		MOVQ(RDI, R12)
		for nu := 0; nu < 4; nu++ {
			winogradX(nu, "rows", func(a, b int) Op { return c[b][a] }, x)
			winogradStoreV(x, y, disp)
			if nu < 3 {
				ADDQ(RBX, R12)
			}
		}
	}
	Comment("columns 0 and 1 of the first tile")
	loadCol(ga, 0)
	loadCol(gb, 1)
	Label(name + "_pairs")
	CMPQ(RCX, U8(2))
	JL(LabelRef(name + "_one"))
	Comment("tile k: columns 2k…2k+3 in A B C D")
	loadCol(gc, 2)
	loadCol(gd, 3)
	tile([4][]VecPhysical{ga, gb, gc, gd}, 0)
	Comment("tile k+1: columns 2k+2…2k+5 in C D A B")
	loadCol(ga, 4)
	loadCol(gb, 5)
	tile([4][]VecPhysical{gc, gd, ga, gb}, 64)
	ADDQ(U32(256), RSI)
	ADDQ(U32(128), RDI)
	SUBQ(U8(2), RCX)
	JMP(LabelRef(name + "_pairs"))
	Label(name + "_one")
	TESTQ(RCX, RCX)
	JZ(LabelRef(name + "_done"))
	Comment("the last tile, of an odd count")
	loadCol(gc, 2)
	loadCol(gd, 3)
	tile([4][]VecPhysical{ga, gb, gc, gd}, 0)
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// winogradInputBlockedHalves emits
//
//	func winogradInputBlocked{suffix}(n int, x *float32, rowStride int, v *float32, vStride int)
//
// winogradInputBlockedAVX512's transform on narrower vectors: each tile
// in 16/lanes passes of lanes channels, each as winogradInput does one
// vector of tiles (X[a][ν] from two pixels of row a, one from memory), so
// it needs eight registers. n must be positive.
func (s vecISA) winogradInputBlockedHalves() {
	name := "winogradInputBlocked" + s.suffix
	text(name, NOSPLIT, "func(n int, x *float32, rowStride int, v *float32, vStride int)")
	Pragma("noescape")
	Doc(name + " writes the Winograd input transform of n tiles of one NCHW16c channel block: v[(4ξ+ν)·vStride + 16k + l] = (Bᵀ d B)[ξ][ν], d[a][b] = x[a·rowStride + (2k+b)·16 + l], l < 16.")
	winogradInputBlockedArgs()
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	x, y := s.v[0:4], s.v[4:8]
	Label(name + "_loop")
	for h := 0; h < blockLanes/s.lanes; h++ {
		disp := h * s.bytes
		MOVQ(RDI, R12)
		for nu := 0; nu < 4; nu++ {
			winogradX(nu, "rows", func(a, b int) Op { return winogradBlockedRow(a, b, disp) }, x)
			winogradStoreV(x, y, disp)
			if nu < 3 {
				ADDQ(RBX, R12)
			}
		}
	}
	ADDQ(U32(128), RSI)
	ADDQ(U32(64), RDI)
	DECQ(RCX)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
	s.end()
}

// winogradOutputBlocked emits
//
//	func winogradOutputBlocked{suffix}(n int, m *float32, mStride int, bias, res, y *float32, rowStride int, relu int)
//
// the output transform of n tiles along a row of tiles of one output
// channel block (WinogradOutputBlocked), winogradOutput's arithmetic per
// lane, then the residual and the clamp: for k < n, l < 16,
//
//	M[ξ][ν] = m[(4ξ+ν)·mStride + 16k + l]
//	S[ξ] = ((M[ξ][0]+M[ξ][1])+M[ξ][2], (M[ξ][1]−M[ξ][2])−M[ξ][3])
//	Y[0][j] = ((S[0][j]+S[1][j])+S[2][j]) + bias[l]
//	Y[1][j] = ((S[1][j]−S[2][j])−S[3][j]) + bias[l]
//	at o = i·rowStride + (2k+j)·16 + l: v = Y[i][j]; v += res[o] (res not nil); v = max(v, 0) (relu != 0, NaN kept); y[o] = v
//
// A tile takes 16/lanes passes of lanes channels. Whether res is nil and
// relu is set is tested once: each of the four combinations has its own
// loop. n must be positive.
func (s vecISA) winogradOutputBlocked() {
	name := "winogradOutputBlocked" + s.suffix
	text(name, NOSPLIT, "func(n int, m *float32, mStride int, bias, res, y *float32, rowStride int, relu int)")
	Pragma("noescape")
	Doc(name + " writes the Winograd output transform of n tiles of one NCHW16c channel block: at o = i·rowStride + (2k+j)·16 + l, " +
		"y[o] = relu((Aᵀ M A)[i][j] + bias[l] + res[o]), M[ξ][ν] = m[(4ξ+ν)·mStride + 16k + l], l < 16; res when not nil, relu (max(v, 0), NaN kept) when relu != 0.")
	parts := blockLanes / s.lanes
	Load(Param("n"), RCX)
	Load(Param("m"), RSI)
	Load(Param("mStride"), R9)
	Load(Param("bias"), R8)
	Load(Param("res"), RDX)
	Load(Param("y"), RDI)
	Load(Param("rowStride"), R10)
	Load(Param("relu"), RAX)
	SHLQ(U8(2), R9)
	SHLQ(U8(2), R10)
	LEAQ(Mem{Base: R9, Index: R9, Scale: 2}, R11) // 3·mStride
	LEAQ(Mem{Base: R9, Index: R9, Scale: 1}, R13) // 2·mStride
	SHLQ(U8(1), R13)                              // 4·mStride: the next ξ
	t := s.v[0:4]
	sv := [4][2]VecPhysical{{s.v[4], s.v[5]}, {s.v[6], s.v[7]}, {s.v[8], s.v[9]}, {s.v[10], s.v[11]}}
	bias := s.v[12 : 12+parts]
	zero := s.v[12+parts]
	TESTQ(RCX, RCX)
	JLE(LabelRef(name + "_done"))
	Comment("the bias, and zero for the clamp")
	for h := 0; h < parts; h++ {
		VMOVUPS(Mem{Base: R8, Disp: h * s.bytes}, bias[h])
	}
	if s.avx512 {
		VPXORD(zero, zero, zero)
	} else {
		VXORPS(zero, zero, zero)
	}
	TESTQ(RDX, RDX)
	JZ(LabelRef(name + "_nores"))
	TESTQ(RAX, RAX)
	JZ(LabelRef(name + "_res"))
	JMP(LabelRef(name + "_res_relu"))
	Label(name + "_nores")
	TESTQ(RAX, RAX)
	JNZ(LabelRef(name + "_relu"))

	// loop emits the loop over the tiles with or without res and the
	// clamp, at label name_suffix(label), ending with a jump to name_done.
	loop := func(label string, res, relu bool) {
		Label(name + label)
		for h := 0; h < parts; h++ {
			disp := h * s.bytes
			MOVQ(RSI, R12)
			winogradY(t, sv, bias[h], R13, disp)
			switch {
			case res && relu:
				Comment("y = max(Y + res, 0), Y kept when NaN; row i at i·rowStride, column j at pixel 2k+j")
			case res:
				Comment("y = Y + res; row i at i·rowStride, column j at pixel 2k+j")
			case relu:
				Comment("y = max(Y, 0), Y kept when NaN; row i at i·rowStride, column j at pixel 2k+j")
			default:
				Comment("y = Y; row i at i·rowStride, column j at pixel 2k+j")
			}
			for i := 0; i < 2; i++ {
				for j := 0; j < 2; j++ {
					v := t[2*i+j]
					at := func(base Register) Mem {
						m := Mem{Base: base, Disp: j*64 + disp}
						if i == 1 {
							m.Index, m.Scale = R10, 1
						}
						return m
					}
					if res {
						VADDPS(at(RDX), v, v)
					}
					if relu {
						VMAXPS(v, zero, v)
					}
					VMOVUPS(v, at(RDI))
				}
			}
		}
		ADDQ(U32(64), RSI)
		ADDQ(U32(128), RDI)
		if res {
			ADDQ(U32(128), RDX)
		}
		DECQ(RCX)
		JNZ(LabelRef(name + label))
		JMP(LabelRef(name + "_done"))
	}
	loop("_plain", false, false)
	loop("_relu", false, true)
	loop("_res", true, false)
	loop("_res_relu", true, true)
	Label(name + "_done")
	s.end()
}
