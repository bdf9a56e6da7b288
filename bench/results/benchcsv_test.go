package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestBenchCSV: one line per row with timm's columns; img/s = batch / median, step times in
// ms, params in millions, GMACs per image; undefined values are empty fields, and every
// numeric column parses as a number.
func TestBenchCSV(t *testing.T) {
	r := NewBenchRow("vit_s16", "cpu", 4, 2, "float32", 4*4_600_000_000, 1000, 0, 0, []float64{2e6, 2e6, 2e6, 4e6, 2e6, 2e6}, nil)
	r.Params, r.ImgH, r.ImgW = 22_050_664, 224, 224
	bare := NewBenchRow("gemm/x", "cpu", 1, 1, "float32", 0, 0, 0, 0, nil, nil)
	var buf bytes.Buffer
	if err := WriteBenchCSV(&buf, BenchFile{Rows: []BenchRow{r, bare}}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != "model,backend,dtype,infer_batch_size,infer_samples_per_sec,infer_step_time,infer_step_time_p90,param_count,infer_gmacs,infer_img_h,infer_img_w,threads,foreign_load,contended" {
		t.Fatalf("records %q", recs)
	}
	want := []string{"vit_s16", "cpu", "float32", "4", "2000", "2", "3", "22.0507", "4.6", "224", "224", "2", "", ""}
	if strings.Join(recs[1], ",") != strings.Join(want, ",") {
		t.Errorf("row %q, want %q", recs[1], want)
	}
	for _, rec := range recs[1:] {
		for i := 3; i < len(rec); i++ {
			if _, err := strconv.ParseFloat(rec[i], 64); rec[i] != "" && err != nil {
				t.Errorf("column %s holds %q, not a number", recs[0][i], rec[i])
			}
		}
	}
	if recs[2][4] != "" || recs[2][7] != "" || recs[2][8] != "" {
		t.Errorf("undefined values written as %q", recs[2])
	}
}

// TestBenchJSONTableFields: bench.json carries the CSV's fields (img_per_sec, median_ms,
// p90_ms, params_m, gmacs, img_h, img_w) and writes null, never a string, for an interval
// too few samples define.
func TestBenchJSONTableFields(t *testing.T) {
	r := NewBenchRow("vit_s16", "cpu", 4, 2, "float32", 4*4_600_000_000, 1000, 0, 0, []float64{2e6, 2e6, 4e6}, nil)
	r.Params, r.ImgH, r.ImgW = 22_050_664, 224, 224
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{"img_per_sec": 2000, "median_ms": 2, "params_m": 22.050664, "gmacs": 4.6, "img_h": 224, "img_w": 224, "params": 22_050_664} {
		if got, ok := m[k].(float64); !ok || math.Abs(got-v) > 1e-9*v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if v, ok := m["ci_low_ns"]; !ok || v != nil {
		t.Errorf("ci_low_ns = %#v, want null (3 samples give no 95%% interval)", v)
	}
}
