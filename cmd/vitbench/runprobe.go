package main

import (
	"math"

	"vitbench/bench/contention"
	"vitbench/bench/results"
)

// probed runs a baseline (ONNX Runtime, PyTorch) between two cross-CPU round-trip probes
// and returns its timing text with a load line appended for each of its rows that records
// them (results.RowLoad: the larger round trip, and whether the two differ by more than
// contention.Moved), keeping the load the baseline measured itself. The baselines time in
// processes of their own, so the probes around them are what tells `run` that a
// baseline's rows and vitbench's were timed with the CPUs arranged alike.
func probed(baseline func() ([]byte, error)) ([]byte, error) {
	before := contention.ProbeRoundTrip()
	raw, err := baseline()
	if err != nil || len(raw) == 0 {
		return raw, err
	}
	after := contention.ProbeRoundTrip()
	return withRoundTrips(raw, before.Nanos, after.Nanos), nil
}

// withRoundTrips appends to raw a load line per row of raw carrying the round trips
// before and after (NaN: not measured); raw unchanged when neither was measured.
func withRoundTrips(raw []byte, before, after float64) []byte {
	rtt := contention.MaxRoundTrip(before, after)
	if rtt == 0 {
		return raw
	}
	out := append([]byte(nil), raw...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	for _, r := range parseText(raw) {
		l := results.RowLoad{Foreign: math.NaN(), FirstForeign: math.NaN()}
		if r.Load != nil {
			l = *r.Load
		}
		l.RoundTripNs, l.CoresMoved = rtt, contention.Differ(before, after)
		r.Load = &l
		out = append(out, results.LoadLine(r)+"\n"...)
	}
	return out
}
