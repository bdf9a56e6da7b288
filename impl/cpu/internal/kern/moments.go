package kern

// Moments returns the mean and the biased variance of x (GroupNorm's
// statistics), in float64:
//
//	mean     = Σ x[i] / n
//	variance = Σ (x[i] − mean)² / n
//
// It reads x once: with the shift c = x[0] and d = x[i] − c (exact in
// float64), S1 = Σ d and S2 = Σ d² give mean = c + S1/n and variance =
// S2/n − (S1/n)² (the shifted-data algorithm; Chan, Golub and LeVeque,
// "Algorithms for computing the sample variance", 1983). The shift keeps
// the cancellation to the spread of the data around x[0], not |mean|/std,
// so the result has float64-class accuracy where Σx² − n·mean² would
// lose it. The SIMD paths sum in float64 lanes over several partial sums;
// the Go path in four partial sums. An empty x gives 0, 0.
func Moments(x []float32) (mean, variance float64) {
	n := len(x)
	if n == 0 {
		return 0, 0
	}
	shift := x[0]
	var s1, s2 float64
	done := 0
	if k := momentsFor(active); k != nil && n >= 8 {
		var sums [2]float64
		done = n &^ 7
		k(done, &x[0], shift, &sums[0])
		s1, s2 = sums[0], sums[1]
	}
	t1, t2 := momentsGo(x[done:], shift)
	s1, s2 = s1+t1, s2+t2
	m := s1 / float64(n)
	return float64(shift) + m, max(s2/float64(n)-m*m, 0)
}

// momentsGo is Moments' pure-Go twin, the sums only:
//
//	for i < len(x): d = float64(x[i]) − float64(shift); s1 += d; s2 += d²
//
// in four partial sums (four independent dependency chains).
func momentsGo(x []float32, shift float32) (s1, s2 float64) {
	c := float64(shift)
	var a, b [4]float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		d0, d1, d2, d3 := float64(v[0])-c, float64(v[1])-c, float64(v[2])-c, float64(v[3])-c
		a[0], a[1], a[2], a[3] = a[0]+d0, a[1]+d1, a[2]+d2, a[3]+d3
		b[0], b[1], b[2], b[3] = b[0]+d0*d0, b[1]+d1*d1, b[2]+d2*d2, b[3]+d3*d3
	}
	for ; i < len(x); i++ {
		d := float64(x[i]) - c
		a[0] += d
		b[0] += d * d
	}
	return (a[0] + a[1]) + (a[2] + a[3]), (b[0] + b[1]) + (b[2] + b[3])
}
