// gen writes the SIMD kernels of package kern. From impl/cpu/internal/kern:
//
//	go generate
//
// which runs, in this directory,
//
//	go run . -out ../dot_amd64.s -stubs ../dot_stub_amd64.go -pkg kern
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	dotTile("dot4x4AVX512", 4, 4, []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23}, 64)
	dotTile("dot4x2AVX2", 4, 2, []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13}, 32)
	Generate()
}

// dotTile emits
//
//	func NAME(k int, a *float32, lda int, b *float32, ldb int, out *[MR*NR]float32)
//
// computing out[r·NR+j] = Σ_{p<k} a[r·lda+p] · b[j·ldb+p] for r < MR, j < NR,
// with k a positive multiple of the vector width. vecs holds MR·NR
// accumulators, then MR registers for rows of a, then NR for rows of b.
func dotTile(name string, mr, nr int, vecs []VecPhysical, width int) {
	TEXT(name, NOSPLIT, fmt.Sprintf("func(k int, a *float32, lda int, b *float32, ldb int, out *[%d]float32)", mr*nr))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes out[r·%d+j] = Σ_{p<k} a[r·lda+p]·b[j·ldb+p] for r < %d, j < %d; k must be a positive multiple of %d.",
		name, nr, mr, nr, width/4))
	acc := vecs[:mr*nr]
	va := vecs[mr*nr : mr*nr+mr]
	vb := vecs[mr*nr+mr : mr*nr+mr+nr]

	k := Load(Param("k"), GP64())
	SHLQ(Imm(2), k) // bytes
	lda := Load(Param("lda"), GP64())
	SHLQ(Imm(2), lda)
	ldb := Load(Param("ldb"), GP64())
	SHLQ(Imm(2), ldb)

	// Row pointers of a and b.
	rowPtrs := func(param string, n int, ld Register) []Register {
		ptrs := []Register{Load(Param(param), GP64())}
		for i := 1; i < n; i++ {
			p := GP64()
			MOVQ(ptrs[i-1], p)
			ADDQ(ld, p)
			ptrs = append(ptrs, p)
		}
		return ptrs
	}
	pa := rowPtrs("a", mr, lda)
	pb := rowPtrs("b", nr, ldb)

	Comment("acc = 0")
	for _, v := range acc {
		if width == 64 {
			VPXORD(v, v, v) // VXORPS on zmm would need AVX512DQ
		} else {
			VXORPS(v, v, v)
		}
	}
	off := GP64()
	XORQ(off, off)
	Label(name + "_loop")
	Comment("load one vector of each row of a and b at offset off")
	for r := 0; r < mr; r++ {
		VMOVUPS(Mem{Base: pa[r], Index: off, Scale: 1}, va[r])
	}
	for j := 0; j < nr; j++ {
		VMOVUPS(Mem{Base: pb[j], Index: off, Scale: 1}, vb[j])
	}
	Comment("acc[r][j] += a_r · b_j")
	for r := 0; r < mr; r++ {
		for j := 0; j < nr; j++ {
			VFMADD231PS(vb[j], va[r], acc[r*nr+j])
		}
	}
	ADDQ(Imm(uint64(width)), off)
	CMPQ(off, k)
	JB(LabelRef(name + "_loop"))

	Comment("reduce every accumulator to 128 bits: x = lo + hi")
	x := make([]VecPhysical, len(acc))
	for i, v := range acc {
		if width == 64 {
			VEXTRACTF64X4(Imm(1), v, va[0].AsY())
			VADDPS(va[0].AsY(), v.AsY(), v.AsY())
		}
		if width == 64 {
			// The temporary is Z16 or above: only EVEX encodings reach it.
			VEXTRACTF32X4(Imm(1), v.AsY(), va[0].AsX())
		} else {
			VEXTRACTF128(Imm(1), v.AsY(), va[0].AsX())
		}
		VADDPS(va[0].AsX(), v.AsX(), v.AsX())
		x[i] = v.AsX().(VecPhysical)
	}
	outp := Load(Param("out"), GP64())
	Comment("horizontal sums, four outputs per store")
	// Sums of four consecutive accumulators land in one register, in order.
	for q := 0; q < len(x); q += 4 {
		VHADDPS(x[q+1], x[q], x[q])
		VHADDPS(x[q+3], x[q+2], x[q+2])
		VHADDPS(x[q+2], x[q], x[q])
		VMOVUPS(x[q], Mem{Base: outp, Disp: q * 4})
	}
	VZEROUPPER()
	RET()
}
