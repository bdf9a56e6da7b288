// gen writes the SIMD kernels of package kern. From impl/cpu/internal/kern:
//
//	go generate
//
// which runs, in this directory,
//
//	go run . -out ../simd_amd64.s -stubs ../simd_stub_amd64.go -pkg kern
package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	zmm := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
	ymm := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	gemmKernel("gemm12x32AVX512", 12, 12, 2, zmm, 64, aPacked)
	gemmKernel("gemm6x16AVX2", 6, 6, 2, ymm, 32, aPacked)
	// The last rows of an activation (197 tokens are 16 tiles of 12 and
	// 5 rows) in its zero-padded 12-row panel, without computing 12.
	gemmKernel("gemm4x32AVX512", 4, 12, 2, zmm, 64, aPacked)
	gemmKernel("gemm8x32AVX512", 8, 12, 2, zmm, 64, aPacked)
	gemmKernel("gemmDirect12x32AVX512", 12, 12, 2, zmm, 64, aDirect)
	gemmKernel("gemmDirect6x16AVX2", 6, 6, 2, ymm, 32, aDirect)
	gemmKernel("gemmTaps12x32AVX512", 12, 12, 2, zmm, 64, bTaps)
	gemmKernel("gemmTaps6x16AVX2", 6, 6, 2, ymm, 32, bTaps)
	// A convolution's last output channels (64 = 5·12 + 4).
	gemmKernel("gemmTaps4x32AVX512", 4, 12, 2, zmm, 64, bTaps)
	gemmKernel("gemmTaps8x32AVX512", 8, 12, 2, zmm, 64, bTaps)
	bf16Kernels(zmm)  // gen_bf16.go: VDPBF16PS microkernels
	amxKernels()      // gen_amx.go: the AMX-BF16 microkernel
	vectorKernels()   // gen_vector.go: elementwise and row kernels
	flashKernels()    // gen_flash.go: the fused attention's online-softmax rows
	transposeStrip()  // gen_transpose.go
	copyTaps12()      // gen_copy.go
	transposeRows(12) // gen_copy.go: A panels
	transposeRows(16) // Bᵀ panels, AVX2
	transposeRows(32) // Bᵀ panels, AVX-512
	rowPanels(16)     // gen_copy.go: B panels from rows, AVX2
	rowPanels(32)     // B panels from rows, AVX-512

	convBlockedKernels(zmm)           // gen_conv_blocked.go: NCHW16c convolution tiles and the 2×2 pool
	groupNormBlockedKernels(zmm, ymm) // gen_groupnorm_blocked.go: GroupNorm's moments and affine on NCHW16c planes
	winogradBlockedKernels(zmm, ymm)  // gen_winograd_blocked.go: the Winograd F(2×2,3×3) transforms on NCHW16c rows
	// Row tiles of 9 to 11 rows, packed and in place: a row block that
	// twelve does not divide goes in tiles of nearly equal height (77
	// tokens as seven tiles of 11) rather than full tiles and a short one.
	for rows := 9; rows <= 11; rows++ {
		gemmKernel(fmt.Sprintf("gemm%dx32AVX512", rows), rows, 12, 2, zmm, 64, aPacked)
		gemmKernel(fmt.Sprintf("gemmDirect%dx32AVX512", rows), rows, 12, 2, zmm, 64, aDirect)
	}
	Generate()
}

// text starts the function name as TEXT does, but at a 64-byte boundary
// (PCALIGN): the linker places functions at multiples of 32 bytes only,
// so a change anywhere in the package could move every kernel's loops by
// half a cache line. That ran the GELU epilogue at half its speed on an
// AMD EPYC (Zen 5) and DeiT-Ti's first MLP layer 10% slower.
func text(name string, a attr.Attribute, sig string) {
	TEXT(name, a, sig)
	Instruction(&ir.Instruction{Opcode: "PCALIGN", Operands: []Op{Imm(64)}})
}

// addImm is x as an ADDQ immediate: avo types 256 as a 16-bit constant,
// which ADDQ has no form for.
func addImm(x int) Constant {
	if x < 256 {
		return Imm(uint64(x))
	}
	return U32(x)
}

// pixelLoop emits the loop over the n pixels in CX: groups of ppi pixels
// while that many remain (when ppi > 1), then one at a time; body(u)
// emits the work on u pixels and advances the pointers past them. CX is
// consumed; the loop ends at label_done.
func pixelLoop(label string, ppi int, body func(u int)) {
	if ppi > 1 {
		Label(label + "_blocks")
		CMPQ(RCX, U8(ppi))
		JB(LabelRef(label + "_one"))
		body(ppi)
		SUBQ(U8(ppi), RCX)
		JMP(LabelRef(label + "_blocks"))
	}
	Label(label + "_one")
	TESTQ(RCX, RCX)
	JZ(LabelRef(label + "_done"))
	body(1)
	DECQ(RCX)
	JMP(LabelRef(label + "_one"))
	Label(label + "_done")
}

// stepsPerIteration is how many steps of k a microkernel of vectors
// width bytes wide takes per loop iteration (a remainder loop takes the
// rest one at a time). The AVX2 kernels take four: on the AMD EPYC (Zen 3,
// AVX2 only) that ran ViT's and DETR's GEMMs 1.06-1.2× faster than one
// step (interleaved, two threads; two steps ran 3-6% slower than four,
// eight no faster); their 12 FMAs a step leave the loop's own
// instructions a larger share than the AVX-512 kernels' 24, which take one.
func stepsPerIteration(width int) int {
	if width == 32 {
		return 4
	}
	return 1
}

// operands says where a microkernel reads its operands from.
type operands int

const (
	aPacked     operands = iota // A and B packed in panels
	aDirect                     // A read in place from its rows, B packed
	bTaps                       // A packed, B's rows read in place at tap offsets
	aDirectBF16                 // aDirect on bf16 pairs, with VDPBF16PS (AVX512_BF16)
)

// gemmKernel emits
//
//	func NAME(kc int, a, b, c *float32, ldc int, accumulate int)
//
// the register-blocked microkernel of the packed GEMM: with a the packed
// panel of MR rows (a[p·MR + r]) and b the packed panel of NR = nv·lanes
// columns (b[p·NR + j]), it computes for r < MR, j < NR
//
//	s := Σ_{p<kc} a[p·MR+r] · b[p·NR+j]
//	c[r·ldc+j] = s, or c[r·ldc+j] += s when accumulate != 0
//
// Each step loads nv vectors of b, broadcasts each of the MR values of a
// and issues MR·nv FMAs into the accumulators, which stay in registers for
// the whole panel. kc must be positive.
//
// Without taps the kernel also finishes the tile while it is in registers:
//
//	func NAME(kc int, a, b, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *float32, pfStep int)
//
// adds bias[j] when bias is not nil and then res[r·ldr+j] when res is not
// nil, in that order, after the product (and after c's old value):
//
//	c[r·ldc+j] = ((c[r·ldc+j] +) s + bias[j]) + res[r·ldr+j]
//
// Without taps (float32), each step with a non-nil pf also prefetches
// into L2 one step's width of B (NR values) at pf and then moves pf on by
// pfStep bytes: the caller points the row tiles of a panel at successive
// slices of the next panel of B, so that together they bring it into L2
// before its turn comes, a few lines per tile rather than the whole panel
// during the first tile (the hardware prefetcher stops at every 4 KiB page
// of a cold weight, and a whole panel at once, one line per FMA cycle, ran
// into the limit of misses a core keeps in flight). The bf16 kernel
// prefetches the same steps of the next panel (pfStep is not there).
//
// With aDirect, A is not packed but read in place, row r at a[r·lda + p]
// (lda in elements), so a row-major activation needs no copy:
//
//	func NAME(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *float32, pfStep int)
//
// With bTaps the kernel is
//
//	func NAME(kc int, a, b *float32, taps *int, c *float32, ldc int, accumulate int, pf *float32)
//
// and row p of b is not packed but read in place at b[taps[p] + j]: a
// direct convolution over a padded image, where each tap's NR neighbouring
// outputs read NR neighbouring pixels. There a non-nil pf is the next
// panel of A (a convolution's weight, cold from memory when it is read
// once per call), prefetched into L2 one step at a time.
//
// With aDirectBF16 the kernel is aDirect on bf16 pairs:
//
//	func NAME(kc int, a *uint32, lda int, b *uint32, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *uint32)
//
// where each uint32 holds two bf16 values, k = 2p in its low half and
// k = 2p+1 in its high half, a[r·lda + p] for row r and b[p·NR + j] for
// column j, kc counts pairs, and each step is one VDPBF16PS per
// accumulator (s rounds as dpbf16 in bf16.go says, not as an FMA chain).
//
// A packed panel holds panel ≥ mr rows per step (a[p·panel + r]); the
// kernel computes its first mr.
func gemmKernel(name string, mr, panel, nv int, vecs []VecPhysical, width int, mode operands) {
	lanes := width / 4
	taps := mode == bTaps
	direct := mode == aDirect || mode == aDirectBF16
	switch mode {
	case bTaps:
		text(name, NOSPLIT, "func(kc int, a, b *float32, taps *int, c *float32, ldc int, accumulate int, pf *float32)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s computes c[r·ldc+j] (+)= Σ_{p<kc} a[p·%d+r]·b[taps[p]+j] for r < %d, j < %d (a packed, b read in place); it adds to c when accumulate != 0, and prefetches kc steps of the A panel at pf into L2 when pf is not nil.",
			name, panel, mr, nv*lanes))
	case aDirect:
		text(name, NOSPLIT, "func(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *float32, pfStep int)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s computes c[r·ldc+j] = ((c[r·ldc+j] +) Σ_{p<kc} a[r·lda+p]·b[p·%d+j] + bias[j]) + res[r·ldr+j] for r < %d, j < %d (a in place, b packed); c's old value counts when accumulate != 0, bias and res when not nil.",
			name, nv*lanes, mr, nv*lanes))
	case aDirectBF16:
		text(name, NOSPLIT, "func(kc int, a *uint32, lda int, b *uint32, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *uint32)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s computes c[r·ldc+j] = ((c[r·ldc+j] +) Σ_{p<kc} dot(a[r·lda+p], b[p·%d+j]) + bias[j]) + res[r·ldr+j] for r < %d, j < %d, each uint32 a pair of bf16 (k = 2p low, 2p+1 high) and the sum in fp32 by VDPBF16PS (dpbf16 in bf16.go); c's old value counts when accumulate != 0, bias and res when not nil.",
			name, nv*lanes, mr, nv*lanes))
	default:
		text(name, NOSPLIT, "func(kc int, a, b, c *float32, ldc int, accumulate int, bias, res *float32, ldr int, pf *float32, pfStep int)")
		Pragma("noescape")
		Doc(fmt.Sprintf("%s computes c[r·ldc+j] = ((c[r·ldc+j] +) Σ_{p<kc} a[p·%d+r]·b[p·%d+j] + bias[j]) + res[r·ldr+j] for r < %d, j < %d (packed panels); c's old value counts when accumulate != 0, bias and res when not nil.",
			name, panel, nv*lanes, mr, nv*lanes))
	}
	acc := vecs[:mr*nv]
	vb := vecs[mr*nv : mr*nv+nv]
	bcast := vecs[mr*nv+nv]

	kc := Load(Param("kc"), GP64())
	pa := Load(Param("a"), GP64())
	pb := Load(Param("b"), GP64())
	// aDirect: rows 3q, 3q+1, 3q+2 of A are at rowBase[q], +lda, +2·lda
	// (bytes), and every base moves 4 bytes per step.
	var rowBase []Register
	var lda, lda2 Register
	if direct {
		lda = Load(Param("lda"), GP64())
		SHLQ(Imm(2), lda)
		lda2 = GP64()
		LEAQ(Mem{Base: lda, Index: lda, Scale: 1}, lda2)
		lda3 := GP64()
		LEAQ(Mem{Base: lda2, Index: lda, Scale: 1}, lda3)
		rowBase = append(rowBase, pa)
		for q := 1; q < (mr+2)/3; q++ {
			base := GP64()
			LEAQ(Mem{Base: rowBase[q-1], Index: lda3, Scale: 1}, base)
			rowBase = append(rowBase, base)
		}
	}
	var pt, off Register
	if taps {
		pt = Load(Param("taps"), GP64())
		off = GP64()
	}

	Comment("acc = 0")
	for _, v := range acc {
		if width == 64 {
			VPXORD(v, v, v)
		} else {
			VXORPS(v, v, v)
		}
	}
	// body emits u steps of the k loop (b's row, then the mr·nv FMAs, at
	// displacements within the unrolled group) and then advances the
	// pointers past them; with pf, it also prefetches: B's next panel by
	// pfStep (float32 without taps), else the same steps of the next panel
	// (of B for bf16, of A with taps).
	var pfStep Register // set below, before the loops are emitted
	body := func(u int, pf Register) {
		for q := 0; q < u; q++ {
			if taps {
				Comment("b_v = b[taps[p] + v·lanes : ...]")
				MOVQ(Mem{Base: pt, Disp: 8 * q}, off)
				for v := 0; v < nv; v++ {
					VMOVUPS(Mem{Base: pb, Index: off, Scale: 4, Disp: v * width}, vb[v])
				}
			} else {
				Comment("b_v = b[p·NR + v·lanes : ...]")
				for v := 0; v < nv; v++ {
					VMOVUPS(Mem{Base: pb, Disp: (q*nv + v) * width}, vb[v])
				}
			}
			if mode == aDirectBF16 {
				Comment("acc[r][v] += dot(broadcast(a[r·lda + p]), b_v) in bf16 pairs")
			} else if direct {
				Comment("acc[r][v] += broadcast(a[r·lda + p]) · b_v")
			} else {
				Comment("acc[r][v] += broadcast(a[p·panel + r]) · b_v")
			}
			for r := 0; r < mr; r++ {
				src := Mem{Base: pa, Disp: 4 * (q*panel + r)}
				if direct {
					src = Mem{Base: rowBase[r/3], Disp: 4 * q}
					switch r % 3 {
					case 1:
						src.Index, src.Scale = lda, 1
					case 2:
						src.Index, src.Scale = lda2, 1
					}
				}
				VBROADCASTSS(src, bcast)
				for v := 0; v < nv; v++ {
					if mode == aDirectBF16 {
						vdpbf16ps(acc[r*nv+v], bcast, vb[v])
					} else {
						VFMADD231PS(vb[v], bcast, acc[r*nv+v])
					}
				}
			}
		}
		if direct {
			for _, base := range rowBase {
				ADDQ(addImm(4*u), base)
			}
		} else {
			ADDQ(addImm(4*panel*u), pa)
		}
		if taps {
			ADDQ(addImm(8*u), pt)
		} else {
			ADDQ(addImm(nv*width*u), pb)
		}
		if pf != nil && pfStep != nil {
			Comment("prefetch a step's width of B at pf into L2, then move pf on by pfStep bytes")
			for q := 0; q < u; q++ {
				for d := 0; d < nv*width; d += 64 {
					PREFETCHT1(Mem{Base: pf, Disp: d})
				}
				ADDQ(pfStep, pf)
			}
		} else if pf != nil {
			// The next panel of B (bf16), or with taps the next panel of A.
			step := nv * width
			if taps {
				step = 4 * panel
			}
			Comment("prefetch the same steps of the next panel into L2")
			for d := 0; d < u*step; d += 64 {
				PREFETCHT1(Mem{Base: pf, Disp: d})
			}
			ADDQ(addImm(step*u), pf)
		}
	}
	// loop emits the k loop at label: groups of unroll steps while
	// that many remain, then single steps; it ends at name_done.
	unroll := stepsPerIteration(width)
	loop := func(label string, pf Register) {
		Label(label)
		if unroll > 1 {
			CMPQ(kc, U8(unroll))
			JL(LabelRef(label + "_one"))
			Label(label + "_group")
			body(unroll, pf)
			SUBQ(Imm(uint64(unroll)), kc)
			CMPQ(kc, U8(unroll))
			JGE(LabelRef(label + "_group"))
			TESTQ(kc, kc)
			JZ(LabelRef(name + "_done"))
		}
		Label(label + "_one")
		body(1, pf)
		DECQ(kc)
		JNZ(LabelRef(label + "_one"))
	}
	pf := Load(Param("pf"), GP64())
	if mode == aPacked || mode == aDirect {
		pfStep = Load(Param("pfStep"), GP64())
	}
	TESTQ(pf, pf)
	JZ(LabelRef(name + "_loop"))
	// The same loop, also prefetching into L2 (the doc above says what).
	loop(name+"_pfloop", pf)
	JMP(LabelRef(name + "_done"))
	loop(name+"_loop", nil)
	Label(name + "_done")

	pc := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(Imm(2), ldc)
	flag := Load(Param("accumulate"), GP64())
	if taps {
		TESTQ(flag, flag)
		JZ(LabelRef(name + "_store"))
		Comment("acc += c, row by row")
		addRows(acc, pc, ldc, mr, nv, width)
		Label(name + "_store")
		storeTile(acc, pc, ldc, mr, nv, width)
		return
	}
	// Each step below rounds once, in the order the unfused epilogue
	// would: the old c, then the bias, then the residual.
	TESTQ(flag, flag)
	JZ(LabelRef(name + "_bias"))
	Comment("acc += c, row by row")
	addRows(acc, pc, ldc, mr, nv, width)
	Label(name + "_bias")
	pbias := Load(Param("bias"), GP64())
	TESTQ(pbias, pbias)
	JZ(LabelRef(name + "_res"))
	Comment("acc[r][v] += bias[v·lanes : ...]")
	for v := 0; v < nv; v++ {
		VMOVUPS(Mem{Base: pbias, Disp: v * width}, vb[v])
	}
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VADDPS(vb[v], acc[r*nv+v], acc[r*nv+v])
		}
	}
	Label(name + "_res")
	pres := Load(Param("res"), GP64())
	TESTQ(pres, pres)
	JZ(LabelRef(name + "_store"))
	Comment("acc += res, row by row")
	ldr := Load(Param("ldr"), GP64())
	SHLQ(Imm(2), ldr)
	addRows(acc, pres, ldr, mr, nv, width)
	Label(name + "_store")
	storeTile(acc, pc, ldc, mr, nv, width)
}

// addRows emits acc[r][v] += m[r·ld + v·width bytes] for r < mr, v < nv,
// walking a copy of base by ld bytes per row.
func addRows(acc []VecPhysical, base, ld Register, mr, nv, width int) {
	row := GP64()
	MOVQ(base, row)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VADDPS(Mem{Base: row, Disp: v * width}, acc[r*nv+v], acc[r*nv+v])
		}
		if r < mr-1 {
			ADDQ(ld, row)
		}
	}
}

// storeTile emits c = acc, row by row, and returns.
func storeTile(acc []VecPhysical, pc, ldc Register, mr, nv, width int) {
	Comment("c = acc, row by row")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			VMOVUPS(acc[r*nv+v], Mem{Base: pc, Disp: v * width})
		}
		if r < mr-1 {
			ADDQ(ldc, pc)
		}
	}
	VZEROUPPER()
	RET()
}

// loadFloat loads the float32 parameter name into the low lane of x with
// the VEX encoding (VMOVSS). avo's Load would emit the legacy-SSE MOVSS,
// which, once a 256- or 512-bit instruction has left the upper halves of
// the registers dirty, cost about 130 ns per call on the AVX2-only AMD
// EPYC guest (a transition of the register state; measured: affineAVX2 on
// 16 values took 149 ns, against 3-5 ns with VMOVSS).
func loadFloat(name string, x Op) {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	VMOVSS(b.Addr, x)
}

// storeFloatResult stores the low lane of x as the float32 result, VEX
// encoded (see loadFloat).
func storeFloatResult(x Op) {
	b, err := ReturnIndex(0).Resolve()
	if err != nil {
		panic(err)
	}
	VMOVSS(x, b.Addr)
}
