package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

// flashKernels emits the two row kernels of the fused attention's online
// softmax (kern/flash.go), once per path: the running maximum of a row of
// scores, and the in-place exponentials of a row against a given maximum
// with their sum. They reuse the vector kernels' loop, exp and reduction
// (gen_vector.go), so the exponentials are softmaxRow's bit for bit.
func flashKernels() {
	for _, s := range []vecISA{
		{suffix: "AVX512", avx512: true, lanes: 16, bytes: 64, unroll: 4, v: []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
			Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}},
		{suffix: "AVX2", lanes: 8, bytes: 32, unroll: 2, v: []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}},
	} {
		s.flashMax()
		s.flashExp()
	}
}

// flashMax emits m = max_i scale·x[i] over n ≥ 1 values (softmaxRow's
// pass 1).
func (s vecISA) flashMax() {
	name := "flashMax" + s.suffix
	text(name, NOSPLIT, "func(n int, x *float32, scale float32) float32")
	Pragma("noescape")
	Doc(name+" returns max_i scale·x[i] (products rounded) over i < n; n must be positive.",
		"A NaN in x may or may not be returned; flashExp then makes the sum NaN.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	sc, lo := s.v[0], s.v[1]
	acc := s.v[3 : 3+s.unroll]
	t := s.v[3+s.unroll : 3+2*s.unroll]
	Comment("scale in every lane")
	loadFloat("scale", sc.AsX())
	s.bcast(sc, sc)
	s.maxPass(name, sc, lo, acc, t)
	storeFloatResult(acc[0].AsX())
	s.end()
}

// flashExp emits x[i] = exp(scale·x[i] − m) in place over n ≥ 1 values
// and returns their sum (softmaxRow's pass 2 with a given m).
func (s vecISA) flashExp() {
	name := "flashExp" + s.suffix
	text(name, NOSPLIT, "func(n int, x *float32, scale, m float32) float32")
	Pragma("noescape")
	Doc(name+" sets x[i] = exp(scale·x[i] − m) for i < n (the product and difference rounded; arguments",
		"must be ≤ 0) and returns Σ_i x[i], summed in float32 over several partial sums; n must be positive.")
	Load(Param("n"), RCX)
	Load(Param("x"), RSI)
	sc, lo, m := s.v[0], s.v[1], s.v[2]
	acc := s.v[3 : 3+s.unroll]
	t := s.v[3+s.unroll : 3+2*s.unroll]
	Comment("scale and m in every lane")
	loadFloat("scale", sc.AsX())
	s.bcast(sc, sc)
	loadFloat("m", m.AsX())
	s.bcast(m, m)
	s.expSumPass(name, []Register{RSI}, sc, lo, m, acc, t)
	storeFloatResult(acc[0].AsX())
	s.end()
}
