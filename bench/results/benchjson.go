package results

import (
	"encoding/json"
	"io"
)

// benchRowJSON is BenchRow's JSON form (FORMAT.md, "Timing: JSON").
type benchRowJSON struct {
	Case         string   `json:"case"`
	Backend      string   `json:"backend"`
	Batch        int      `json:"batch"`
	Threads      int      `json:"threads"`
	DType        string   `json:"dtype"`
	N            int      `json:"n"`
	MedianNs     jfloat   `json:"median_ns"`
	P90Ns        jfloat   `json:"p90_ns"`
	CILowNs      jfloat   `json:"ci_low_ns"`
	CIHighNs     jfloat   `json:"ci_high_ns"`
	Noisy        bool     `json:"noisy"`
	MACs         int64    `json:"macs"`
	Bytes        int64    `json:"bytes"`
	GFLOPs       jfloat   `json:"gflops"`
	GBps         jfloat   `json:"gbps"`
	PeakBytes    int64    `json:"peak_bytes,omitempty"`
	RSSBytes     int64    `json:"rss_bytes,omitempty"`
	SamplesNs    []jfloat `json:"samples_ns"`
	E2ESamplesNs []jfloat `json:"e2e_samples_ns,omitempty"`
	Runs         []int    `json:"runs,omitempty"`
	ISA          string   `json:"isa,omitempty"`
}

// MarshalJSON encodes the row with FORMAT.md's snake_case names; NaN/±Inf become strings.
func (r BenchRow) MarshalJSON() ([]byte, error) {
	return json.Marshal(benchRowJSON{
		Case: r.Case, Backend: r.Backend, Batch: r.Batch, Threads: r.Threads, DType: r.DType,
		N: r.N, MedianNs: jfloat(r.MedianNs), P90Ns: jfloat(r.P90Ns),
		CILowNs: jfloat(r.CILowNs), CIHighNs: jfloat(r.CIHighNs), Noisy: r.Noisy,
		MACs: r.MACs, Bytes: r.Bytes, GFLOPs: jfloat(r.GFLOPs), GBps: jfloat(r.GBps),
		PeakBytes: r.PeakBytes, RSSBytes: r.RSSBytes,
		SamplesNs: jfloats(r.SamplesNs), E2ESamplesNs: jfloats(r.E2ESamplesNs), Runs: r.Runs, ISA: r.ISA,
	})
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (r *BenchRow) UnmarshalJSON(b []byte) error {
	var j benchRowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = BenchRow{
		Case: j.Case, Backend: j.Backend, Batch: j.Batch, Threads: j.Threads, DType: j.DType,
		N: j.N, MedianNs: float64(j.MedianNs), P90Ns: float64(j.P90Ns),
		CILowNs: float64(j.CILowNs), CIHighNs: float64(j.CIHighNs), Noisy: j.Noisy,
		MACs: j.MACs, Bytes: j.Bytes, GFLOPs: float64(j.GFLOPs), GBps: float64(j.GBps),
		PeakBytes: j.PeakBytes, RSSBytes: j.RSSBytes,
		SamplesNs: floats(j.SamplesNs), E2ESamplesNs: floats(j.E2ESamplesNs), Runs: j.Runs, ISA: j.ISA,
	}
	return nil
}

// benchFileJSON is the top level of a timing JSON file.
type benchFileJSON struct {
	Meta   Meta           `json:"meta"`
	Rows   []BenchRow     `json:"rows"`
	Failed []BenchFailure `json:"failed,omitempty"`
}

// WriteBenchJSON writes f as indented JSON (FORMAT.md, "Timing: JSON"). NaN and ±Inf
// values are written as the strings "NaN", "+Inf", "-Inf".
func WriteBenchJSON(w io.Writer, f BenchFile) error {
	rows := f.Rows
	if rows == nil {
		rows = []BenchRow{}
	}
	return writeJSON(w, benchFileJSON{Meta: f.Meta, Rows: rows, Failed: f.Failed})
}

// writeJSON writes v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
