package peak

// The bf16 dot-product loop: chains of VDPBF16PS, each adding two bf16
// products to every fp32 lane of its accumulator (the fmaKernel's x and y
// play no part):
//
//	for ; n > 0; n-- {
//		for i := range acc {
//			acc[i] = (acc[i] + 0.5·1) + 0.25·1 // dotA, dotB; dotRef
//		}
//	}
//
// The products are exact; a long run's sums stop growing once 0.75 is
// below half their spacing (about 2²⁴), far from overflow, and never
// subnormal.
const (
	dotA = 0x3f00_3e80 // bf16 pair (high 0.5, low 0.25)
	dotB = 0x3f80_3f80 // (1, 1)
)

// dotRef is the plain loop of the bf16 dot-product loop, exact for the
// small n the tests run.
func dotRef(n int, acc []float32) {
	for ; n > 0; n-- {
		for i := range acc {
			acc[i] = (acc[i] + 0.5) + 0.25
		}
	}
}
