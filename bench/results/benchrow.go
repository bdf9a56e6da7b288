package results

import "math"

// BenchRow is the timing result of one (case, backend, batch, threads, dtype): its samples
// and their summary. Times are in nanoseconds. JSON names are listed in FORMAT.md.
type BenchRow struct {
	Case    string
	Backend string
	Batch   int
	Threads int
	DType   string

	N                 int
	MedianNs, P90Ns   float64
	CILowNs, CIHighNs float64 // 95% confidence interval of the median
	Noisy             bool    // IQR / median > 10%
	MACs, Bytes       int64   // per run (deterministic)
	GFLOPs, GBps      float64 // 2·MACs / median, Bytes / median
	PeakBytes         int64   // peak bytes held by the backend's allocator; 0 = not measured
	RSSBytes          int64   // process peak RSS; 0 = not measured
	Params            int64   // learned (and frozen) parameters of the case; 0 = not known
	ImgH, ImgW        int     // the input image's height and width; 0 = not an image input
	SamplesNs         []float64
	E2ESamplesNs      []float64 // host end-to-end time, where the backend measures it separately
	Runs              []int     // runs averaged into each sample (nil: one each, or not known)
	ISA               string    // ISA path dispatched; "" means Meta.ISA
	// Baseline says what code a reference row ran ("vitbench_ref.modules.Block: timm-style
	// Block; ..."), from reference/bench_torch.py's "# baseline" lines; "" = not recorded.
	Baseline string
	// Load is the CPU load other processes put on the machine while the row was timed
	// (package contention); nil = not measured.
	Load *RowLoad
}

// BenchFile is a timing result file: its provenance, its rows and the
// cases that failed to run (which have no row).
type BenchFile struct {
	Meta   Meta
	Rows   []BenchRow
	Failed []BenchFailure
}

// NewBenchRow builds a row from the samples (ns) and fills the summary fields from
// Summarize(samplesNs): GFLOPs = 2·macs / median ns (GFLOP/s), GBps = bytes / median ns (GB/s).
// Throughputs are 0 when macs or bytes is 0, NaN when there are no samples.
func NewBenchRow(caseName, backend string, batch, threads int, dtype string, macs, bytes, peakBytes, rssBytes int64, samplesNs, e2eNs []float64) BenchRow {
	s := Summarize(samplesNs)
	return BenchRow{
		Case: caseName, Backend: backend, Batch: batch, Threads: threads, DType: dtype,
		N: s.N, MedianNs: s.Median, P90Ns: s.P90, CILowNs: s.CILow, CIHighNs: s.CIHigh, Noisy: s.Noisy,
		MACs: macs, Bytes: bytes,
		GFLOPs:    perNs(2*float64(macs), s.Median),
		GBps:      perNs(float64(bytes), s.Median),
		PeakBytes: peakBytes, RSSBytes: rssBytes,
		SamplesNs: samplesNs, E2ESamplesNs: e2eNs,
	}
}

// perNs returns amount / ns (an amount per nanosecond is giga-amount per second); 0 when
// the amount is 0.
func perNs(amount, ns float64) float64 {
	if amount == 0 {
		return 0
	}
	if math.IsNaN(ns) {
		return math.NaN()
	}
	return amount / ns
}

// EffectiveISA returns the row's ISA, or meta's when the row does not name one.
func (r BenchRow) EffectiveISA(m Meta) string {
	if r.ISA != "" {
		return r.ISA
	}
	return m.ISA
}

// RunsOf returns how many runs were averaged into sample j: Runs[j], or 1 when not recorded.
func (r BenchRow) RunsOf(j int) int {
	if j < len(r.Runs) && r.Runs[j] > 0 {
		return r.Runs[j]
	}
	return 1
}
