package runner

import (
	"maps"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/fixture"
)

// alignDetections returns got with a detector's post-processed top-k —
// the outputs scores [N, K], labels [N, K] and boxes [N, K, 4], when a case
// has all three unsampled — put in the reference's order inside bands of
// near-tied scores (accuracy.AlignTies, with the scores' and boxes'
// tolerances), so that two correct rankings of near-equal scores compare
// equal; other cases' outputs come back unchanged.
//
// DETR (op "detr") keeps every query in query order, so nothing is ranked:
// its labels are aligned instead where the reference's class
// probabilities near-tie (accuracy.AlignArgmaxTies, with the scores'
// tolerance), from pred_logits [N, Q, C+1] and labels [N, Q] unsampled.
func alignDetections(op string, outputs []bench.ArraySpec, got map[string][]float32, ref func(name string) ([]float32, error),
	sampling map[string]fixture.Sampling, tolFor func(name string, ref []float32) accuracy.Tolerance) (map[string][]float32, error) {
	shapes := map[string]bench.Shape{}
	for _, a := range outputs {
		shapes[a.Name] = a.Shape
	}
	if op == "detr" {
		return alignDETRLabels(shapes, got, ref, sampling, tolFor)
	}
	s, l, b := shapes["scores"], shapes["labels"], shapes["boxes"]
	if len(s) != 2 || !s.Equal(l) || len(b) != 3 || b[0] != s[0] || b[1] != s[1] || b[2] != 4 {
		return got, nil
	}
	for _, name := range []string{"scores", "labels", "boxes"} {
		if _, ok := sampling[name]; ok {
			return got, nil
		}
	}
	var want [3][]float32
	for i, name := range []string{"scores", "labels", "boxes"} {
		v, err := ref(name)
		if err != nil {
			return nil, err
		}
		want[i] = v
	}
	r := accuracy.Detections{Scores: want[0], Labels: want[1], Boxes: want[2]}
	g := accuracy.Detections{Scores: got["scores"], Labels: got["labels"], Boxes: got["boxes"]}
	a, _ := accuracy.AlignTies(g, r, s[1], tolFor("scores", r.Scores), tolFor("boxes", r.Boxes))
	out := maps.Clone(got)
	out["scores"], out["labels"], out["boxes"] = a.Scores, a.Labels, a.Boxes
	return out, nil
}

// alignDETRLabels is alignDetections for DETR's per-query outputs.
func alignDETRLabels(shapes map[string]bench.Shape, got map[string][]float32, ref func(name string) ([]float32, error),
	sampling map[string]fixture.Sampling, tolFor func(name string, ref []float32) accuracy.Tolerance) (map[string][]float32, error) {
	lg, l, s := shapes["pred_logits"], shapes["labels"], shapes["scores"]
	if len(lg) != 3 || len(l) != 2 || l[0] != lg[0] || l[1] != lg[1] || !s.Equal(l) {
		return got, nil
	}
	for _, name := range []string{"pred_logits", "labels", "scores"} {
		if _, ok := sampling[name]; ok {
			return got, nil
		}
	}
	logits, err := ref("pred_logits")
	if err != nil {
		return nil, err
	}
	labels, err := ref("labels")
	if err != nil {
		return nil, err
	}
	scores, err := ref("scores")
	if err != nil {
		return nil, err
	}
	out := maps.Clone(got)
	out["labels"] = accuracy.AlignArgmaxTies(got["labels"], labels, logits, lg[2]-1, tolFor("scores", scores))
	return out, nil
}
