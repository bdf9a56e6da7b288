package results

import (
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// NoisyIQR is the spread (IQR / median) above which a sample is flagged noisy.
const NoisyIQR = 0.10

// Summary describes a sample of repeated measurements, all in the samples' unit.
type Summary struct {
	N int
	// Median is the sample median (the mean of the two middle values when N is even).
	Median float64
	// P90 is the 90th percentile, linearly interpolated between the closest ranks
	// (definition R-7, NumPy's default): position 0.9·(N-1) in the sorted sample.
	P90 float64
	// CILow and CIHigh bound the 95% confidence interval of the median, from
	// benchmath.AssumeNothing (order statistics; distribution-free). They are -Inf/+Inf
	// when N is too small for a 95% interval (N < 6).
	CILow, CIHigh float64
	// IQR is the interquartile range Q3 - Q1, quartiles interpolated as P90 is.
	IQR float64
	// Noisy reports IQR / Median > NoisyIQR (10%).
	Noisy bool
}

// Summarize computes the median, p90, 95% confidence interval of the median, IQR and the
// noisy flag of samples. samples is not modified. An empty sample gives N = 0 and NaN
// statistics.
func Summarize(samples []float64) Summary {
	if len(samples) == 0 {
		nan := math.NaN()
		return Summary{Median: nan, P90: nan, CILow: nan, CIHigh: nan, IQR: nan}
	}
	// NewSample sorts in place: give it a copy.
	s := benchmath.NewSample(slices.Clone(samples), &benchmath.DefaultThresholds)
	ci := benchmath.AssumeNothing.Summary(s, 0.95)
	sorted := s.Values
	iqr := quantile(sorted, 0.75) - quantile(sorted, 0.25)
	return Summary{
		N:      len(samples),
		Median: ci.Center,
		P90:    quantile(sorted, 0.90),
		CILow:  ci.Lo,
		CIHigh: ci.Hi,
		IQR:    iqr,
		Noisy:  ci.Center > 0 && iqr/ci.Center > NoisyIQR,
	}
}

// quantile returns the q-quantile of the sorted, non-empty sample by linear interpolation
// between closest ranks.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}
