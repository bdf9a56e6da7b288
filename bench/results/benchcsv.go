package results

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"
)

// TableRow is a timing row as timm's benchmark CSV reports it: throughput, step times in
// milliseconds, parameters in millions and GMACs per image. Values that are not defined
// (no samples, no MACs counted) are NaN.
type TableRow struct {
	ImgPerSec       float64 // Batch / median step time
	MedianMs, P90Ms float64
	ParamsM         float64 // Params / 1e6
	GMACs           float64 // MACs / Batch / 1e9: per image, as timm's infer_gmacs
}

// Table computes r's TableRow.
func (r BenchRow) Table() TableRow {
	t := TableRow{ImgPerSec: math.NaN(), MedianMs: r.MedianNs / 1e6, P90Ms: r.P90Ns / 1e6, ParamsM: math.NaN(), GMACs: math.NaN()}
	if r.Batch > 0 && r.MedianNs > 0 && !math.IsInf(r.MedianNs, 0) {
		t.ImgPerSec = float64(r.Batch) * 1e9 / r.MedianNs
	}
	if r.Params > 0 {
		t.ParamsM = float64(r.Params) / 1e6
	}
	if r.MACs > 0 && r.Batch > 0 {
		t.GMACs = float64(r.MACs) / float64(r.Batch) / 1e9
	}
	return t
}

// csvHeader names the columns of WriteBenchCSV, timm's names where timm has the field.
var csvHeader = []string{"model", "backend", "dtype", "infer_batch_size", "infer_samples_per_sec",
	"infer_step_time", "infer_step_time_p90", "param_count", "infer_gmacs", "infer_img_h", "infer_img_w", "threads",
	"foreign_load", "contended"}

// WriteBenchCSV writes f's rows as a timm-style CSV (FORMAT.md, "Timing: CSV"): one line per
// row with the model (case), backend, dtype, batch, img/s, median and p90 step time (ms),
// params (M), GMACs per image, image height and width, threads, and the foreign CPU load
// while it was timed with its contended flag (RowLoad). A value that is not
// defined is an empty field, never text in a numeric column.
func WriteBenchCSV(w io.Writer, f BenchFile) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, r := range f.Rows {
		t := r.Table()
		rec := []string{r.Case, r.Backend, r.DType, intField(r.Batch), numField(t.ImgPerSec),
			numField(t.MedianMs), numField(t.P90Ms), numField(t.ParamsM), numField(t.GMACs),
			intField(r.ImgH), intField(r.ImgW), intField(r.Threads)}
		rec = append(rec, loadFields(r.Load)...)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// loadFields are the contention columns: the foreign load ("" when not measured) and
// whether it was contended (1 or 0; "" when not measured).
func loadFields(l *RowLoad) []string {
	if l == nil || math.IsNaN(l.Foreign) {
		return []string{"", ""}
	}
	c := "0"
	if l.Contended {
		c = "1"
	}
	return []string{numField(l.Foreign), c}
}

// numField formats v with 6 significant digits, or "" when it is NaN or infinite.
func numField(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// intField formats n, or "" when it is 0 (not known).
func intField(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
