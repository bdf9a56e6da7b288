package accuracy

// Top1Mismatches counts the rows of got and ref (rows of classes values)
// whose largest entry is at different indices: disagreement on the
// predicted class. Ties go to the first index, as torch.argmax does.
func Top1Mismatches(got, ref []float32, classes int) int {
	if classes <= 0 {
		return 0
	}
	bad := 0
	for r := 0; r+classes <= len(ref); r += classes {
		if argmax(got[r:r+classes]) != argmax(ref[r:r+classes]) {
			bad++
		}
	}
	return bad
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
