package results

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleCheckFile() CheckFile {
	return CheckFile{
		Meta: Meta{Tool: "vitbench", Commit: "1a2b3c4", ISA: "avx512"},
		Rows: []CheckRow{
			{Case: "patch_embed/vit_b16", Kind: "component", Op: "patch_embed", Backend: "cpu", DType: "float32",
				Status: StatusOK, Output: "out", MaxAbs: 1.2e-6, MaxAbsAt: []int{0, 12, 7}, MaxRel: 3.4e-5, MaxRelAt: []int{0, 1, 2},
				NMSE: 1.1e-13, Tolerance: Tolerance{Class: "gemm", RTol: 1e-3, ATol: 1e-3, NMSE: 5e-4}, Seconds: 0.25},
			{Case: "softmax", Kind: "component", Op: "softmax", Backend: "cuda", DType: "float16", Status: StatusFail,
				Output: "out", MaxAbs: math.Inf(1), MaxRel: math.NaN(), NMSE: math.NaN(),
				Tolerance: Tolerance{Class: "exact", RTol: 0, ATol: 0, NMSE: math.Inf(1)}, Reason: "NaN in output"},
			{Case: "vit_b16", Kind: "network", Backend: "cuda", Status: StatusFail, Error: true, Reason: "fixture unreadable"},
			{Case: "layernorm", Backend: "cuda", DType: "bfloat16", Status: StatusNS, Reason: "bfloat16 not supported"},
		},
	}
}

func TestCheckJSONRoundTrip(t *testing.T) {
	want := sampleCheckFile()
	var buf bytes.Buffer
	if err := WriteCheckJSON(&buf, want); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"status": "FAIL"`, `"max_abs": "+Inf"`, `"nmse": "NaN"`, `"error": true`, `"max_abs_at": [`, `"tolerance": {`, `"rtol": 0.001`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("JSON lacks %s:\n%s", s, buf.String())
		}
	}
	got, err := ReadCheck(writeTemp(t, "check.json", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got, equateFloats); d != "" {
		t.Errorf("check round trip (-want +got):\n%s", d)
	}
}

func TestReadAny(t *testing.T) {
	var text, bjson, cjson bytes.Buffer
	if err := WriteBenchText(&text, sampleBenchFile()); err != nil {
		t.Fatal(err)
	}
	if err := WriteBenchJSON(&bjson, sampleBenchFile()); err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckJSON(&cjson, sampleCheckFile()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		data      []byte
		wantCheck bool
	}{
		{"bench.txt", text.Bytes(), false},
		{"bench.json", bjson.Bytes(), false},
		{"check.json", cjson.Bytes(), true},
		{"gotest.txt", []byte(goTestOutput), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, c, err := ReadAny(writeTemp(t, tt.name, tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if (c != nil) != tt.wantCheck || (b != nil) == tt.wantCheck {
				t.Errorf("ReadAny: bench %v check %v, want check=%v", b != nil, c != nil, tt.wantCheck)
			}
		})
	}
	if _, err := ReadCheck(writeTemp(t, "bench.txt", text.Bytes())); err == nil {
		t.Errorf("ReadCheck accepted a text file")
	}
}
