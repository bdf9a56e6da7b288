package runner

import (
	"testing"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/results"
)

// TestDetectorNearTiesJudgedAsSets: a detector output whose two near-tied
// scores come in the other order passes; the same swap of clearly
// different scores fails.
func TestDetectorNearTiesJudgedAsSets(t *testing.T) {
	outputs := []bench.ArraySpec{{Name: "scores", Shape: bench.Shape{1, 3}}, {Name: "labels", Shape: bench.Shape{1, 3}},
		{Name: "boxes", Shape: bench.Shape{1, 3, 4}}}
	ref := map[string][]float32{"scores": {0.9, 0.80000025, 0.8}, "labels": {4, 7, 2},
		"boxes": {0, 0, 1, 1, 0.2, 0.2, 0.5, 0.5, 0.1, 0.3, 0.6, 0.9}}
	noise := map[string]accuracy.Noise{"scores": {NMSE: 1e-15, MaxAbs: 6e-8}, "labels": {}, "boxes": {NMSE: 1e-15, MaxAbs: 6e-8}}
	class, err := accuracy.Lookup("detector", "deformable_detr", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	judge := func(order []int) string {
		got := map[string][]float32{"scores": make([]float32, 3), "labels": make([]float32, 3), "boxes": make([]float32, 12)}
		for i, j := range order {
			got["scores"][i], got["labels"][i] = ref["scores"][j], ref["labels"][j]
			copy(got["boxes"][4*i:4*i+4], ref["boxes"][4*j:4*j+4])
		}
		row := results.CheckRow{Backend: "cpu", Status: FAIL}
		if err := judgeOutputs(&row, outputs, got, func(name string) ([]float32, error) { return ref[name], nil },
			nil, class, noise); err != nil {
			t.Fatal(err)
		}
		return row.Status
	}
	if s := judge([]int{0, 2, 1}); s != OK {
		t.Errorf("near tie ranked the other way: %s, want OK", s)
	}
	if s := judge([]int{1, 0, 2}); s != FAIL {
		t.Errorf("clearly different scores swapped: %s, want FAIL", s)
	}
}

// TestDETRLabelsNearTies: DETR's per-query labels may name the other class
// of a near tie in the reference's probabilities; a clearly worse class
// fails, and so does a per-query score changed near the end (nothing is
// ranked, so no top-k band excuses it).
func TestDETRLabelsNearTies(t *testing.T) {
	outputs := []bench.ArraySpec{{Name: "pred_logits", Shape: bench.Shape{1, 2, 4}}, {Name: "scores", Shape: bench.Shape{1, 2}},
		{Name: "labels", Shape: bench.Shape{1, 2}}, {Name: "boxes", Shape: bench.Shape{1, 2, 4}}}
	// Query 0: classes 0 and 2 tie exactly; query 1: class 1 wins clearly.
	logits := []float32{2, 0, 2, -1, 0, 3, 0, 0}
	ref := map[string][]float32{"pred_logits": logits, "scores": {0.4683, 0.8668}, "labels": {0, 1},
		"boxes": {0, 0, 1, 1, 0.2, 0.2, 0.5, 0.5}}
	noise := map[string]accuracy.Noise{"pred_logits": {NMSE: 1e-15, MaxAbs: 6e-8}, "scores": {NMSE: 1e-15, MaxAbs: 6e-8},
		"labels": {}, "boxes": {NMSE: 1e-15, MaxAbs: 6e-8}}
	class, err := accuracy.Lookup("detector", "detr", "cpu")
	if err != nil {
		t.Fatal(err)
	}
	judge := func(labels, scores []float32) string {
		got := map[string][]float32{"pred_logits": logits, "scores": scores, "labels": labels, "boxes": ref["boxes"]}
		row := results.CheckRow{Backend: "cpu", Op: "detr", Status: FAIL}
		if err := judgeOutputs(&row, outputs, got, func(name string) ([]float32, error) { return ref[name], nil },
			nil, class, noise); err != nil {
			t.Fatal(err)
		}
		return row.Status
	}
	if s := judge([]float32{2, 1}, ref["scores"]); s != OK {
		t.Errorf("the other class of an exact tie: %s, want OK", s)
	}
	if s := judge([]float32{0, 0}, ref["scores"]); s != FAIL {
		t.Errorf("a clearly worse class: %s, want FAIL", s)
	}
	if s := judge([]float32{0, 1}, []float32{0.4683, 0.8667}); s != FAIL {
		t.Errorf("the last query's score changed: %s, want FAIL", s)
	}
}
