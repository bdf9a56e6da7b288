package results

import (
	"fmt"
	"math"
)

// validRow is a row of a JSON result file: check says what is wrong with its values, key
// identifies it within its file (two rows of a file may not share one).
type validRow interface {
	check() error
	key() string
}

// checkSamples returns an error unless every sample is a positive, finite number of
// nanoseconds: a NaN, an infinity, a negative or a zero time is not a measurement, and
// the statistics (medians, the Mann–Whitney test) are not defined on it.
func checkSamples(what string, samples []float64) error {
	for i, v := range samples {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s[%d] is %v; a timing sample must be a positive, finite number of nanoseconds", what, i, v)
		}
	}
	return nil
}

// checkTime returns an error for a summary time that is negative or infinite (NaN and 0
// stand for "not known": a row without samples).
func checkTime(what string, v float64) error {
	if v < 0 || math.IsInf(v, 0) {
		return fmt.Errorf("%s is %v; a time cannot be negative or infinite", what, v)
	}
	return nil
}

// check implements validRow: samples, times and counts must be real measurements.
func (r BenchRow) check() error {
	if r.Case == "" {
		return fmt.Errorf("no case name")
	}
	if err := checkSamples("samples_ns", r.SamplesNs); err != nil {
		return err
	}
	if err := checkSamples("e2e_samples_ns", r.E2ESamplesNs); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		v    float64
	}{{"median_ns", r.MedianNs}, {"p90_ns", r.P90Ns}} {
		if !math.IsNaN(t.v) {
			if err := checkTime(t.name, t.v); err != nil {
				return err
			}
		}
	}
	if len(r.SamplesNs) > 0 && r.N != 0 && r.N != len(r.SamplesNs) {
		return fmt.Errorf("n is %d but samples_ns holds %d samples", r.N, len(r.SamplesNs))
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"batch", int64(r.Batch)}, {"threads", int64(r.Threads)}, {"macs", r.MACs}, {"bytes", r.Bytes},
		{"peak_bytes", r.PeakBytes}, {"rss_bytes", r.RSSBytes}} {
		if c.v < 0 {
			return fmt.Errorf("%s is %d; it cannot be negative", c.name, c.v)
		}
	}
	if len(r.Runs) > 0 && len(r.Runs) != len(r.SamplesNs) {
		return fmt.Errorf("runs holds %d counts for %d samples", len(r.Runs), len(r.SamplesNs))
	}
	for i, n := range r.Runs {
		if n < 1 {
			return fmt.Errorf("runs[%d] is %d; a sample averages at least one run", i, n)
		}
	}
	return nil
}

// key implements validRow: a timing row is one case, backend, batch, threads, dtype and ISA.
func (r BenchRow) key() string {
	k := fmt.Sprintf("%s backend=%s batch=%d threads=%d dtype=%s", r.Case, r.Backend, r.Batch, r.Threads, r.DType)
	if r.ISA != "" {
		k += " isa=" + r.ISA
	}
	return k
}

// check implements validRow: a conformance row has a known status and sane figures.
func (r CheckRow) check() error {
	switch r.Status {
	case StatusOK, StatusFail, StatusNS:
	default:
		return fmt.Errorf("status %q is not OK, FAIL or NS", r.Status)
	}
	if r.Case == "" {
		return fmt.Errorf("no case name")
	}
	if r.Seconds < 0 || math.IsInf(r.Seconds, 0) {
		return fmt.Errorf("seconds is %v; it cannot be negative or infinite", r.Seconds)
	}
	return nil
}

// key implements validRow: a conformance row is one case, backend and dtype.
func (r CheckRow) key() string {
	return fmt.Sprintf("%s backend=%s dtype=%s", r.Case, r.Backend, r.DType)
}
