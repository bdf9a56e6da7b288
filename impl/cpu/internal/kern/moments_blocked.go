package kern

// MomentsBlocked adds to s1 and s2, per lane l < 16, the shifted sums of
// the n pixels of one NCHW16c block plane x (16·n floats, the lanes are
// the channels of the block):
//
//	for p < n: d = float64(x[16p+l]) − float64(shift[l]); s1[l] += d; s2[l] += d·d
//
// GroupNorm's statistics on the blocked layout, shifted as Moments does
// (d is exact in float64; the caller picks a shift within the spread of
// each channel, e.g. its first value, and sums the lanes of a group). The
// SIMD paths sum in float64 over several partial sums per lane, d·d in a
// fused multiply-add, and then add the sums to s1 and s2; they agree with
// the plain loop to float64 rounding, not bit for bit. n = 0 does nothing.
func MomentsBlocked(n int, x []float32, shift *[16]float32, s1, s2 *[16]float64) {
	if n == 0 {
		return
	}
	_ = x[n*BlockLanes-1]
	if momentsBlocked(n, &x[0], shift, s1, s2) {
		return
	}
	momentsBlockedGo(n, x, shift, s1, s2)
}

// momentsBlockedGo is MomentsBlocked's plain loop, its Go twin.
func momentsBlockedGo(n int, x []float32, shift *[16]float32, s1, s2 *[16]float64) {
	var c [BlockLanes]float64
	for l, v := range shift {
		c[l] = float64(v)
	}
	for p := 0; p < n; p++ {
		v := x[p*BlockLanes:][:BlockLanes]
		for l := range c {
			d := float64(v[l]) - c[l]
			s1[l] += d
			s2[l] += d * d
		}
	}
}
