package kern

// The transforms of the Winograd F(2×2, 3×3) convolution on the NCHW16c
// layout (conv_blocked.go): a pixel is a vector of 16 channels, so every
// operation of WinogradInput and WinogradOutput applies to the 16 channel
// lanes at once and a row of tiles needs no split into phase planes nor
// interleaving of the outputs. Each call takes exactly n tiles; the SIMD
// kernels make the Go twins' operations in their order, so every path
// gives the same bits (the payload of a NaN made from two NaNs aside).

// WinogradInputBlocked writes the input transform V = Bᵀ d B of n tiles
// along one row of tiles of one channel block:
//
//	for k < n, l < 16:  d[a][b] = x[a·rowStride + (2k + b)·16 + l]   (a, b < 4; the tile's 4×4 pixels, tiles 2 pixels apart)
//	X[a] = (d[a][0]−d[a][2], d[a][1]+d[a][2], d[a][2]−d[a][1], d[a][1]−d[a][3])
//	v[(4ξ+ν)·vStride + 16k + l] = (X[0][ν]−X[2][ν], X[1][ν]+X[2][ν], X[2][ν]−X[1][ν], X[1][ν]−X[3][ν])[ξ]
//
// (the operations of WinogradInput, in its order, so the same rounding).
// x holds the four rows of 2n+2 pixels (up to index 3·rowStride +
// (2n+1)·16 + 15), v the 16 planes of 16n floats, which must not overlap
// each other (vStride ≥ 16n) nor x. n ≤ 0 does nothing.
func WinogradInputBlocked(n int, x []float32, rowStride int, v []float32, vStride int) {
	if n <= 0 {
		return
	}
	if rowStride < 0 || vStride < n*BlockLanes {
		panic("kern: WinogradInputBlocked stride out of range")
	}
	// The bounds of every access, checked once for the kernels' unchecked
	// ones (the strides are not negative, so the last index is the largest).
	_ = x[3*rowStride+(2*n+2)*BlockLanes-1]
	_ = v[15*vStride+n*BlockLanes-1]
	if winogradInputBlocked(n, &x[0], rowStride, &v[0], vStride) {
		return
	}
	winogradInputBlockedGo(n, x, rowStride, v, vStride)
}

// winogradInputBlockedGo is WinogradInputBlocked's plain loop, its Go twin.
func winogradInputBlockedGo(n int, x []float32, rowStride int, v []float32, vStride int) {
	const L = BlockLanes
	for k := 0; k < n; k++ {
		var xs [4][4][L]float32 // X[a][ν] per lane
		for a := 0; a < 4; a++ {
			r := x[a*rowStride+2*k*L:][:4*L]
			for l := 0; l < L; l++ {
				d0, d1, d2, d3 := r[l], r[L+l], r[2*L+l], r[3*L+l]
				xs[a][0][l] = d0 - d2
				xs[a][1][l] = d1 + d2
				xs[a][2][l] = d2 - d1
				xs[a][3][l] = d1 - d3
			}
		}
		for nu := 0; nu < 4; nu++ {
			v0 := v[nu*vStride+k*L:][:L]
			v1 := v[(4+nu)*vStride+k*L:][:L]
			v2 := v[(8+nu)*vStride+k*L:][:L]
			v3 := v[(12+nu)*vStride+k*L:][:L]
			x0, x1, x2, x3 := &xs[0][nu], &xs[1][nu], &xs[2][nu], &xs[3][nu]
			for l := 0; l < L; l++ {
				v0[l] = x0[l] - x2[l]
				v1[l] = x1[l] + x2[l]
				v2[l] = x2[l] - x1[l]
				v3[l] = x1[l] - x3[l]
			}
		}
	}
}

// WinogradOutputBlocked writes the 2×2 outputs of n tiles along one row
// of tiles of one output channel block, from their 16 products:
//
//	for k < n, l < 16:  M[ξ][ν] = m[(4ξ+ν)·mStride + 16k + l]
//	S[ξ] = ((M[ξ][0]+M[ξ][1])+M[ξ][2], (M[ξ][1]−M[ξ][2])−M[ξ][3])
//	Y[0][j] = ((S[0][j]+S[1][j])+S[2][j]) + bias[l],  Y[1][j] = ((S[1][j]−S[2][j])−S[3][j]) + bias[l]
//	for i, j < 2, at o = i·rowStride + (2k+j)·16 + l:
//	    v = Y[i][j]; v += res[o] (res != nil); v = max(v, 0) (relu; NaN kept, and −0); y[o] = v
//
// (the operations of WinogradOutput, in its order). m holds the 16
// planes of 16n floats (up to index 15·mStride + 16n − 1), y and res the
// two rows of 2n pixels (up to index rowStride + 32n − 1), which must not
// overlap (rowStride ≥ 32n). res may be nil, or y itself; otherwise y
// must overlap neither res nor m. n ≤ 0 does nothing.
func WinogradOutputBlocked(n int, m []float32, mStride int, bias *[16]float32, res, y []float32, rowStride int, relu bool) {
	if n <= 0 {
		return
	}
	if mStride < 0 || rowStride < 2*n*BlockLanes {
		panic("kern: WinogradOutputBlocked stride out of range")
	}
	_ = m[15*mStride+n*BlockLanes-1]
	last := rowStride + 2*n*BlockLanes - 1
	_ = y[last]
	var r *float32
	if res != nil {
		_ = res[last]
		r = &res[0]
	}
	_ = bias[0]
	if winogradOutputBlocked(n, &m[0], mStride, bias, r, &y[0], rowStride, relu) {
		return
	}
	winogradOutputBlockedGo(n, m, mStride, bias, res, y, rowStride, relu)
}

// winogradOutputBlockedGo is WinogradOutputBlocked's plain loop, its Go
// twin. Its clamp is VMAXPS(v, zero, v)'s: 0 when v < 0, else v (NaN and
// −0 kept).
func winogradOutputBlockedGo(n int, m []float32, mStride int, bias *[16]float32, res, y []float32, rowStride int, relu bool) {
	const L = BlockLanes
	for k := 0; k < n; k++ {
		for l := 0; l < L; l++ {
			var s [4][2]float32
			for xi := 0; xi < 4; xi++ {
				o := 4*xi*mStride + k*L + l
				m0, m1, m2, m3 := m[o], m[o+mStride], m[o+2*mStride], m[o+3*mStride]
				s[xi] = [2]float32{(m0 + m1) + m2, (m1 - m2) - m3}
			}
			for j := 0; j < 2; j++ {
				yv := [2]float32{
					((s[0][j] + s[1][j]) + s[2][j]) + bias[l],
					((s[1][j] - s[2][j]) - s[3][j]) + bias[l],
				}
				for i, v := range yv {
					o := i*rowStride + (2*k+j)*L + l
					if res != nil {
						v += res[o]
					}
					if relu && v < 0 {
						v = 0
					}
					y[o] = v
				}
			}
		}
	}
}
