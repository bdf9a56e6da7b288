package ops

import (
	"encoding/json"
	"strings"
	"testing"

	"vitbench/bench"
)

// TestDeformableParamsRejectInconsistentInput checks that every
// inconsistency issue 4 lists is refused with a message naming what is
// wrong and what was expected.
func TestDeformableParamsRejectInconsistentInput(t *testing.T) {
	for _, tc := range []struct {
		op, params string
		want       []string // substrings of the error
	}{
		{"ms_deform_attn_core", `{"queries": 3, "heads": 2, "head_dim": 4, "points": 2, "spatial_shapes": [[6, 4], [3, 2]], "level_start_index": [0, 20]}`,
			[]string{"level_start_index [0 20]", "want [0 24]"}},
		{"ms_deform_attn_core", `{"queries": 3, "heads": 2, "head_dim": 4, "points": 2, "spatial_shapes": [[6, 4], [3, 2]], "level_start_index": [0]}`,
			[]string{"level_start_index", "want [0 24]"}},
		{"ms_deform_attn_core", `{"queries": 3, "heads": 2, "head_dim": 4, "points": 2, "spatial_shapes": []}`,
			[]string{"spatial_shapes lists no levels"}},
		{"ms_deform_attn_core", `{"queries": 3, "heads": 2, "head_dim": 4, "points": 2, "spatial_shapes": [[6, 0]]}`,
			[]string{"spatial_shapes[0] = [6, 0]"}},
		{"ms_deform_attn_core", `{"queries": 3, "heads": 2, "head_dim": 4, "points": 2, "spatial_shapes": [[6, 4]], "levels": 1}`,
			[]string{"unknown field \"levels\""}},
		{"ms_deform_attn", `{"queries": 3, "d_model": 60, "heads": 2, "head_dim": 31, "points": 2, "spatial_shapes": [[6, 4]]}`,
			[]string{"heads·head_dim = 2·31 differs from d_model 60"}},
		{"ms_deform_attn", `{"queries": 3, "d_model": 61, "heads": 2, "points": 2, "spatial_shapes": [[6, 4]]}`,
			[]string{"d_model 61 is not a multiple of heads 2"}},
		{"ms_deform_attn", `{"queries": 3, "d_model": 60, "heads": 2, "points": 2, "spatial_shapes": [[6, 4]], "ref_dims": 3}`,
			[]string{"ref_dims must be 2"}},
		{"deform_conv2d", `{"in_chans": 6, "out_chans": 4, "img_size": 8, "kernel_size": 3, "offset_groups": 4}`,
			[]string{"in_chans 6 is not a multiple of offset_groups 4"}},
		{"deform_conv2d", `{"in_chans": 6, "out_chans": 5, "img_size": 8, "kernel_size": 3, "groups": 2}`,
			[]string{"out_chans 5 is not a multiple of groups 2"}},
		{"deform_conv2d", `{"in_chans": 6, "out_chans": 4, "img_size": 2, "kernel_size": 3}`,
			[]string{"does not fit"}},
	} {
		k, err := bench.LookupOpKind(tc.op)
		if err != nil {
			t.Fatal(err)
		}
		_, err = k.Parse(json.RawMessage(tc.params), 1)
		if err == nil {
			t.Errorf("%s %s: accepted", tc.op, tc.params)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %s: error %q lacks %q", tc.op, tc.params, err, w)
			}
		}
	}
}

// TestDeformableShapes pins the arrays each op kind derives: the offset
// channels of deform_conv2d are 2·offset_groups·kh·kw, and MSDeformAttn
// at Deformable DETR's configuration has 230,272 parameters.
func TestDeformableShapes(t *testing.T) {
	parse := func(op, params string, batch int) bench.Spec {
		k, _ := bench.LookupOpKind(op)
		s, err := k.Parse(json.RawMessage(params), batch)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	dc := parse("deform_conv2d", `{"in_chans": 12, "out_chans": 8, "img_size": [9, 7], "kernel_size": [5, 3], "padding": [2, 1], "groups": 2, "offset_groups": 3}`, 2)
	in := dc.Inputs()
	if !in[1].Shape.Equal(bench.Shape{2, 2 * 3 * 15, 9, 7}) || !in[2].Shape.Equal(bench.Shape{2, 3 * 15, 9, 7}) {
		t.Errorf("deform_conv2d inputs %v", in)
	}
	if w := dc.Weights()[0].Shape; !w.Equal(bench.Shape{8, 6, 5, 3}) {
		t.Errorf("deform_conv2d weight %v", w)
	}
	enc := parse("ms_deform_attn", `{"queries": 17821, "d_model": 256, "heads": 8, "points": 4, "spatial_shapes": [[100, 134], [50, 67], [25, 34], [13, 17]], "level_start_index": [0, 13400, 16750, 17600]}`, 1)
	if enc.Params() != 230272 {
		t.Errorf("MSDeformAttn params %d, want 230,272", enc.Params())
	}
	if in := enc.Inputs(); !in[2].Shape.Equal(bench.Shape{1, 17821, 256}) || len(in) != 3 {
		t.Errorf("ms_deform_attn inputs %v", in)
	}
	// docs/reference-notes.md, "Deformable DETR counts": the module's projections 4.09 GMACs plus ~0.36 of sampling.
	if m := enc.MACs(); m < 4.4e9 || m > 4.5e9 {
		t.Errorf("ms_deform_attn MACs %d", m)
	}
}
