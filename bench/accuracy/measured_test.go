package accuracy

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	_ "vitbench/bench/ops" // registers every op kind
)

// TestMeasuredNeverLooserThanItsClass: whatever the recorded noise, the
// measured bounds stay inside the class's, and exact stays exact.
func TestMeasuredNeverLooserThanItsClass(t *testing.T) {
	for _, name := range ClassNames() {
		c := classes[name]
		for _, n := range []Noise{{}, {NMSE: 1e-14, MaxAbs: 1e-7}, {NMSE: 1, MaxAbs: 10}} {
			m := Measured(c, n, 3)
			if m.NMSE > c.NMSE || m.ATol > c.ATol || m.RTol > c.RTol {
				t.Errorf("%s with noise %+v: measured %+v is looser than the class %+v", name, n, m, c)
			}
		}
	}
	if m := Measured(classes["exact"], Noise{NMSE: 1, MaxAbs: 1}, 1); m != classes["exact"] {
		t.Errorf("exact became %+v", m)
	}
}

// TestMeasuredCatchesANearMiss: an output off by a systematic relative
// 1e-5 (a LayerNorm eps ten times too large does about this) passes the
// gemm class but not a bound measured from float32 rounding noise, while
// an output with noise of the reference's own size passes both.
func TestMeasuredCatchesANearMiss(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 4096
	ref64 := make([]float64, n)
	ref, fresh, near := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range ref64 {
		ref64[i] = r.NormFloat64()
		ref[i] = float32(ref64[i] * (1 + 3e-8*r.NormFloat64())) // the reference: float64 plus float32-sized noise
		fresh[i] = float32(ref64[i] * (1 + 3e-8*r.NormFloat64()))
		near[i] = float32(ref64[i] * (1 + 1e-5))
	}
	var sq, num, mx, refMax float64
	for i, v := range ref64 {
		d := float64(ref[i]) - v
		sq, num, mx, refMax = sq+v*v, num+d*d, math.Max(mx, math.Abs(d)), math.Max(refMax, math.Abs(v))
	}
	noise := Noise{NMSE: num / sq, MaxAbs: mx}
	gemm, _ := Lookup("gemm", "gemm", "cpu")
	tol := OutputTolerances(gemm, "cpu", map[string]Noise{"out": noise})("out", ref)
	if m := Compare(fresh, ref, tol); !m.Pass(tol) {
		t.Errorf("an independent float32 computation fails the measured bound %+v: %+v", tol, m)
	}
	if m := Compare(near, ref, gemm); !m.Pass(gemm) {
		t.Fatalf("the near miss should pass the gemm class: %+v", m)
	}
	if m := Compare(near, ref, tol); m.Pass(tol) {
		t.Errorf("the near miss passes the measured bound %+v: %+v", tol, m)
	} else if k := Multiple(m, noise, refMax); k < NoiseMultiple {
		t.Errorf("a failing output's multiple %g is below M = %d", k, NoiseMultiple)
	}
	// Reduced-precision backends and outputs without a record keep the class.
	if got := OutputTolerances(gemm, "cuda-bf16", map[string]Noise{"out": noise})("out", ref); got != gemm {
		t.Errorf("bf16 got a measured tolerance %+v", got)
	}
	if got := OutputTolerances(gemm, "cpu", nil)("out", ref); got != gemm {
		t.Errorf("no record: %+v, want the class", got)
	}
}

// TestOpKindDecidesTheLoosestClass: a fixture may ask for a tighter class
// than its op kind's, never a looser one.
func TestOpKindDecidesTheLoosestClass(t *testing.T) {
	if got, _ := Lookup("network", "layernorm", "cpu"); got.Class != "elementwise" {
		t.Errorf("layernorm asking for network got %q", got.Class)
	}
	if got, _ := Lookup("exact", "layernorm", "cpu"); got.Class != "exact" {
		t.Errorf("layernorm asking for exact got %q", got.Class)
	}
	if got, _ := Lookup("gemm", "vit", "cpu"); got.Class != "gemm" {
		t.Errorf("vit asking for gemm got %q", got.Class)
	}
	if _, err := Lookup("gemm", "no_such_op", "cpu"); err == nil {
		t.Error("an op kind without a class was accepted")
	}
	for _, op := range bench.OpKindNames() {
		c, err := OpClass(op)
		if err != nil {
			t.Error(err)
		} else if _, ok := classes[c]; !ok {
			t.Errorf("op kind %s: class %q does not exist", op, c)
		}
	}
}
