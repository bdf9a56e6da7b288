// gen writes the peak-throughput loops of package peak. From
// impl/cpu/internal/peak:
//
//	go generate
//
// which runs, in this directory,
//
//	go run . -out ../fma_amd64.s -stubs ../fma_stub_amd64.go -pkg peak
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("!purego")
	fmaChains("fmaAVX512", 16,
		[]VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23},
		Z24, Z25)
	fmaChains("fmaAVX2", 8,
		[]VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11},
		Y12, Y13)
	dotChains("dotBF16AVX512", // gen_bf16.go
		[]VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23},
		Z24, Z25)
	Generate()
}

// fmaChains emits
//
//	func NAME(n int, x, y float32, acc *[len(accs)·lanes]float32)
//
// computing, n times, acc[i] = acc[i]·x + y for every i, with one
// VFMADD213PS per vector register of acc per iteration. The registers of acc
// are independent dependency chains, so the loop runs at the FMA units'
// throughput when there are at least (FMA latency × FMA pipes) of them.
func fmaChains(name string, lanes int, accs []VecPhysical, vx, vy VecPhysical) {
	size := len(accs) * lanes
	TEXT(name, NOSPLIT, fmt.Sprintf("func(n int, x, y float32, acc *[%d]float32)", size))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s computes, n times, acc[i] = acc[i]·x + y for i < %d: %d independent chains of %d-lane VFMADD213PS; n must be positive.",
		name, size, len(accs), lanes))

	n := Load(Param("n"), GP64())
	p := Load(Param("acc"), GP64())
	Comment("vx = broadcast(x), vy = broadcast(y)")
	bx, err := Param("x").Resolve()
	if err != nil {
		panic(err)
	}
	by, err := Param("y").Resolve()
	if err != nil {
		panic(err)
	}
	VBROADCASTSS(bx.Addr, vx)
	VBROADCASTSS(by.Addr, vy)

	Comment("chain i starts from acc[i·lanes : (i+1)·lanes]")
	bytes := lanes * 4
	for i, v := range accs {
		VMOVUPS(Mem{Base: p, Disp: i * bytes}, v)
	}

	Label(name + "_loop")
	Comment("chain i: v_i = v_i·vx + vy")
	for _, v := range accs {
		VFMADD213PS(vy, vx, v)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))

	Comment("acc = chains")
	for i, v := range accs {
		VMOVUPS(v, Mem{Base: p, Disp: i * bytes})
	}
	VZEROUPPER()
	RET()
}
