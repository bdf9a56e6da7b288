package cpu

import "vitbench/impl/cpu/internal/peak"

// The API of package internal/peak (FMA and memory-bandwidth ceilings),
// re-exported because only this package may import it.
type (
	PeakOptions = peak.Options
	PeakResult  = peak.Result
	PeakISA     = peak.ISA
)

// Defaults of PeakOptions.
const (
	PeakDefaultDuration       = peak.DefaultDuration
	PeakDefaultCount          = peak.DefaultCount
	PeakDefaultBandwidthBytes = peak.DefaultBandwidthBytes
)

// MeasurePeak measures the machine's fp32 FMA throughput and memory
// bandwidth, on one thread and on all (peak.Measure).
func MeasurePeak(opt PeakOptions) (PeakResult, error) { return peak.Measure(opt) }
