package accuracy

import (
	"math"
)

// Metrics describe how far got is from ref.
type Metrics struct {
	MaxAbs   float64 // max |got − ref| over finite pairs
	MaxAbsAt int64   // flat index of MaxAbs
	MaxRel   float64 // max |got − ref| / |ref| over ref ≠ 0
	MaxRelAt int64
	NMSE     float64 // Σ(got − ref)² / Σ ref² (or Σ(got − ref)² when Σ ref² = 0)
	// Violations counts elements outside atol + rtol·|ref|; FirstViolation
	// is the first one's flat index (−1 if none).
	Violations     int64
	FirstViolation int64
	NaNs           int64 // NaNs in got (a NaN in ref must be matched by one in got)
	InfMismatches  int64 // infinities in either that the other does not match
}

// Compare computes Metrics of got against ref (same length) under tol.
func Compare(got, ref []float32, tol Tolerance) Metrics {
	m := Metrics{MaxAbsAt: -1, MaxRelAt: -1, FirstViolation: -1}
	var errSq, refSq float64
	for i := range ref {
		g, r := float64(got[i]), float64(ref[i])
		switch {
		case math.IsNaN(r):
			if !math.IsNaN(g) {
				m.InfMismatches++
			}
			continue
		case math.IsNaN(g):
			m.NaNs++
			m.violate(int64(i))
			continue
		case math.IsInf(r, 0) || math.IsInf(g, 0):
			if g != r {
				m.InfMismatches++
				m.violate(int64(i))
			}
			continue
		}
		d := math.Abs(g - r)
		errSq += d * d
		refSq += r * r
		if d > m.MaxAbs || m.MaxAbsAt < 0 {
			m.MaxAbs, m.MaxAbsAt = d, int64(i)
		}
		if r != 0 {
			if rel := d / math.Abs(r); rel > m.MaxRel || m.MaxRelAt < 0 {
				m.MaxRel, m.MaxRelAt = rel, int64(i)
			}
		}
		if d > tol.ATol+tol.RTol*math.Abs(r) {
			m.violate(int64(i))
		}
	}
	if refSq > 0 {
		m.NMSE = errSq / refSq
	} else {
		m.NMSE = errSq
	}
	if m.MaxRelAt < 0 {
		m.MaxRelAt = 0
	}
	if m.MaxAbsAt < 0 {
		m.MaxAbsAt = 0
	}
	return m
}

func (m *Metrics) violate(i int64) {
	if m.Violations == 0 {
		m.FirstViolation = i
	}
	m.Violations++
}

// Pass reports whether the metrics meet tol: no NaN, matching infinities,
// every element within the rule, and NMSE within bound.
func (m Metrics) Pass(tol Tolerance) bool {
	return m.NaNs == 0 && m.InfMismatches == 0 && m.Violations == 0 && m.NMSE <= tol.NMSE
}
