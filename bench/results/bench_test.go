package results

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sampleBenchFile is a file exercising every field of the text format.
func sampleBenchFile() BenchFile {
	samples := func(base float64, n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = base + float64((i*7)%5)*base/97 + 0.25
		}
		return s
	}
	rows := []BenchRow{
		NewBenchRow("patch_embed/vit_b16", "cpu", 1, 2, "float32", 115605504, 4819968, 4819968, 52428800, samples(1234567, 10), nil),
		NewBenchRow("attention/vit_s16", "cuda", 8, 1, "float16", 987654321, 123456789, 1<<30, 0, samples(2345.5, 12), samples(9876.5, 12)),
		NewBenchRow("layernorm", "cpu", 4, 2, "float32", 0, 0, 0, 0, samples(5000, 3), nil),
		NewBenchRow("gelu", "cpu", 1, 1, "float32", 0, 77777, 0, 0, samples(321, 7), nil),
	}
	rows[0].ISA = "avx512"
	rows[1].ISA = "sm_90"
	rows[2].ISA = "avx2"
	rows[3].ISA = "avx512"
	rows[1].Runs = []int{3, 3, 4, 3, 3, 3, 5, 3, 3, 3, 3, 2}
	rows = append(rows, NewBenchRow("Upper/case", "cpu", 1, 1, "float32", 0, 0, 0, 0, samples(100, 2), nil))
	rows[4].ISA = "avx512"
	return BenchFile{
		Meta: Meta{
			Tool: "vitbench", Commit: "1a2b3c4", Date: "2026-11-29T18:00:00Z",
			CPU: "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", ISA: "avx512",
			GOOS: "linux", GOARCH: "amd64", Machine: "ci-2core", Threads: 2,
			Extra: map[string]string{"gpu": "NVIDIA H200", "driver": "550.54", "torch-version": "2.5.1"},
		},
		Rows: rows,
	}
}

var equateFloats = cmpopts.EquateNaNs()

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBenchTextRoundTrip(t *testing.T) {
	want := sampleBenchFile()
	var buf bytes.Buffer
	if err := WriteBenchText(&buf, want); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, line := range []string{
		"goos: linux\n", "# vitbench-commit: 1a2b3c4\n", "# date: 2026-11-29T18:00:00Z\n", "gpu: NVIDIA H200\n",
		"Unit GFLOP/s better=higher\n", "Unit MACs/op assume=exact\n", "Unit B/op assume=exact\n", "isa: avx512\n",
		"\nBenchmarkPatch_embed/vit_b16/backend=cpu/batch=1/threads=2/dtype=float32 1 ",
		"\nBenchmarkAttention/vit_s16/backend=cuda/batch=8/threads=1/dtype=float16 4 ",
		"\nBenchmark_Upper/case/backend=cpu/",
		" e2e-ns/op ", " MACs/op ", " 4.819968e+06 B/op ", " 4.819968e+06 moved-B/op ", " B/rss\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
	for _, volatile := range []string{"\nvitbench-commit:", "\ndate:", "Benchmark_patch"} {
		if strings.Contains(text, volatile) {
			t.Errorf("text holds %q:\n%s", volatile, text)
		}
	}
	if n := strings.Count(text, "\nBenchmark"); n != 10+12+3+7+2 {
		t.Errorf("%d result lines, want one per sample (34)", n)
	}
	got, err := ReadBench(writeTemp(t, "bench.txt", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got, equateFloats); d != "" {
		t.Errorf("text round trip (-want +got):\n%s", d)
	}
}

func TestBenchTextEmptyRowISAIsMeta(t *testing.T) {
	f := BenchFile{Meta: Meta{ISA: "avx512"}, Rows: []BenchRow{
		NewBenchRow("a", "cpu", 1, 1, "float32", 0, 0, 0, 0, []float64{1, 2, 3}, nil),
	}}
	var buf bytes.Buffer
	if err := WriteBenchText(&buf, f); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBench(writeTemp(t, "b.txt", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rows[0].ISA != "avx512" || got.Meta.ISA != "avx512" {
		t.Errorf("row ISA %q meta ISA %q, want avx512 for both", got.Rows[0].ISA, got.Meta.ISA)
	}
}

func TestBenchJSONRoundTrip(t *testing.T) {
	want := sampleBenchFile()
	// Values JSON cannot hold natively must survive too.
	want.Rows[2].GFLOPs = math.NaN()
	want.Rows[2].CIHighNs = math.Inf(1)
	want.Rows[2].CILowNs = math.Inf(-1)
	var buf bytes.Buffer
	if err := WriteBenchJSON(&buf, want); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"median_ns":`, `"samples_ns":`, `"ci_low_ns": null`, `"ci_high_ns": null`, `"gflops": null`} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("JSON lacks %s", s)
		}
	}
	if strings.Contains(buf.String(), `"NaN"`) || strings.Contains(buf.String(), `Inf"`) {
		t.Errorf("JSON holds a string in a numeric field:\n%s", buf.String())
	}
	got, err := ReadBench(writeTemp(t, "bench.json", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	// null reads back as NaN: an interval that is not defined.
	for i := range want.Rows {
		for _, v := range []*float64{&want.Rows[i].CILowNs, &want.Rows[i].CIHighNs} {
			if math.IsInf(*v, 0) {
				*v = math.NaN()
			}
		}
	}
	if d := cmp.Diff(want, got, equateFloats); d != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", d)
	}
}

func TestJSONNullReadsNaN(t *testing.T) {
	data := `{"meta": {"tool": "x"}, "rows": [{"case": "a", "backend": "cpu", "median_ns": null, "n": 3, "samples_ns": [1, 2, 3]}]}`
	got, err := ReadBench(writeTemp(t, "b.json", []byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	r := got.Rows[0]
	if !math.IsNaN(r.MedianNs) || r.SamplesNs[2] != 3 {
		t.Errorf("got median %v samples %v", r.MedianNs, r.SamplesNs)
	}
}

const goTestOutput = `goos: linux
goarch: amd64
pkg: vitbench/kernels
cpu: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
BenchmarkSgemm/m=512
BenchmarkSgemm/m=512-2         	     100	   1002300 ns/op	 267.78 GFLOP/s	   4.5 MB/peak
BenchmarkSgemm/m=512-2         	     100	   1012300 ns/op	 265.12 GFLOP/s	   4.5 MB/peak
BenchmarkSgemm/m=512-2         	     100	   1022300 ns/op	 262.00 GFLOP/s	   4.5 MB/peak
BenchmarkSgemm/m=1024-2        	      10	   8002300 ns/op	 268.35 GFLOP/s
BenchmarkCopy-2                	 2000000	       500 ns/op	2000.00 MB/s	       0 B/op	       0 allocs/op
BenchmarkSingle                	 2000000	       600 ns/op
PASS
ok  	vitbench/kernels	3.217s
`

func TestReadGoTestOutput(t *testing.T) {
	got, err := ReadBench(writeTemp(t, "gotest.txt", []byte(goTestOutput)))
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := Meta{GOOS: "linux", GOARCH: "amd64", CPU: "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
		Extra: map[string]string{"pkg": "vitbench/kernels"}}
	if d := cmp.Diff(wantMeta, got.Meta); d != "" {
		t.Errorf("meta (-want +got):\n%s", d)
	}
	type key struct {
		Case    string
		Threads int
		N       int
		Median  float64
		GFLOPs  float64
		Bytes   int64
		Peak    int64
	}
	var keys []key
	for _, r := range got.Rows {
		keys = append(keys, key{r.Case, r.Threads, r.N, r.MedianNs, r.GFLOPs, r.Bytes, r.PeakBytes})
	}
	want := []key{
		{"Sgemm/m=512", 2, 3, 1012300, 265.12, 0, 4500000},
		{"Sgemm/m=1024", 2, 1, 8002300, 268.35, 0, 0},
		{"Copy", 2, 1, 500, 0, 1000, 0},
		{"Single", 0, 1, 600, 0, 0, 0},
	}
	if d := cmp.Diff(want, keys, cmpopts.EquateApprox(1e-12, 0)); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
}

func TestReadBenchErrorsNameFileAndLine(t *testing.T) {
	header := "goos: linux\nUnit GFLOP/s better=higher\n"
	good := "Benchmark_a/backend=cpu/batch=1/threads=1/dtype=float32\t1\t100 ns/op\n"
	tests := []struct {
		name, file, data, want string
	}{
		{"bad number", "b.txt", header + good + "Benchmark_a/backend=cpu/batch=1/threads=1/dtype=float32\t1\tabc ns/op\n", "b.txt:4:"},
		{"missing unit", "b.txt", header + "Benchmark_a/backend=cpu\t1\t100\n", "b.txt:3:"},
		{"bad batch", "b.txt", header + good + good + "Benchmark_a/backend=cpu/batch=x/threads=1/dtype=float32\t1\t100 ns/op\n", "b.txt:5: batch="},
		{"no ns/op", "b.txt", header + "Benchmark_a/backend=cpu\t1\t100 GFLOP/s\n", "b.txt:3:"},
		{"bad threads config", "b.txt", "threads: two\n" + good, "b.txt:1: threads"},
		{"no results", "b.txt", header, "b.txt: no benchmark results"},
		{"json bad row value", "b.json", "{\n \"meta\": {},\n \"rows\": [\n  {\"case\": \"a\"},\n  {\"case\": \"b\", \"n\": \"many\"}\n ]\n}\n", "b.json:5:"},
		{"json bad float", "b.json", "{\"meta\": {},\n\"rows\": [\n{\"case\": \"a\", \"median_ns\": \"fast\"}]}", "b.json:3:"},
		{"json syntax", "b.json", "{\"meta\": {},\n\"rows\": [\n{\"case\": \"a\",,}]}", "b.json:3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.data))
			_, err := ReadBench(path)
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), path+strings.TrimPrefix(tt.want, tt.file)) {
				t.Errorf("error %q, want it to contain %q", err, path+strings.TrimPrefix(tt.want, tt.file))
			}
		})
	}
}

func TestWriteBenchTextRejectsUnreadableNames(t *testing.T) {
	for _, r := range []BenchRow{
		{Case: "has space", SamplesNs: []float64{1}},
		{Case: "a/k=v", SamplesNs: []float64{1}},
		{Case: "a", Backend: "cpu/x", SamplesNs: []float64{1}},
		{Case: "", SamplesNs: []float64{1}},
	} {
		if err := WriteBenchText(&bytes.Buffer{}, BenchFile{Rows: []BenchRow{r}}); err == nil {
			t.Errorf("WriteBenchText(%+v) succeeded, want an error", r)
		}
	}
	if err := WriteBenchText(&bytes.Buffer{}, BenchFile{Meta: Meta{Extra: map[string]string{"Bad Key": "x"}}}); err == nil {
		t.Errorf("an invalid extra key was accepted")
	}
}

// TestFailuresRoundTrip checks that cases without a result are written
// and read back by both formats, beside the rows (and alone), so that a
// report can list them.
func TestFailuresRoundTrip(t *testing.T) {
	failed := []BenchFailure{
		{Case: "volo_d1", Backend: "cuda", Batch: 1, Threads: 2, DType: "float32",
			Error: "cuda: allocating [1, 3, 224, 224]: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{Case: "patch_embed/vit_b16", Backend: "faulty", Batch: 8, Threads: 1, DType: "float32", Error: "two\nlines: here"},
	}
	row := NewBenchRow("gemm/512", "cpu", 1, 2, "float32", 10, 20, 0, 0, []float64{100, 110, 120}, nil)
	dir := t.TempDir()
	for _, rows := range [][]BenchRow{{row}, nil} {
		f := BenchFile{Meta: Meta{Tool: "vitbench"}, Rows: rows, Failed: failed}
		for _, format := range []string{"txt", "json"} {
			path := filepath.Join(dir, "bench."+format)
			err := WriteFileAtomic(path, func(w io.Writer) error {
				if format == "json" {
					return WriteBenchJSON(w, f)
				}
				return WriteBenchText(w, f)
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadBench(path)
			if err != nil {
				t.Fatalf("%s with %d rows: %v", format, len(rows), err)
			}
			want := slices.Clone(failed)
			want[1].Error = "two lines: here" // one line in the text format
			if format == "json" {
				want[1].Error = failed[1].Error
			}
			if !slices.Equal(got.Failed, want) || len(got.Rows) != len(rows) {
				t.Errorf("%s with %d rows: read back %d rows and failures %+v, want %+v", format, len(rows), len(got.Rows), got.Failed, want)
			}
		}
	}
	if _, err := readBenchText([]byte("# FAILED nonsense\n"), "bad.txt"); err == nil || !strings.Contains(err.Error(), "bad.txt:1") {
		t.Errorf("malformed failure line: error %v, want one naming bad.txt:1", err)
	}
}

// TestReadCommittedOldFormat: the timing files committed under reports/ (written before
// Benchmark<Case> names, iteration counts, B/op and moved-B/op) still read, with case names
// without the old "_" and bytes recovered from GB/s.
func TestReadCommittedOldFormat(t *testing.T) {
	paths, _ := filepath.Glob("../../reports/*/*.txt")
	var read int
	for _, p := range paths {
		if !strings.HasSuffix(p, "bench.txt") && !strings.HasSuffix(p, "torch.txt") {
			continue
		}
		f, err := ReadBench(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(f.Rows) == 0 {
			t.Errorf("%s: no rows", p)
		}
		for _, r := range f.Rows {
			if strings.HasPrefix(r.Case, "_") || r.Backend == "" || len(r.SamplesNs) == 0 {
				t.Errorf("%s: row %+v", p, r.Case)
			}
		}
		read++
	}
	if read == 0 {
		t.Skip("no committed timing files under reports/")
	}
}

// TestOldAndNewTextAgree: the same row written in the old format (Benchmark_<case>, B/peak,
// bytes as GB/s only) and in the current one reads back the same.
func TestOldAndNewTextAgree(t *testing.T) {
	old := "goos: linux\nvitbench-commit: abc\ndate: 2026-01-01T00:00:00Z\nisa: avx2\n" +
		"Benchmark_gemm/x/backend=cpu/batch=1/threads=2/dtype=float32\t1\t2000 ns/op\t2 GFLOP/s\t0.5 GB/s\t2000 MACs/op\t64 B/peak\n" +
		"Benchmark_gemm/x/backend=cpu/batch=1/threads=2/dtype=float32\t1\t4000 ns/op\t1 GFLOP/s\t0.25 GB/s\t2000 MACs/op\t64 B/peak\n"
	o, err := ReadBench(writeTemp(t, "old.txt", []byte(old)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBenchText(&buf, o); err != nil {
		t.Fatal(err)
	}
	n, err := ReadBench(writeTemp(t, "new.txt", buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(o, n, equateFloats); d != "" {
		t.Errorf("old vs new (-old +new):\n%s\n%s", d, buf.String())
	}
	if r := o.Rows[0]; r.Case != "gemm/x" || r.Bytes != 1000 || r.PeakBytes != 64 || o.Meta.Commit != "abc" {
		t.Errorf("old file read as %+v, meta %+v", r, o.Meta)
	}
}
