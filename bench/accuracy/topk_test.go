package accuracy

import (
	"slices"
	"testing"
)

// TestAlignTies: detections whose near-tied scores a correct backend ranks
// the other way are put back in the reference's order; a wrong label, a
// wrong box or a swap of clearly different scores is left for the
// comparison to fail.
func TestAlignTies(t *testing.T) {
	tol := Tolerance{ATol: 1e-6}
	box := func(v float32) []float32 { return []float32{v, v, v + 1, v + 1} }
	ref := Detections{Scores: []float32{0.9, 0.8, 0.8000005, 0.7, 0.6000004, 0.6}, Labels: []float32{1, 2, 3, 4, 5, 6}}
	for i := range ref.Scores {
		ref.Boxes = append(ref.Boxes, box(float32(i))...)
	}
	swap := func(d Detections, i, j int) Detections {
		out := Detections{Scores: slices.Clone(d.Scores), Labels: slices.Clone(d.Labels), Boxes: slices.Clone(d.Boxes)}
		out.Scores[i], out.Scores[j] = out.Scores[j], out.Scores[i]
		out.Labels[i], out.Labels[j] = out.Labels[j], out.Labels[i]
		for c := 0; c < 4; c++ {
			out.Boxes[4*i+c], out.Boxes[4*j+c] = out.Boxes[4*j+c], out.Boxes[4*i+c]
		}
		return out
	}
	equal := func(a, b Detections) bool {
		return slices.Equal(a.Scores, b.Scores) && slices.Equal(a.Labels, b.Labels) && slices.Equal(a.Boxes, b.Boxes)
	}
	// Two images; image 1 ranks the near tie (1, 2) the other way.
	got2 := Detections{Scores: append(slices.Clone(ref.Scores), swap(ref, 1, 2).Scores...),
		Labels: append(slices.Clone(ref.Labels), swap(ref, 1, 2).Labels...), Boxes: append(slices.Clone(ref.Boxes), swap(ref, 1, 2).Boxes...)}
	ref2 := Detections{Scores: append(slices.Clone(ref.Scores), ref.Scores...), Labels: append(slices.Clone(ref.Labels), ref.Labels...),
		Boxes: append(slices.Clone(ref.Boxes), ref.Boxes...)}
	if a, n := AlignTies(got2, ref2, 6, tol, tol); !equal(a, ref2) || n != 0 {
		t.Errorf("a swapped near tie is not aligned: %+v, %d excluded", a, n)
	}
	// The last band: the reference's last detection is near the cut-off; got
	// ranked another candidate (label 9, score just below) there instead.
	last := swap(ref, 0, 0)
	last.Scores[5], last.Labels[5] = 0.5999999, 9
	if a, n := AlignTies(last, ref, 6, tol, tol); n != 1 || a.Labels[5] != 6 {
		t.Errorf("the cut-off tie: %d excluded, labels %v", n, a.Labels)
	}
	for _, c := range []struct {
		name string
		got  Detections
	}{
		{"clearly different scores swapped", swap(ref, 0, 1)},
		{"wrong label inside a tie", func() Detections { d := swap(ref, 1, 2); d.Labels[1] = 7; return d }()},
		{"wrong box inside a tie", func() Detections { d := swap(ref, 1, 2); d.Boxes[4] += 0.5; return d }()},
		{"wrong label away from the cut-off", func() Detections { d := swap(ref, 0, 0); d.Labels[3] = 8; return d }()},
	} {
		a, _ := AlignTies(c.got, ref, 6, tol, tol)
		if equal(a, ref) {
			t.Errorf("%s: aligned into the reference", c.name)
		}
		if m := Compare(a.Labels, ref.Labels, tol); m.Pass(tol) && slices.Equal(a.Boxes, ref.Boxes) && slices.Equal(a.Scores, ref.Scores) {
			t.Errorf("%s: passes after alignment", c.name)
		}
	}
}
