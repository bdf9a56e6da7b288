package report

import (
	"cmp"
	"math"
	"slices"
)

// series is one set of bars or points of a chart: a backend on a machine; dtype tells a
// reference backend's reduced-precision rows apart ("bfloat16"; "" for float32).
type series struct{ machine, backend, dtype string }

// seriesOrder sorts series by machine, then vitbench's CPU backend first, vitbench's other
// backends, PyTorch, the other reference backends, each group by name (and precision).
func seriesOrder(a, b series) int {
	rank := func(s series) int {
		switch {
		case s.backend == "cpu":
			return 0
		case !isReference(s.backend):
			return 1
		case s.backend == TorchBackend:
			return 2
		}
		return 3
	}
	return cmp.Or(cmp.Compare(a.machine, b.machine), cmp.Compare(rank(a), rank(b)), cmp.Compare(a.backend, b.backend), cmp.Compare(a.dtype, b.dtype))
}

// label names a series in a legend or on an axis: "vitbench cpu", "PyTorch", prefixed
// with the machine when the chart holds several.
func (s series) label(multiMachine bool) string {
	l := "vitbench " + s.backend
	switch s.backend {
	case TorchBackend:
		l = "PyTorch"
	case NumPyBackend:
		l = "NumPy"
	case OrtBackend:
		l = "ONNX Runtime"
	}
	if s.dtype != "" {
		l += " " + s.dtype
	}
	if multiMachine {
		l = s.machine + ": " + l
	}
	return l
}

// p10p90 returns the 10th and 90th percentiles of samples (linear interpolation between
// closest ranks, as results.Summary's p90); ok is false when there are no finite samples.
func p10p90(samples []float64) (p10, p90 float64, ok bool) {
	s := make([]float64, 0, len(samples))
	for _, v := range samples {
		if finite(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return 0, 0, false
	}
	slices.Sort(s)
	return quantile(s, 0.10), quantile(s, 0.90), true
}

// quantile returns the q-quantile of the sorted, non-empty sample by linear interpolation
// between closest ranks (R-7, NumPy's default).
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}
