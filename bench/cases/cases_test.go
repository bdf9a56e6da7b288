package cases

import (
	"errors"
	"testing"
)

// TestEveryCaseResolves sweeps the registry, timm-style: every case parses,
// its graph is well formed, and names are unique.
func TestEveryCaseResolves(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range All() {
		if seen[c.Name] {
			t.Errorf("duplicate case name %s", c.Name)
		}
		seen[c.Name] = true
		s, err := c.Spec(0)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if err := s.Graph().Validate(s); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		// As a backend with no kernel for any composite node runs it.
		parts := s.Graph().ExpandFor(func(string) error { return errors.New("no kernel") })
		if err := parts.Validate(s); err != nil {
			t.Errorf("%s, composites as their parts: %v", c.Name, err)
		}
		if s.Bytes() <= 0 {
			t.Errorf("%s: bytes = %d", c.Name, s.Bytes())
		}
	}
}

// TestKnownCounts pins MACs and parameter counts against figures computed
// by hand (docs/reference-notes.md, "ViT/DeiT counts": ViT-S/16 patch_embed
// 295,296).
func TestKnownCounts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		params, macs int64
		outputElems  int64
	}{
		{"patch_embed/vit_s16", 295296, 196 * 384 * 768, 196 * 384},
		{"patch_embed/vit_b16", 768*768 + 768, 196 * 768 * 768, 196 * 768},
		{"soft_split/t2t_ss0", 0, 0, 3136 * 147},
		{"soft_split/t2t_ss1", 0, 0, 784 * 576},
		{"soft_split/t2t_ss2", 0, 0, 196 * 576},
		// docs/reference-notes.md, "ViT/DeiT counts": one ViT-S/16 block holds
		// 1,774,464 parameters; the per-block MACs N·E·3E + 2·N²·E + N·E² + 2·N·E·4E.
		{"block/vit_s16", 1774464, 197*384*3*384 + 2*197*197*384 + 197*384*384 + 2*197*384*1536, 197 * 384},
		{"block/vit_b16", 7087872, 197*768*3*768 + 2*197*197*768 + 197*768*768 + 2*197*768*3072, 197 * 768},
		{"mhsa/vit_b16", 2362368, 197*768*2304 + 2*197*197*768 + 197*768*768, 197 * 768},
	} {
		c, ok := Lookup(tc.name)
		if !ok {
			t.Fatalf("no case %s", tc.name)
		}
		s, err := c.Spec(0)
		if err != nil {
			t.Fatal(err)
		}
		if s.Params() != tc.params || s.MACs() != tc.macs || s.Outputs()[0].Shape.Elems() != tc.outputElems {
			t.Errorf("%s: params %d macs %d out %d; want %d %d %d", tc.name, s.Params(), s.MACs(),
				s.Outputs()[0].Shape.Elems(), tc.params, tc.macs, tc.outputElems)
		}
	}
}
