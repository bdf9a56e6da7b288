package ops

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"vitbench/bench"
)

// voloConfigs are the released VOLO configs (docs/reference-notes.md, "VOLO").
var voloConfigs = map[string]string{
	"d1": `"layers": [4, 4, 8, 2], "embed_dims": [192, 384, 384, 384], "heads": [6, 12, 12, 12]`,
	"d2": `"layers": [6, 4, 10, 4], "embed_dims": [256, 512, 512, 512], "heads": [8, 16, 16, 16]`,
	"d3": `"layers": [8, 8, 16, 4], "embed_dims": [256, 512, 512, 512], "heads": [8, 16, 16, 16]`,
	"d4": `"layers": [8, 8, 16, 4], "embed_dims": [384, 768, 768, 768], "heads": [12, 16, 16, 16]`,
	"d5": `"layers": [12, 12, 20, 4], "embed_dims": [384, 768, 768, 768], "heads": [12, 16, 16, 16], "mlp_ratio": 4, "stem_hidden_dim": 128`,
}

// TestVOLOParamsAndMACs checks every entry of the VOLO parameter
// table (exact) and the MACs (within 1%) of docs/reference-notes.md, "VOLO", from the model
// definition.
func TestVOLOParamsAndMACs(t *testing.T) {
	params := map[string][4]int64{ // 224, 384, 448, 512
		"d1": {26632040, 26777960, 26857832, 26949992},
		"d2": {58678336, 58872896, 58979392, 59102272},
		"d3": {86325072, 86519632, 86626128, 86749008},
		"d4": {192961520, 193253360, 193413104, 193597424},
		"d5": {295455584, 295747424, 295907168, 296091488},
	}
	gmacs := map[string]float64{"d1/224": 6.92, "d1/384": 22.68, "d2/224": 14.31, "d2/384": 46.06, "d3/224": 20.73,
		"d3/448": 96.13, "d4/224": 44.26, "d4/448": 196.84, "d5/224": 72.3, "d5/448": 314.65, "d5/512": 424.56}
	for name, cfg := range voloConfigs {
		for i, size := range []int{224, 384, 448, 512} {
			s, err := voloKind{}.Parse(json.RawMessage(fmt.Sprintf(`{"img_size": %d, %s}`, size, cfg)), 1)
			if err != nil {
				t.Fatalf("volo_%s@%d: %v", name, size, err)
			}
			if got := s.Params(); got != params[name][i] {
				t.Errorf("volo_%s@%d: %d parameters, the spec says %d", name, size, got, params[name][i])
			}
			if want, ok := gmacs[fmt.Sprintf("%s/%d", name, size)]; ok {
				if got := float64(s.MACs()) / 1e9; math.Abs(got-want)/want > 0.01 {
					t.Errorf("volo_%s@%d: %.3f GMACs, the spec says %.2f", name, size, got, want)
				}
			}
			if err := s.Graph().Validate(s); err != nil {
				t.Errorf("volo_%s@%d: %v", name, size, err)
			}
		}
	}
}

// TestVOLOComponentCounts checks VOLO-D1 part by part (docs/reference-notes.md,
// "VOLO"): the stem, one outlooker, one class block.
func TestVOLOComponentCounts(t *testing.T) {
	for _, c := range []struct {
		kind   bench.OpKind
		params string
		want   int64
	}{
		{voloStemKind{}, `{"img_size": 224, "embed_dim": 192}`, 280320},
		{outlookerKind{}, `{"dim": 192, "heads": 6, "img_size": 28}`, 390438},
		{classBlockKind{}, `{"tokens": 197, "dim": 384, "heads": 12}`, 1478016},
		{outlookKind{}, `{"dim": 192, "heads": 6, "img_size": 28}`, 36864 + 93798 + 37056},
	} {
		s, err := c.kind.Parse(json.RawMessage(c.params), 1)
		if err != nil {
			t.Fatalf("%s: %v", c.kind.Name(), err)
		}
		if got := s.Params(); got != c.want {
			t.Errorf("%s: %d parameters, want %d", c.kind.Name(), got, c.want)
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.kind.Name(), err)
		}
	}
}

// TestVOLOBadParams checks that impossible configs are refused by name.
func TestVOLOBadParams(t *testing.T) {
	for _, c := range []struct {
		kind   bench.OpKind
		params string
		want   string
	}{
		{outlookKind{}, `{"dim": 190, "heads": 6, "img_size": 28}`, "not a multiple of heads"},
		{outlookKind{}, `{"dim": 192, "heads": 6, "img_size": 28, "kernel_size": 5}`, "VOLO needs them equal"},
		{outlookKind{}, `{"dim": 192, "heads": 6, "img_size": 28, "stride": 0}`, "stride must be positive"},
		{outlookKind{}, `{"dim": 192, "heads": 6, "img_size": 28, "dilation": 2}`, "unknown field"},
		{classAttnKind{}, `{"tokens": 0, "dim": 30, "heads": 3}`, "tokens must be positive"},
		{voloStemKind{}, `{"img_size": 6, "embed_dim": 8}`, "smaller than one patch"},
		{voloKind{}, `{"img_size": 224, "layers": [1, 1, 1], "embed_dims": [8, 8, 8], "heads": [1, 1, 1]}`, "need 4 entries"},
		{voloKind{}, `{"img_size": 224, "layers": [1, 1, 1, 1], "embed_dims": [8, 16, 16, 8], "heads": [1, 1, 1, 1]}`, "must be equal"},
		{voloKind{}, `{"img_size": [72, 31], "layers": [1, 1, 1, 1], "embed_dims": [8, 8, 8, 8], "heads": [1, 1, 1, 1]}`, "position embedding"},
	} {
		_, err := c.kind.Parse(json.RawMessage(c.params), 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %v, want one containing %q", c.kind.Name(), c.params, err, c.want)
		}
	}
}
