package accuracy

import "math"

// Top1Mismatches counts the rows of got and ref (rows of classes values)
// whose largest entry is at different indices — disagreement on the
// predicted class — unless the reference itself nearly ties there: a row
// whose reference top-1 class r and got's top-1 class g differ is forgiven
// when ref[r] − ref[g] ≤ 2·RMS over the row of (got − ref), the margin the
// row's own error can bridge (reduced-precision products move logits by
// about that much, and synthesized weights give near-tied logits). A flip
// over a margin larger than that counts. Ties go to the first index, as
// torch.argmax does.
func Top1Mismatches(got, ref []float32, classes int) int {
	if classes <= 0 {
		return 0
	}
	bad := 0
	for r := 0; r+classes <= len(ref); r += classes {
		g, w := got[r:r+classes], ref[r:r+classes]
		gi, ri := argmax(g), argmax(w)
		if gi == ri {
			continue
		}
		if margin := float64(w[ri]) - float64(w[gi]); !(margin <= 2*rmsDiff(g, w)) {
			bad++
		}
	}
	return bad
}

// rmsDiff is √(mean((a − b)²)).
func rmsDiff(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
