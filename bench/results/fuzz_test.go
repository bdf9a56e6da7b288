package results

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goTestBench is plain `go test -bench` output.
const goTestBench = `goos: linux
goarch: amd64
pkg: vitbench/impl/cpu/internal/kern
cpu: AMD EPYC 9B14
BenchmarkSgemm/m64-2         	   10000	    105432 ns/op	  24.50 GFLOP/s	     128 B/op	       2 allocs/op
BenchmarkSgemm/m64-2         	   10000	    104211 ns/op	  24.71 GFLOP/s	     128 B/op	       2 allocs/op
BenchmarkSgemm/m128-2        	    1000	   1054320 ns/op	   1.23 MB/s
BenchmarkCopy-2              	 5000000	       250.5 ns/op	4087.55 MB/s
PASS
ok  	vitbench/impl/cpu/internal/kern	3.2s
`

// headLines returns the first n lines of a file.
func headLines(f *testing.F, path string, n int) []byte {
	raw, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	return bytes.Join(lines[:min(n, len(lines))], nil)
}

// FuzzReadBench: ReadBench, ReadCheck and ReadAny never panic on any file;
// their errors name the file; ReadAny agrees with the reader of the kind it
// detects; a text file that reads is written back by WriteBenchText and
// reads again as the same rows (names, counts, samples), and a JSON timing
// file survives WriteBenchJSON.
func FuzzReadBench(f *testing.F) {
	f.Add(headLines(f, "../../reports/cpu-2vcpu-avx512/bench.txt", 40))
	f.Add(headLines(f, "../../reports/cpu-2vcpu-avx512/torch.txt", 24))
	f.Add([]byte(goTestBench))
	f.Add([]byte("isa: avx2\nBenchmark_a/backend=cpu/batch=1/threads=2/dtype=float32\t1\t5 ns/op\t7 e2e-ns/op\nisa: avx512\n" +
		"Benchmark_a/backend=cpu/batch=1/threads=2/dtype=float32\t1\t6 ns/op\n"))
	f.Add([]byte("threads: x\nBenchmark_a 1 5 ns/op\n"))
	f.Add([]byte("Benchmark_a/batch=q 1 5 ns/op\n"))
	f.Add([]byte("Benchmark_a 1 5 GFLOP/s\n"))
	var js bytes.Buffer
	if err := WriteBenchJSON(&js, sampleBenchFile()); err != nil {
		f.Fatal(err)
	}
	f.Add(js.Bytes())
	f.Add(js.Bytes()[:js.Len()/2])
	cf := CheckFile{Meta: Meta{Tool: "vitbench"}, Rows: []CheckRow{{Case: "gemm/512", Backend: "cpu", Status: StatusOK,
		MaxAbs: math.NaN(), MaxAbsAt: []int{0, 1}, Tolerance: Tolerance{Class: "gemm", RTol: 1e-3}}}}
	js.Reset()
	if err := WriteCheckJSON(&js, cf); err != nil {
		f.Fatal(err)
	}
	f.Add(js.Bytes())
	f.Add([]byte(`{"meta": {"threads": "x"}, "rows": [{"case": 1}]}`))
	f.Add([]byte(`{"rows": [{"status": "OK", "max_abs": "Inf"}], "rows": []}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "in.txt")
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		named := func(what string, err error) {
			if err != nil && !strings.Contains(err.Error(), p) {
				t.Fatalf("%s: error does not name the file: %v", what, err)
			}
		}
		bf, berr := ReadBench(p)
		named("ReadBench", berr)
		cf, cerr := ReadCheck(p)
		named("ReadCheck", cerr)
		ab, ac, aerr := ReadAny(p)
		named("ReadAny", aerr)
		switch {
		case aerr != nil:
			if ab != nil || ac != nil {
				t.Fatalf("ReadAny: error %v with a result", aerr)
			}
		case (ab == nil) == (ac == nil):
			t.Fatalf("ReadAny: bench %v, check %v: want exactly one", ab != nil, ac != nil)
		case ab != nil:
			if berr != nil || !sameJSON(t, *ab, bf) {
				t.Fatalf("ReadAny read a timing file that ReadBench reads differently (%v)", berr)
			}
		case ac != nil:
			if cerr != nil || !sameJSON(t, *ac, cf) {
				t.Fatalf("ReadAny read a conformance file that ReadCheck reads differently (%v)", cerr)
			}
		}
		if berr != nil {
			return
		}
		if isJSON(raw) {
			// A JSON timing file survives WriteBenchJSON.
			var buf bytes.Buffer
			if err := WriteBenchJSON(&buf, bf); err != nil {
				t.Fatalf("WriteBenchJSON of a file ReadBench accepted: %v", err)
			}
			back, err := parseBench(buf.Bytes(), p)
			if err != nil {
				t.Fatalf("reading back WriteBenchJSON's output: %v\n%s", err, buf.Bytes())
			}
			if !sameJSON(t, bf, back) {
				t.Fatalf("JSON round trip changed the file:\n%s", buf.Bytes())
			}
			return
		}
		textRoundTrip(t, bf, p)
	})
}

// textRoundTrip writes f with WriteBenchText, reads it back and compares the
// rows. Files whose rows the text format cannot tell apart (two rows that
// differ only in what the canonical name drops) or cannot write (row or
// failure names WriteBenchText refuses) are skipped.
func textRoundTrip(t *testing.T, f BenchFile, path string) {
	seen := map[string]bool{}
	for _, r := range f.Rows {
		if checkName(r) != nil {
			return
		}
		k := strings.Join([]string{benchName(r), oneLine(r.EffectiveISA(f.Meta))}, "\x00")
		if seen[k] {
			return
		}
		seen[k] = true
	}
	for _, fl := range f.Failed {
		if checkName(BenchRow{Case: fl.Case}) != nil {
			return // as for rows: a failure's case name WriteBenchText refuses
		}
	}
	var buf bytes.Buffer
	if err := WriteBenchText(&buf, f); err != nil {
		// Only documented refusals: meta keys benchfmt cannot hold, or e2e
		// samples on some lines of a row but not others.
		if msg := err.Error(); !strings.Contains(msg, "meta extra key") && !strings.Contains(msg, "e2e samples for") {
			t.Fatalf("WriteBenchText of a file ReadBench accepted: %v", err)
		}
		return
	}
	back, err := readBenchText(buf.Bytes(), path)
	if err != nil {
		t.Fatalf("reading back WriteBenchText's output: %v\n%s", err, buf.Bytes())
	}
	if len(back.Rows) != len(f.Rows) {
		t.Fatalf("%d rows written, %d read back\n%s", len(f.Rows), len(back.Rows), buf.Bytes())
	}
	for i, want := range f.Rows {
		got := back.Rows[i]
		if got.Case != want.Case || got.Backend != want.Backend || got.Batch != want.Batch ||
			got.Threads != want.Threads || got.DType != want.DType || got.N != want.N ||
			got.EffectiveISA(back.Meta) != oneLine(want.EffectiveISA(f.Meta)) || got.MACs != max(want.MACs, 0) {
			t.Fatalf("row %d: wrote %+v\nread back %+v\n%s", i, want, got, buf.Bytes())
		}
		if !closeAll(got.SamplesNs, want.SamplesNs) {
			t.Fatalf("row %d: samples %v read back as %v", i, want.SamplesNs, got.SamplesNs)
		}
		if len(want.E2ESamplesNs) > 0 && !closeAll(got.E2ESamplesNs, want.E2ESamplesNs) {
			t.Fatalf("row %d: e2e samples %v read back as %v", i, want.E2ESamplesNs, got.E2ESamplesNs)
		}
	}
}

// closeAll compares samples within float formatting tolerance, NaN equal to NaN.
func closeAll(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		switch {
		case math.IsNaN(x) || math.IsNaN(y):
			if math.IsNaN(x) != math.IsNaN(y) {
				return false
			}
		case math.IsInf(x, 0) || math.IsInf(y, 0):
			if x != y {
				return false
			}
		case math.Abs(x-y) > 1e-12*max(math.Abs(x), math.Abs(y)):
			return false
		}
	}
	return true
}

// sameJSON compares two results by their JSON form (NaN-safe).
func sameJSON(t *testing.T, a, b any) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	return bytes.Equal(ja, jb)
}
