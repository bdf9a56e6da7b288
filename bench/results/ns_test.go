package results

import (
	"bytes"
	"strings"
	"testing"
)

// TestNSLinesRoundTrip: a "# NS" line (a baseline that cannot run a case, reference/bench_ort.js)
// reads as a BenchFailure marked NS with its reason, is written back as an NS line, not a
// FAILED one, and a malformed one is an error naming the file and line.
func TestNSLinesRoundTrip(t *testing.T) {
	text := "goos: linux\n" +
		"# NS BenchmarkVolo_d1/backend=ort/batch=1/threads=2/dtype=float32: onnxruntime-node not installed\n" +
		"# FAILED BenchmarkDeit_ti/backend=ort/batch=1/threads=2/dtype=float32: boom\n"
	f, err := readBenchText([]byte(text), "ort.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []BenchFailure{
		{Case: "volo_d1", Backend: "ort", Batch: 1, Threads: 2, DType: "float32", Error: "onnxruntime-node not installed", NS: true},
		{Case: "deit_ti", Backend: "ort", Batch: 1, Threads: 2, DType: "float32", Error: "boom"},
	}
	if len(f.Failed) != 2 || f.Failed[0] != want[0] || f.Failed[1] != want[1] {
		t.Fatalf("read %+v, want %+v", f.Failed, want)
	}
	var buf bytes.Buffer
	if err := WriteBenchText(&buf, f); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "# NS BenchmarkVolo_d1/backend=ort/batch=1/threads=2/dtype=float32: onnxruntime-node not installed\n") ||
		!strings.Contains(out, "# FAILED BenchmarkDeit_ti/") || strings.Contains(out, "# FAILED BenchmarkVolo_d1") {
		t.Errorf("written back as:\n%s", out)
	}
	if _, err := readBenchText([]byte("goos: linux\n# NS nonsense\n"), "bad.txt"); err == nil || !strings.Contains(err.Error(), "bad.txt:2") {
		t.Errorf("malformed NS line: error %v, want one naming bad.txt:2", err)
	}
}
