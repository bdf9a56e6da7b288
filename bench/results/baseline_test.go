package results

import (
	"bytes"
	"strings"
	"testing"
)

// torchText is a bench_torch.py file: two labelled rows (PyTorch and NumPy) and one without.
const torchText = `goos: linux
Unit MACs/op assume=exact
BenchmarkGemm/512/backend=torch/batch=1/threads=2/dtype=float32 	1	1000 ns/op	10 MACs/op
BenchmarkGemm/512/backend=torch/batch=1/threads=2/dtype=float32 	1	1100 ns/op	10 MACs/op
# baseline BenchmarkGemm/512/backend=torch/batch=1/threads=2/dtype=float32: vitbench_ref.modules.Gemm: F.linear
BenchmarkGemm/512/backend=numpy/batch=1/threads=2/dtype=float32 	1	900 ns/op	10 MACs/op
# baseline BenchmarkGemm/512/backend=numpy/batch=1/threads=2/dtype=float32: NumPy x @ W.T
BenchmarkLayernorm/x/backend=torch/batch=2/threads=2/dtype=float32 	1	500 ns/op
`

func TestReadBaselines(t *testing.T) {
	f, err := readBenchText([]byte(torchText), "torch.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range f.Rows {
		got[r.Case+" "+r.Backend] = r.Baseline
	}
	want := map[string]string{
		"gemm/512 torch":    "vitbench_ref.modules.Gemm: F.linear",
		"gemm/512 numpy":    "NumPy x @ W.T",
		"layernorm/x torch": "",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: baseline %q, want %q", k, got[k], v)
		}
	}

	// The writer puts them back, so a rewritten file keeps its labels.
	var buf bytes.Buffer
	if err := WriteBenchText(&buf, f); err != nil {
		t.Fatal(err)
	}
	back, err := readBenchText(buf.Bytes(), "back.txt")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for i, r := range back.Rows {
		if r.Baseline != f.Rows[i].Baseline {
			t.Errorf("round trip row %d (%s %s): %q, want %q", i, r.Case, r.Backend, r.Baseline, f.Rows[i].Baseline)
		}
	}
}

func TestReadBaselinesRejectsBadLines(t *testing.T) {
	for name, line := range map[string]string{
		"no label":   "# baseline BenchmarkGemm/512/backend=torch/batch=1/threads=2/dtype=float32:",
		"not a name": "# baseline gemm: F.linear",
		"no row":     "# baseline BenchmarkGemm/1024/backend=torch/batch=1/threads=2/dtype=float32: F.linear",
	} {
		_, err := readBenchText([]byte(torchText+line+"\n"), "torch.txt")
		if err == nil || !strings.Contains(err.Error(), "torch.txt:9") {
			t.Errorf("%s: error %v, want one naming torch.txt:9", name, err)
		}
	}
}
