package peak

// fmaKernel is one path's FMA loop. loop(n, x, y, acc) computes, with
// len(acc) == lanes·chains,
//
//	for ; n > 0; n-- {
//		for i := range acc {
//			acc[i] = acc[i]*x + y
//		}
//	}
//
// as chains independent dependency chains of lanes-wide fused multiply-adds.
type fmaKernel struct {
	isa    ISA
	lanes  int // float32 lanes per instruction
	chains int // independent dependency chains
	run    func(n int, x, y float32, acc []float32)
	// pairs is the multiply-adds per lane and instruction beyond one: 1
	// for the bf16 dot product (dot.go), which does two.
	pairs int
}

// loop runs n iterations; n <= 0 does nothing (the assembly loops need n > 0).
func (k fmaKernel) loop(n int, x, y float32, acc []float32) {
	if n <= 0 {
		return
	}
	if len(acc) != k.lanes*k.chains {
		panic("peak: accumulator length does not match the kernel")
	}
	k.run(n, x, y, acc)
}

// flops returns the floating-point operations of n iterations, counting a
// multiply-add as 2.
func (k fmaKernel) flops(n int) float64 {
	return 2 * float64(1+k.pairs) * float64(k.lanes) * float64(k.chains) * float64(n)
}

// kernelFor returns the FMA loop of path p; ok is false when this build or
// machine cannot run it.
func kernelFor(p ISA) (k fmaKernel, ok bool) {
	if !isSupported(p) {
		return fmaKernel{}, false
	}
	if p == ISAGo {
		return fmaKernel{isa: ISAGo, lanes: 1, chains: 12, run: fmaGo}, true
	}
	return simdKernel(p)
}

// fmaGo is the Go path: 12 scalar chains held in locals, so the compiler
// keeps them in registers. Each step is a dependent multiply and add, which
// the compiler cannot hoist or merge.
func fmaGo(n int, x, y float32, acc []float32) {
	a := (*[12]float32)(acc)
	a0, a1, a2, a3, a4, a5 := a[0], a[1], a[2], a[3], a[4], a[5]
	a6, a7, a8, a9, a10, a11 := a[6], a[7], a[8], a[9], a[10], a[11]
	for ; n > 0; n-- {
		a0 = a0*x + y
		a1 = a1*x + y
		a2 = a2*x + y
		a3 = a3*x + y
		a4 = a4*x + y
		a5 = a5*x + y
		a6 = a6*x + y
		a7 = a7*x + y
		a8 = a8*x + y
		a9 = a9*x + y
		a10 = a10*x + y
		a11 = a11*x + y
	}
	a[0], a[1], a[2], a[3], a[4], a[5] = a0, a1, a2, a3, a4, a5
	a[6], a[7], a[8], a[9], a[10], a[11] = a6, a7, a8, a9, a10, a11
}
