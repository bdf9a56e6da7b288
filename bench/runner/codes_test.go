package runner

import (
	"testing"

	"vitbench/bench"
)

// TestForgiveTies: a flipped index is forgiven (index and quant take the
// reference's values) only where the two codes nearly tie for z; a flip
// between two clearly different distances stays for the exact comparison.
func TestForgiveTies(t *testing.T) {
	// Two positions, C = 2, codes e0 = (1, 0), e1 = (0, 1), e2 = (3, 3).
	e := []float32{1, 0, 0, 1, 3, 3}
	// z [1, 2, 2]: position 0 = (0.5, 0.5) ties e0 and e1 exactly; position 1 = (1, 0.1) is e0's.
	z := []float32{0.5, 1, 0.5, 0.1}
	wantIdx := []float32{0, 0}
	wantQ := []float32{1, 1, 0, 0} // [C, HW]: channel 0 then channel 1
	for _, c := range []struct {
		name     string
		idx      []float32
		forgiven int
	}{
		{"same", []float32{0, 0}, 0},
		{"tie flipped", []float32{1, 0}, 1},
		{"clear flipped", []float32{0, 1}, 0},
		{"far code", []float32{2, 0}, 0},
	} {
		q := []float32{0, 0, 0, 0}
		got := map[string][]float32{"indices": c.idx, "quant": q}
		out, n, err := forgiveTies(got, wantIdx, wantQ, z, e, bench.Shape{1, 2, 2}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if n != c.forgiven {
			t.Errorf("%s: %d positions forgiven, want %d", c.name, n, c.forgiven)
		}
		if c.forgiven > 0 && (out["indices"][0] != 0 || out["quant"][0] != 1 || out["quant"][2] != 0) {
			t.Errorf("%s: forgiven position not aligned: %v %v", c.name, out["indices"], out["quant"])
		}
		if c.forgiven == 0 && out["indices"][0] != c.idx[0] {
			t.Errorf("%s: unforgiven index changed", c.name)
		}
	}
	if b := TieBand(256, 1, 1); b < 1.2e-4 || b > 1.25e-4 {
		t.Errorf("TieBand(256, 1, 1) = %g, want 2·258·2⁻²⁴·4 ≈ 1.2e-4", TieBand(256, 1, 1))
	}
}
