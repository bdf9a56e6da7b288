package kern

// The transforms of the Winograd F(2×2, 3×3) convolution (impl/cpu's
// conv_winograd.go) and the stride-2 split of an image row that feeds
// them. On the SIMD paths each call rounds its count n up to a multiple of
// RoundWidth() and reads and writes that many elements: the slices must
// hold the rounded count (the call panics otherwise, before any access).
// The Go path computes exactly n, in the same order of operations, so the
// paths agree bit for bit.

// RoundWidth is the multiple the SIMD paths round the counts of
// WinogradInput, WinogradOutput and Deinterleave up to (1 on the Go path).
func RoundWidth() int {
	if winogradFor(active) == nil {
		return 1
	}
	switch active {
	case ISAAVX512:
		return 16
	case ISAAVX2:
		return 8
	}
	return 1
}

// winogradCount is n rounded up for the active path, with its kernels
// (nil on the Go path).
func winogradCount(n int) (int, *winogradKernels) {
	k := winogradFor(active)
	if k == nil {
		return n, nil
	}
	w := RoundWidth()
	return (n + w - 1) / w * w, k
}

// WinogradInput writes the input transform V = Bᵀ d B of tiles t < n of
// one channel, from its four stride-2 phase planes in q (phase floats
// apart, wq wide) into the 16 planes of v (vs floats apart):
//
//	d[a][b] = q[((a&1)·2 + (b&1))·phase + t + (a>>1)·wq + (b>>1)]
//	X[a] = (d[a][0]−d[a][2], d[a][1]+d[a][2], d[a][2]−d[a][1], d[a][1]−d[a][3])
//	v[(4ξ+ν)·vs + t] = (X[0][ν]−X[2][ν], X[1][ν]+X[2][ν], X[2][ν]−X[1][ν], X[1][ν]−X[3][ν])[ξ]
func WinogradInput(n int, q []float32, phase, wq int, v []float32, vs int) {
	if n <= 0 {
		return
	}
	nr, k := winogradCount(n)
	_ = q[3*phase+nr-1+wq+1]
	_ = v[15*vs+nr-1]
	if k != nil {
		k.input(nr, &q[0], phase, wq, &v[0], vs)
		return
	}
	for t := 0; t < n; t++ {
		d := func(a, b int) float32 { return q[((a&1)*2+b&1)*phase+t+(a>>1)*wq+b>>1] }
		var x [4][4]float32
		for a := 0; a < 4; a++ {
			x[a] = [4]float32{d(a, 0) - d(a, 2), d(a, 1) + d(a, 2), d(a, 2) - d(a, 1), d(a, 1) - d(a, 3)}
		}
		for nu := 0; nu < 4; nu++ {
			v[nu*vs+t] = x[0][nu] - x[2][nu]
			v[(4+nu)*vs+t] = x[1][nu] + x[2][nu]
			v[(8+nu)*vs+t] = x[2][nu] - x[1][nu]
			v[(12+nu)*vs+t] = x[1][nu] - x[3][nu]
		}
	}
}

// WinogradOutput writes the output transform Y = Aᵀ M A of tiles t < n of
// one output channel, from its 16 products in m (ms floats apart), plus
// bias, with each output row's two columns interleaved:
//
//	M[ξ][ν] = m[(4ξ+ν)·ms + t]
//	S[ξ] = ((M[ξ][0]+M[ξ][1])+M[ξ][2], (M[ξ][1]−M[ξ][2])−M[ξ][3])
//	w0[2t+j] = ((S[0][j]+S[1][j])+S[2][j]) + bias
//	w1[2t+j] = ((S[1][j]−S[2][j])−S[3][j]) + bias
func WinogradOutput(n int, m []float32, ms int, bias float32, w0, w1 []float32) {
	if n <= 0 {
		return
	}
	nr, k := winogradCount(n)
	_ = m[15*ms+nr-1]
	_, _ = w0[2*nr-1], w1[2*nr-1]
	if k != nil {
		k.output(nr, &m[0], ms, bias, &w0[0], &w1[0])
		return
	}
	for t := 0; t < n; t++ {
		var s [4][2]float32
		for xi := 0; xi < 4; xi++ {
			m0, m1, m2, m3 := m[(4*xi)*ms+t], m[(4*xi+1)*ms+t], m[(4*xi+2)*ms+t], m[(4*xi+3)*ms+t]
			s[xi] = [2]float32{(m0 + m1) + m2, (m1 - m2) - m3}
		}
		for j := 0; j < 2; j++ {
			w0[2*t+j] = ((s[0][j] + s[1][j]) + s[2][j]) + bias
			w1[2*t+j] = ((s[1][j] - s[2][j]) - s[3][j]) + bias
		}
	}
}

// Deinterleave splits src into its even and odd elements:
//
//	for j < n: even[j] = src[2j], odd[j] = src[2j+1]
func Deinterleave(n int, src, even, odd []float32) {
	if n <= 0 {
		return
	}
	nr, k := winogradCount(n)
	_, _, _ = src[2*nr-1], even[nr-1], odd[nr-1]
	if k != nil {
		k.deinterleave(nr, &src[0], &even[0], &odd[0])
		return
	}
	for j := 0; j < n; j++ {
		even[j], odd[j] = src[2*j], src[2*j+1]
	}
}

// Interleave merges two rows into one, the inverse of Deinterleave:
//
//	for j < n: dst[2j] = even[j], dst[2j+1] = odd[j]
//
// Unlike the other calls here it touches exactly n pairs: the SIMD kernel
// takes the whole vectors and the Go loop the rest.
func Interleave(n int, even, odd, dst []float32) {
	if n <= 0 {
		return
	}
	_, _, _ = even[n-1], odd[n-1], dst[2*n-1]
	j := 0
	if k := winogradFor(active); k != nil {
		w := RoundWidth()
		if j = n / w * w; j > 0 {
			k.interleave(j, &even[0], &odd[0], &dst[0])
		}
	}
	for ; j < n; j++ {
		dst[2*j], dst[2*j+1] = even[j], odd[j]
	}
}

// winogradKernels are the SIMD kernels of one path.
type winogradKernels struct {
	input        func(n int, q *float32, phase, wq int, v *float32, vs int)
	output       func(n int, m *float32, ms int, bias float32, w0, w1 *float32)
	deinterleave func(n int, src, even, odd *float32)
	interleave   func(n int, even, odd, dst *float32)
	avgPool2x2   func(n int, r0, r1, out *float32) // pool.go's rows, split as deinterleave does
	avgPoolHalf  func(n int, r0, r1, out *float32) // the same, half a vector wide (nil: none narrower)
}
