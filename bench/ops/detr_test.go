package ops

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"vitbench/bench"
)

// TestDETRTransformerParams checks the original DETR transformer's
// parameter count (docs/reference-notes.md, DETR: 17,363,456 for the
// transformer alone, plus query_embed's 100·256) and that the graph of
// the default and a padded configuration is well formed.
func TestDETRTransformerParams(t *testing.T) {
	for _, c := range []struct {
		params string
		batch  int
	}{{`{"feature_size": [25, 34]}`, 1}, {`{"feature_size": [5, 7], "padding_mask": true}`, 2}} {
		s, err := detrTransformerKind{}.Parse(json.RawMessage(c.params), c.batch)
		if err != nil {
			t.Fatal(err)
		}
		tr := s.(*detrTransformer)
		if got := bench.BytesOf(tr.transformerWeights()) / 4; got != 17363456 {
			t.Errorf("%s: transformer alone has %d parameters, the original 17,363,456", c.params, got)
		}
		if got := s.Params(); got != 17363456+25600 {
			t.Errorf("%s: %d parameters with query_embed, want 17,389,056", c.params, got)
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.params, err)
		}
	}
}

// TestDETRTransformerRejects: configurations the original cannot build
// are errors naming the parameter.
func TestDETRTransformerRejects(t *testing.T) {
	for params, want := range map[string]string{
		`{"feature_size": [5, 7], "d_model": 128}`: "d_model must be 256",
		`{"feature_size": [5, 7], "heads": 7}`:     "not a multiple of heads",
		`{"feature_size": [0, 7]}`:                 "feature_size",
		`{"feature_size": [5, 7], "levels": 2}`:    "levels",
	} {
		_, err := detrTransformerKind{}.Parse(json.RawMessage(params), 1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error mentioning %q", params, err, want)
		}
	}
}

// TestDETRParams checks the detectors' parameter counts against the
// original's (docs/reference-notes.md, DETR: parameters() of the
// instantiated modules; the DC5 variant has the same), their MACs at
// 800×1066 against the original's forward hooks (81.17, 144.62 and
// 173.17 G), the C5 size the backbone gives (ceil(n/32), ceil(n/16) with
// DC5) and the graphs.
func TestDETRParams(t *testing.T) {
	for _, c := range []struct {
		params string
		want   int64
		gmacs  float64
		c5     [2]int
	}{
		{`{"img_size": [800, 1066]}`, 41524768, 81.17, [2]int{25, 34}},
		{`{"img_size": [800, 1066], "depth": 101}`, 60464672, 144.62, [2]int{25, 34}},
		{`{"img_size": [800, 1066], "dilate": true}`, 41524768, 173.17, [2]int{50, 67}},
		{`{"img_size": [97, 131], "padding_mask": true}`, 41524768, 0, [2]int{4, 5}},
	} {
		s, err := detrKind{}.Parse(json.RawMessage(c.params), 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Params(); got != c.want {
			t.Errorf("%s: %d parameters, the original has %d", c.params, got, c.want)
		}
		if got := float64(s.MACs()) / 1e9; c.gmacs > 0 && math.Abs(got-c.gmacs) > 0.005 {
			t.Errorf("%s: %.3f GMACs, the original does %.2f", c.params, got, c.gmacs)
		}
		if tr := s.(*detr).t; [2]int{tr.h, tr.w} != c.c5 {
			t.Errorf("%s: C5 is %dx%d, want %v", c.params, tr.h, tr.w, c.c5)
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.params, err)
		}
	}
	if _, err := (detrKind{}).Parse(json.RawMessage(`{"img_size": [64, 64], "depth": 34}`), 1); err == nil || !strings.Contains(err.Error(), "depth must be 50 or 101") {
		t.Errorf("depth 34: got %v", err)
	}
}
