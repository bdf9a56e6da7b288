package kern

// flashKernels are the SIMD row kernels of Attention's online softmax on
// one path (asm/gen_flash.go).
type flashKernels struct {
	max func(n int, x *float32, scale float32) float32
	exp func(n int, x *float32, scale, m float32) float32
}

// flashMaxRow returns the largest scaled score of a row, n ≥ 1:
//
//	m = max_{i<n} float32(scale * x[i])
//
// A NaN in x may or may not come back; flashExpRow then makes the sum NaN.
func flashMaxRow(n int, x []float32, scale float32) float32 {
	_ = x[n-1]
	if k := flashFor(active); k != nil {
		return k.max(n, &x[0], scale)
	}
	return flashMaxGo(x[:n], scale)
}

// flashExpRow replaces a row of n ≥ 1 scores by their exponentials
// against m and returns their sum:
//
//	for i < n: x[i] = exp(float32(scale*x[i]) − m)   (arguments ≤ 0)
//	return Σ_i x[i]
//
// with Softmax's exp (≤ 2 ulp); the SIMD paths sum in float32 over
// several partial sums, the Go path in float64.
func flashExpRow(n int, x []float32, scale, m float32) float32 {
	_ = x[n-1]
	if k := flashFor(active); k != nil {
		return k.exp(n, &x[0], scale, m)
	}
	return flashExpGo(x[:n], scale, m)
}

// flashMaxGo is the Go path of flashMaxRow.
func flashMaxGo(x []float32, scale float32) float32 {
	m := negInf32
	for _, v := range x {
		m = max(m, float32(scale*v))
	}
	return m
}

// flashExpGo is the Go path of flashExpRow.
func flashExpGo(x []float32, scale, m float32) float32 {
	s := 0.0
	for i, v := range x {
		e := expGo(float32(scale*v) - m)
		x[i] = e
		s += float64(e)
	}
	return float32(s)
}
