package accuracy

// Detections are one batch of a detector's post-processed top-k: per
// image, K scores in descending order, their labels and their boxes (4
// values each), flattened [N, K], [N, K] and [N, K, 4].
type Detections struct {
	Scores, Labels, Boxes []float32
}

// AlignTies reorders got's detections, image by image, to the reference's
// order wherever the two orders may legitimately differ: inside a tie band
// of ref's scores (consecutive scores closer than twice scoreTol's bound,
// so two correct implementations can rank them either way). Within a band
// each reference detection is matched to one of got's at the band's
// positions with the same label, a score within scoreTol and a box within
// boxTol, and got's matched detections take the reference's positions. A
// band that ends at position K (the last one) may hold detections of got
// matching none of the reference's, when near-tied candidates beyond the
// top-k were ranked differently; those positions take the reference's
// values and are counted in excluded. Detections outside every band, and
// bands that do not match, are left as they are for the ordinary
// comparison to judge. got is not modified.
func AlignTies(got, ref Detections, k int, scoreTol, boxTol Tolerance) (aligned Detections, excluded int) {
	aligned = Detections{Scores: append([]float32(nil), got.Scores...), Labels: append([]float32(nil), got.Labels...),
		Boxes: append([]float32(nil), got.Boxes...)}
	if k <= 0 || len(ref.Scores) != len(got.Scores) || len(ref.Labels) != len(ref.Scores) ||
		len(got.Labels) != len(got.Scores) || len(ref.Boxes) != 4*len(ref.Scores) || len(got.Boxes) != 4*len(got.Scores) {
		return aligned, 0
	}
	same := func(gi, ri int) bool {
		if got.Labels[gi] != ref.Labels[ri] || !scoreTol.Within(got.Scores[gi], ref.Scores[ri]) {
			return false
		}
		for c := 0; c < 4; c++ {
			if !boxTol.Within(got.Boxes[4*gi+c], ref.Boxes[4*ri+c]) {
				return false
			}
		}
		return true
	}
	near := scoreTol.NearTie
	for img := 0; img+k <= len(ref.Scores); img += k {
		for lo := img; lo < img+k; {
			hi := lo + 1
			for hi < img+k && near(ref.Scores[hi-1], ref.Scores[hi]) {
				hi++
			}
			if hi-lo > 1 || hi == img+k {
				excluded += alignBand(got, ref, aligned, lo, hi, hi == img+k, same, near)
			}
			lo = hi
		}
	}
	return aligned, excluded
}

// alignBand matches the reference detections [lo, hi) to got's at the same
// positions and, when every one is matched — or, in the last band, when
// the reference's detections left over and got's left over all score near
// the top-k's cut-off (the last reference score), so either side may have
// ranked other candidates beyond it — writes got's matched detections
// into aligned at the reference's positions and the reference's values at
// the rest. It returns the positions filled from the reference.
func alignBand(got, ref, aligned Detections, lo, hi int, last bool, same func(gi, ri int) bool, near func(a, b float32) bool) int {
	used := make([]bool, hi-lo)
	match := make([]int, hi-lo)
	missing := 0
	for ri := lo; ri < hi; ri++ {
		match[ri-lo] = -1
		for gi := lo; gi < hi; gi++ {
			if !used[gi-lo] && same(gi, ri) {
				used[gi-lo], match[ri-lo] = true, gi
				break
			}
		}
		if match[ri-lo] < 0 {
			missing++
		}
	}
	if missing > 0 {
		cut := ref.Scores[hi-1]
		for i := lo; i < hi; i++ {
			if !last || (match[i-lo] < 0 && !near(ref.Scores[i], cut)) || (!used[i-lo] && !near(got.Scores[i], cut)) {
				return 0
			}
		}
	}
	for ri := lo; ri < hi; ri++ {
		src, gi := ref, ri
		if match[ri-lo] >= 0 {
			src, gi = got, match[ri-lo]
		}
		aligned.Scores[ri], aligned.Labels[ri] = src.Scores[gi], src.Labels[gi]
		copy(aligned.Boxes[4*ri:4*ri+4], src.Boxes[4*gi:4*gi+4])
	}
	return missing
}
