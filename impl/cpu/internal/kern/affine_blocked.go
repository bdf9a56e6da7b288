package kern

// AffineBlocked sets, for p < n pixels and lanes l < 16 of one NCHW16c
// block plane (16·n floats, the lanes are the channels of the block),
//
//	y[16p+l] = a[l]·x[16p+l] + b[l]                 (silu false)
//	y[16p+l] = swish(a[l]·x[16p+l] + b[l])          (silu true; swish(v) = v·sigmoid(v))
//
// computed exactly as Affine / AffineSiLU compute one value (the same
// multiply-add rounding, the same SiLU approximation): on every path the
// result is, bit for bit, what Affine or AffineSiLU with a[l], b[l] gives
// on channel l, so a blocked GroupNorm agrees with the NCHW one. x and y
// may be the same slice; otherwise they must not overlap. n = 0 does
// nothing.
func AffineBlocked(n int, a, b *[16]float32, x, y []float32, silu bool) {
	if n == 0 {
		return
	}
	_, _ = x[n*BlockLanes-1], y[n*BlockLanes-1]
	if affineBlocked(n, a, b, &x[0], &y[0], silu) {
		return
	}
	affineBlockedGo(n, a, b, x, y, silu)
}

// affineBlockedGo is AffineBlocked's Go twin: per value the scalar code
// of affineGo (a·x + b) and then, with silu, siluGo.
func affineBlockedGo(n int, a, b *[16]float32, x, y []float32, silu bool) {
	for p := 0; p < n; p++ {
		xp, yp := x[p*BlockLanes:][:BlockLanes], y[p*BlockLanes:][:BlockLanes]
		for l, v := range xp {
			yp[l] = a[l]*v + b[l]
		}
		if silu {
			siluGo(yp, yp)
		}
	}
}
