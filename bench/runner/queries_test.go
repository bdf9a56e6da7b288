package runner

import (
	"math"
	"slices"
	"testing"

	"vitbench/bench"
	"vitbench/bench/accuracy"
	"vitbench/bench/fixture"
	"vitbench/bench/results"
)

// near1e3 is a near-tie rule with a band of 1e-3.
func near1e3(a, b float32) bool { return math.Abs(float64(a)-float64(b)) <= 1e-3 }

// TestAlignQueryRows: rows of near-tied scores may trade places; rows of
// clearly different or exactly equal scores may not; a proposal selected
// by one side only is forgiven only when it scores near the cut-off.
func TestAlignQueryRows(t *testing.T) {
	// ids[g] is the proposal in the backend's row g; the reference's row r holds proposal r.
	sameAs := func(ids []int) func(g, r int) bool { return func(g, r int) bool { return ids[g] == r } }
	for _, tc := range []struct {
		name      string
		ref, got  []float32
		ids, want []int
	}{
		{"identical", []float32{5, 4, 3}, []float32{5, 4, 3}, []int{0, 1, 2}, []int{0, 1, 2}},
		{"near tie swapped", []float32{5, 4.0005, 4}, []float32{5, 4.0004, 4.0003}, []int{0, 2, 1}, []int{0, 2, 1}},
		{"clear gap swapped", []float32{5, 4, 3}, []float32{4, 5, 3}, []int{1, 0, 2}, []int{0, 1, 2}},
		{"exact tie swapped", []float32{5, 4, 4, 3}, []float32{5, 4, 4, 3}, []int{0, 2, 1, 3}, []int{0, 1, 2, 3}},
		{"band of three", []float32{5, 4.0008, 4.0004, 4}, []float32{5, 4.0001, 4.0002, 4.0003}, []int{0, 3, 1, 2},
			[]int{0, 2, 3, 1}},
		{"cut-off swap", []float32{5, 4, 3}, []float32{5, 4, 2.9995}, []int{0, 1, 7}, []int{0, 1, -1}},
		{"cut-off swap, far score", []float32{5, 4, 3}, []float32{5, 4, 2.9}, []int{0, 1, 7}, []int{0, 1, 2}},
		{"cut-off swap, exactly the cut", []float32{5, 4, 3}, []float32{5, 4, 3}, []int{0, 1, 7}, []int{0, 1, 2}},
		// Every score tied exactly (a zero class head): the backend took other proposals than the
		// lower rows first.
		{"exact ties, other rows taken", []float32{3, 3, 3}, []float32{3, 3, 3}, []int{7, 8, 9}, []int{0, 1, 2}},
		// Proposal 9 scores just above a block of exact ties in the backend, just below it in the
		// reference: the block's last proposal leaves the selection.
		{"entered above a tied block", []float32{5, 3, 3, 3}, []float32{5, 3.0004, 3, 3}, []int{0, 9, 1, 2},
			[]int{0, 2, 3, -1}},
		// Proposal 1 scores just above a block of exactly tied ones (3) in the reference, just below
		// it in the backend: it leaves the selection and one more tied proposal enters at the end.
		{"dropped above a tied block", []float32{5, 3.0005, 3, 3, 3}, []float32{5, 3, 3, 3, 3}, []int{0, 2, 3, 4, 9},
			[]int{0, -1, 1, 2, 3}},
		{"dropped far above the cut-off", []float32{5, 3.5, 3, 3, 3}, []float32{5, 3, 3, 3, 3}, []int{0, 2, 3, 4, 9},
			[]int{0, 1, 2, 3, 4}},
		{"cut-off band swapped and replaced", []float32{5, 3.0005, 3}, []float32{5, 3.0004, 3.0002}, []int{0, 9, 1},
			[]int{0, 2, -1}},
		{"unmatched middle band", []float32{5, 4.0005, 4, 1}, []float32{5, 4.0005, 4, 1}, []int{0, 8, 9, 3},
			[]int{0, 1, 2, 3}},
	} {
		got := AlignQueryRows(tc.ref, tc.got, sameAs(tc.ids), near1e3).Source
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: source %v, want %v", tc.name, got, tc.want)
		}
	}
}

// twoStageRef is a two-stage deformable_detr output set of one image and
// four queries: proposals 1 and 2 nearly tie, proposal 3 is the cut-off.
func twoStageRef() ([]bench.ArraySpec, map[string][]float32) {
	outputs := []bench.ArraySpec{{Name: "pred_logits", Shape: bench.Shape{1, 4, 2}}, {Name: "pred_boxes", Shape: bench.Shape{1, 4, 4}},
		{Name: "proposal_logits", Shape: bench.Shape{1, 4, 2}}}
	ref := map[string][]float32{
		"pred_logits":     {1, 2, 3, 4, 5, 6, 7, 8},
		"pred_boxes":      {.1, .1, .2, .2, .3, .3, .2, .2, .5, .5, .1, .1, .7, .7, .2, .2},
		"proposal_logits": {2.5, 0, 1.200002, 0, 1.2, 0, 0.4, 0},
	}
	return outputs, ref
}

// permuted returns ref's query rows in order (row i = ref's row order[i]).
func permuted(outputs []bench.ArraySpec, ref map[string][]float32, order []int) map[string][]float32 {
	got := map[string][]float32{}
	for _, a := range outputs {
		w := int(a.Shape.Elems()) / len(order)
		for _, r := range order {
			got[a.Name] = append(got[a.Name], ref[a.Name][r*w:(r+1)*w]...)
		}
	}
	return got
}

// TestTwoStageQueryRowsJudged: a two-stage detector whose near-tied
// proposals trade query rows passes, under fp32 and tf32 tolerances; the
// same swap of clearly ranked proposals fails, and so does any query
// order on an op without proposals.
func TestTwoStageQueryRowsJudged(t *testing.T) {
	outputs, ref := twoStageRef()
	noise := map[string]accuracy.Noise{}
	for name := range ref {
		noise[name] = accuracy.Noise{NMSE: 1e-15, MaxAbs: 1e-7}
	}
	judge := func(op, backend string, got map[string][]float32, sampling map[string]fixture.Sampling) string {
		class, err := accuracy.Lookup("detector", "deformable_detr", backend)
		if err != nil {
			t.Fatal(err)
		}
		row := results.CheckRow{Backend: backend, Op: op, Status: FAIL}
		stored := func(name string) ([]float32, error) {
			if s, ok := sampling[name]; ok {
				for _, a := range outputs {
					if a.Name == name {
						return s.Take(ref[name], a.Shape), nil
					}
				}
			}
			return ref[name], nil
		}
		if err := judgeOutputs(&row, outputs, got, stored, sampling, class, noise); err != nil {
			t.Fatal(err)
		}
		return row.Status
	}
	for _, backend := range []string{"cpu", "cuda-emu-tf32"} {
		if s := judge("deformable_detr", backend, permuted(outputs, ref, []int{0, 2, 1, 3}), nil); s != OK {
			t.Errorf("%s: near-tied proposals in the other order: %s, want OK", backend, s)
		}
		if s := judge("deformable_detr", backend, permuted(outputs, ref, []int{1, 0, 2, 3}), nil); s != FAIL {
			t.Errorf("%s: clearly ranked proposals swapped: %s, want FAIL", backend, s)
		}
	}
	if s := judge("vit", "cpu", permuted(outputs, ref, []int{0, 2, 1, 3}), nil); s != FAIL {
		t.Errorf("an op without query proposals took a swapped order: %s, want FAIL", s)
	}
	// pred_logits stored as a sample of every other query: the order found on the whole outputs
	// applies to it before the cut (row 2 of the sample is proposal 2).
	smp := map[string]fixture.Sampling{"pred_logits": {Axis: 1, Step: 2}}
	if s := judge("deformable_detr", "cpu", permuted(outputs, ref, []int{0, 2, 1, 3}), smp); s != OK {
		t.Errorf("sampled pred_logits, near-tied proposals in the other order: %s, want OK", s)
	}
	// A proposal just below the cut-off (score 0.39995) in the last row: forgiven under tf32,
	// whose band is wide, not under fp32's measured one.
	cut := permuted(outputs, ref, []int{0, 1, 2, 3})
	copy(cut["pred_logits"][6:8], []float32{-3, 9})
	copy(cut["pred_boxes"][12:16], []float32{.9, .1, .05, .05})
	copy(cut["proposal_logits"][6:8], []float32{0.39995, 1})
	if s := judge("deformable_detr", "cuda-emu-tf32", cut, nil); s != OK {
		t.Errorf("tf32: a near-cut-off proposal selected instead of the last: %s, want OK", s)
	}
	if s := judge("deformable_detr", "cpu", cut, nil); s != FAIL {
		t.Errorf("fp32: a proposal 5e-5 below the cut-off selected instead of the last: %s, want FAIL", s)
	}
}
