package results

import (
	"encoding/json"
	"io"
	"math"
)

// benchRowJSON is BenchRow's JSON form (FORMAT.md, "Timing: JSON"). Every numeric field
// is a JSON number or null.
type benchRowJSON struct {
	Case         string `json:"case"`
	Backend      string `json:"backend"`
	Batch        int    `json:"batch"`
	Threads      int    `json:"threads"`
	DType        string `json:"dtype"`
	N            int    `json:"n"`
	MedianNs     jnum   `json:"median_ns"`
	P90Ns        jnum   `json:"p90_ns"`
	CILowNs      jnum   `json:"ci_low_ns"`
	CIHighNs     jnum   `json:"ci_high_ns"`
	Noisy        bool   `json:"noisy"`
	MACs         int64  `json:"macs"`
	Bytes        int64  `json:"bytes"`
	GFLOPs       jnum   `json:"gflops"`
	GBps         jnum   `json:"gbps"`
	PeakBytes    int64  `json:"peak_bytes,omitempty"`
	RSSBytes     int64  `json:"rss_bytes,omitempty"`
	Params       int64  `json:"params,omitempty"`
	ImgH         int    `json:"img_h,omitempty"`
	ImgW         int    `json:"img_w,omitempty"`
	SamplesNs    []jnum `json:"samples_ns"`
	E2ESamplesNs []jnum `json:"e2e_samples_ns,omitempty"`
	Runs         []int  `json:"runs,omitempty"`
	ISA          string `json:"isa,omitempty"`
	// Derived, written for readers of the JSON and ignored when read back (Table's fields).
	ImgPerSec   *jnum `json:"img_per_sec,omitempty"`
	MedianMs    *jnum `json:"median_ms,omitempty"`
	P90Ms       *jnum `json:"p90_ms,omitempty"`
	ParamsM     *jnum `json:"params_m,omitempty"`
	GMACsPerImg *jnum `json:"gmacs,omitempty"`
	// Contention (RowLoad): foreign_load is null when not measured (no /proc/stat).
	ForeignLoad      jnum    `json:"foreign_load"`
	Contended        bool    `json:"contended"`
	Retimed          bool    `json:"retimed,omitempty"`
	FirstForeignLoad *jnum   `json:"first_foreign_load,omitempty"`
	FirstContended   bool    `json:"first_contended,omitempty"`
	RoundTripNs      float64 `json:"round_trip_ns,omitempty"`
	CoresMoved       bool    `json:"cores_moved,omitempty"`
}

// MarshalJSON encodes the row with FORMAT.md's snake_case names, the table's derived
// fields (TableRow: img/s, step times in ms, params in millions, GMACs per image) beside
// them; NaN/±Inf become null.
func (r BenchRow) MarshalJSON() ([]byte, error) {
	t := r.Table()
	num := func(v float64) *jnum { n := jnum(v); return &n }
	j := benchRowJSON{
		Case: r.Case, Backend: r.Backend, Batch: r.Batch, Threads: r.Threads, DType: r.DType,
		N: r.N, MedianNs: jnum(r.MedianNs), P90Ns: jnum(r.P90Ns),
		CILowNs: jnum(r.CILowNs), CIHighNs: jnum(r.CIHighNs), Noisy: r.Noisy,
		MACs: r.MACs, Bytes: r.Bytes, GFLOPs: jnum(r.GFLOPs), GBps: jnum(r.GBps),
		PeakBytes: r.PeakBytes, RSSBytes: r.RSSBytes, Params: r.Params, ImgH: r.ImgH, ImgW: r.ImgW,
		SamplesNs: jnums(r.SamplesNs), E2ESamplesNs: jnums(r.E2ESamplesNs), Runs: r.Runs, ISA: r.ISA,
		ImgPerSec: num(t.ImgPerSec), MedianMs: num(t.MedianMs), P90Ms: num(t.P90Ms),
	}
	if r.Params > 0 {
		j.ParamsM = num(t.ParamsM)
	}
	if r.MACs > 0 {
		j.GMACsPerImg = num(t.GMACs)
	}
	j.ForeignLoad = jnum(math.NaN())
	if l := r.Load; l != nil {
		j.ForeignLoad, j.Contended, j.Retimed, j.FirstContended = jnum(l.Foreign), l.Contended, l.Retimed, l.FirstContended
		if l.Retimed {
			j.FirstForeignLoad = num(l.FirstForeign)
		}
		j.RoundTripNs, j.CoresMoved = l.RoundTripNs, l.CoresMoved
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the form MarshalJSON writes (the derived fields are recomputed,
// not read).
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
		PeakBytes: j.PeakBytes, RSSBytes: j.RSSBytes, Params: j.Params, ImgH: j.ImgH, ImgW: j.ImgW,
		SamplesNs: numsFloats(j.SamplesNs), E2ESamplesNs: numsFloats(j.E2ESamplesNs), Runs: j.Runs, ISA: j.ISA,
	}
	if j.Contended || j.Retimed || !math.IsNaN(float64(j.ForeignLoad)) || j.RoundTripNs > 0 || j.CoresMoved {
		r.Load = &RowLoad{Foreign: float64(j.ForeignLoad), Contended: j.Contended, Retimed: j.Retimed,
			FirstForeign: math.NaN(), FirstContended: j.FirstContended, RoundTripNs: j.RoundTripNs, CoresMoved: j.CoresMoved}
		if j.FirstForeignLoad != nil {
			r.Load.FirstForeign = float64(*j.FirstForeignLoad)
		}
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
// values (an interval of too few samples) are written as null.
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
