package accuracy

import (
	"math"
	"testing"
)

func TestCompare(t *testing.T) {
	gemm, _ := Lookup("gemm", "patch_embed", "cpu")
	exact, _ := Lookup("exact", "soft_split", "cpu")
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name     string
		got, ref []float32
		tol      Tolerance
		pass     bool
		maxAbsAt int64
	}{
		{"identical", []float32{1, 2, 3}, []float32{1, 2, 3}, exact, true, 0},
		{"one ulp fails exact", []float32{1, math.Nextafter32(2, 3), 3}, []float32{1, 2, 3}, exact, false, 1},
		{"within gemm", []float32{1.0005, 2, 3}, []float32{1, 2, 3}, gemm, true, 0},
		{"outside gemm", []float32{1, 2, 3.1}, []float32{1, 2, 3}, gemm, false, 2},
		{"nan in got", []float32{1, nan, 3}, []float32{1, 2, 3}, gemm, false, 0},
		{"matching inf", []float32{inf, 2}, []float32{inf, 2}, exact, true, 1},
		{"inf sign", []float32{-inf, 2}, []float32{inf, 2}, gemm, false, 1},
		{"nan in ref unmatched", []float32{1, 2}, []float32{nan, 2}, gemm, false, 1},
		{"zero ref", []float32{0, 0}, []float32{0, 0}, exact, true, 0},
	} {
		m := Compare(c.got, c.ref, c.tol)
		if m.Pass(c.tol) != c.pass {
			t.Errorf("%s: pass = %v, want %v (%+v)", c.name, !c.pass, c.pass, m)
		}
		if m.MaxAbsAt != c.maxAbsAt {
			t.Errorf("%s: max abs at %d, want %d", c.name, m.MaxAbsAt, c.maxAbsAt)
		}
	}
}

func TestNMSE(t *testing.T) {
	m := Compare([]float32{1.1, 2}, []float32{1, 2}, Tolerance{RTol: 1, ATol: 1, NMSE: 1})
	if want := 0.01 / 5; math.Abs(m.NMSE-want) > 1e-9 {
		t.Errorf("NMSE %g, want %g", m.NMSE, want)
	}
	if math.Abs(m.MaxRel-0.1) > 1e-6 || m.MaxRelAt != 0 {
		t.Errorf("max rel %g at %d", m.MaxRel, m.MaxRelAt)
	}
	tight := Tolerance{RTol: 1, ATol: 1, NMSE: 1e-3}
	if m.Pass(tight) {
		t.Error("NMSE bound not enforced")
	}
}

func TestUnknownClass(t *testing.T) {
	if _, err := Lookup("fuzzy", "x", "cpu"); err == nil {
		t.Error("unknown class accepted")
	}
}

func TestTop1Mismatches(t *testing.T) {
	ref := []float32{0.1, 0.9, 0.0, 0.5, 0.2, 0.3}
	if n := Top1Mismatches([]float32{0.2, 0.8, 0.0, 0.5, 0.2, 0.3}, ref, 3); n != 0 {
		t.Errorf("same classes: %d mismatches", n)
	}
	// 100 classes, a reference whose top two are 0.004 apart, and small
	// errors on every logit (RMS 0.003): a flip between the near-tied two
	// is within what the row's error bridges; a flip to a class 0.5 below
	// is not, though the errors are just as small elsewhere.
	near := make([]float32, 100)
	for i := range near {
		near[i] = float32(i%7) * 0.1
	}
	near[10], near[20] = 2.0, 1.996
	got := make([]float32, 100)
	for i := range got {
		got[i] = near[i] + 0.003*float32(1-2*(i%2))
	}
	got[10], got[20] = 1.997, 1.999
	if n := Top1Mismatches(got, near, 100); n != 0 {
		t.Errorf("a flip between near-tied classes counted: %d", n)
	}
	far := append([]float32(nil), near...)
	far[20] = 1.5
	got2 := append([]float32(nil), got...)
	got2[20] = 2.01
	if n := Top1Mismatches(got2, far, 100); n != 1 {
		t.Errorf("a flip over a margin of 0.5 with RMS error %.3f: %d mismatches, want 1", rmsDiff(got2, far), n)
	}
	if n := Top1Mismatches([]float32{float32(math.NaN()), 0}, []float32{1, 0}, 2); n != 0 {
		t.Errorf("NaN row: %d", n)
	}
}
