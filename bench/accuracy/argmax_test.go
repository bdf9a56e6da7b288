package accuracy

import (
	"math"
	"testing"
)

// TestAlignArgmaxTies: a label naming the other class of a near tie in
// the reference's softmax takes the reference's label; a label whose
// probability is clearly lower, or out of range, stays as it is.
func TestAlignArgmaxTies(t *testing.T) {
	tol := Tolerance{ATol: 1e-5}
	// Two queries of 3 classes + "no object": query 0's classes 0 and 2
	// tie within 1e-6 in probability, query 1's class 1 clearly wins.
	logits := []float32{2, 0, float32(2 + math.Log1p(-1e-6)), -1, 0, 3, 0, 0}
	ref := []float32{0, 1}
	got := AlignArgmaxTies([]float32{2, 1}, ref, logits, 3, tol)
	if got[0] != 0 || got[1] != 1 {
		t.Errorf("near tie: got labels %v, want [0 1]", got)
	}
	for _, bad := range [][]float32{{1, 1}, {0, 0}, {3, 1}, {0.5, 1}} {
		if got := AlignArgmaxTies(bad, ref, logits, 3, tol); got[0] != bad[0] || got[1] != bad[1] {
			t.Errorf("labels %v are not a near tie but came back as %v", bad, got)
		}
	}
	if got := AlignArgmaxTies([]float32{2, 1}, ref, logits[:7], 3, tol); got[0] != 2 {
		t.Errorf("logits of the wrong length changed the labels: %v", got)
	}
}
