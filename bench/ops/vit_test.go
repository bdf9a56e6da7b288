package ops

import (
	"encoding/json"
	"math"
	"testing"

	"vitbench/bench"
)

// TestViTParamsAndMACs checks the parameter counts and the MACs of
// docs/reference-notes.md, "ViT/DeiT counts" (the counts exact, the MACs
// within 1%), from the model definition.
func TestViTParamsAndMACs(t *testing.T) {
	for _, c := range []struct {
		name   string
		params string
		want   int64
		gmacs  float64 // 0: not given in the spec
	}{
		{"vit_ti16", `{"img_size": 224, "patch_size": 16, "embed_dim": 192, "depth": 12, "heads": 3}`, 5717416, 1.25},
		{"vit_s16", `{"img_size": 224, "patch_size": 16, "embed_dim": 384, "depth": 12, "heads": 6}`, 22050664, 4.60},
		{"vit_b16", `{"img_size": 224, "patch_size": 16, "embed_dim": 768, "depth": 12, "heads": 12}`, 86567656, 17.56},
		{"vit_l16", `{"img_size": 224, "patch_size": 16, "embed_dim": 1024, "depth": 24, "heads": 16}`, 304326632, 61.56},
		{"vit_h14", `{"img_size": 224, "patch_size": 14, "embed_dim": 1280, "depth": 32, "heads": 16}`, 632045800, 167.3},
		{"vit_b16_384", `{"img_size": 384, "patch_size": 16, "embed_dim": 768, "depth": 12, "heads": 12}`, 86859496, 55.48},
		{"vit_l16_384", `{"img_size": 384, "patch_size": 16, "embed_dim": 1024, "depth": 24, "heads": 16}`, 304715752, 0},
		{"deit_ti_distilled", `{"img_size": 224, "patch_size": 16, "embed_dim": 192, "depth": 12, "heads": 3, "distilled": true}`, 5910800, 0},
		{"deit_s_distilled", `{"img_size": 224, "patch_size": 16, "embed_dim": 384, "depth": 12, "heads": 6, "distilled": true}`, 22436432, 0},
		{"deit_b_distilled", `{"img_size": 224, "patch_size": 16, "embed_dim": 768, "depth": 12, "heads": 12, "distilled": true}`, 87338192, 0},
		{"deit_b_distilled_384", `{"img_size": 384, "patch_size": 16, "embed_dim": 768, "depth": 12, "heads": 12, "distilled": true}`, 87630032, 0},
	} {
		s, err := vitKind{}.Parse(json.RawMessage(c.params), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Params(); got != c.want {
			t.Errorf("%s: %d parameters, the spec says %d", c.name, got, c.want)
		}
		if c.gmacs > 0 {
			if got := float64(s.MACs()) / 1e9; math.Abs(got-c.gmacs)/c.gmacs > 0.01 {
				t.Errorf("%s: %.3f GMACs, the spec says %.2f", c.name, got, c.gmacs)
			}
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestT2TViTParams checks the parameter counts (all parameters, the frozen
// performer w and the sinusoid table included) and the MACs of
// docs/reference-notes.md, "T2T-ViT backbone and counts".
func TestT2TViTParams(t *testing.T) {
	for _, c := range []struct {
		name, params string
		want         int64
		gmacs        float64
	}{
		{"t2t_vit_7", `{"img_size": 224, "embed_dim": 256, "depth": 7, "heads": 4, "mlp_ratio": 2, "tokens_type": "performer"}`, 4310222, 1.15},
		{"t2t_vit_14", `{"img_size": 224, "embed_dim": 384, "depth": 14, "heads": 6, "mlp_ratio": 3, "tokens_type": "performer"}`, 21545550, 4.78},
		{"t2t_vit_24", `{"img_size": 224, "embed_dim": 512, "depth": 24, "heads": 8, "mlp_ratio": 3, "tokens_type": "performer"}`, 64105934, 13.66},
		{"t2t_vit_t_14", `{"img_size": 224, "embed_dim": 384, "depth": 14, "heads": 6, "mlp_ratio": 3, "tokens_type": "transformer"}`, 21541070, 6.09},
		{"t2t_vit_14_384", `{"img_size": 384, "embed_dim": 384, "depth": 14, "heads": 6, "mlp_ratio": 3, "tokens_type": "performer"}`, 21691470, 16.4},
	} {
		s, err := t2tViTKind{}.Parse(json.RawMessage(c.params), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Params(); got != c.want {
			t.Errorf("%s: %d parameters, the spec says %d", c.name, got, c.want)
		}
		if got := float64(s.MACs()) / 1e9; math.Abs(got-c.gmacs)/c.gmacs > 0.01 {
			t.Errorf("%s: %.3f GMACs, the spec says %.2f", c.name, got, c.gmacs)
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestT2TViTScale: t2t_vit takes the blocks' attention scale as a param
// (pretrained checkpoints use embed_dim^-0.5), head_dim^-0.5 without it.
func TestT2TViTScale(t *testing.T) {
	base := `{"img_size": 32, "embed_dim": 48, "tokens_type": "performer", "token_dim": 16, "depth": 1, "heads": 2`
	scaleOf := func(s bench.Spec) float64 {
		for _, st := range s.Graph().Steps {
			if a, ok := st.Node.(AttentionCore); ok && a.Heads == 2 {
				return a.Scale
			}
		}
		t.Fatal("no block attention in the graph")
		return 0
	}
	s, err := t2tViTKind{}.Parse(json.RawMessage(base+`}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := scaleOf(s), 1/math.Sqrt(24); math.Abs(got-want) > 1e-15 {
		t.Errorf("default scale %g, want head_dim^-0.5 = %g", got, want)
	}
	if s, err = (t2tViTKind{}).Parse(json.RawMessage(base+`, "scale": 0.125}`), 1); err != nil {
		t.Fatal(err)
	}
	if got := scaleOf(s); got != 0.125 {
		t.Errorf("scale %g, want 0.125", got)
	}
	for _, bad := range []string{`0`, `-1`} {
		if _, err := (t2tViTKind{}).Parse(json.RawMessage(base+`, "scale": `+bad+`}`), 1); err == nil {
			t.Errorf("scale %s accepted", bad)
		}
	}
}
