package accuracy

import "math"

// AlignArgmaxTies returns got's labels with every label that legitimately
// differs from the reference's replaced by the reference's: DETR's
// post-processing keeps, for each query, the class of the largest softmax
// probability among the first classes columns of refLogits (rows of
// classes + 1 logits, the last "no object"); when two classes' reference
// probabilities are closer than twice scoreTol's bound, two correct
// implementations may pick either, so a got label naming the other class
// of such a near tie takes the reference's label. Any other difference is
// left for the ordinary comparison to judge. Lengths that do not fit
// (len(refLogits) ≠ len(ref)·(classes+1)) leave got unchanged.
func AlignArgmaxTies(got, ref, refLogits []float32, classes int, scoreTol Tolerance) []float32 {
	out := append([]float32(nil), got...)
	c := classes + 1
	if classes <= 0 || len(got) != len(ref) || len(refLogits) != len(ref)*c {
		return out
	}
	for r := range ref {
		gl, rl := int(got[r]), int(ref[r])
		if gl == rl || float32(gl) != got[r] || gl < 0 || gl >= classes || rl < 0 || rl >= classes {
			continue
		}
		row := refLogits[r*c : (r+1)*c]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v) - mx)
		}
		pg, pr := math.Exp(float64(row[gl])-mx)/sum, math.Exp(float64(row[rl])-mx)/sum
		if math.Abs(pg-pr) <= 2*(scoreTol.ATol+scoreTol.RTol*pr) {
			out[r] = ref[r]
		}
	}
	return out
}
