package report

import (
	"testing"

	"vitbench/bench/results"
)

func TestTorchForPairsReducedPrecisionWithThatPrecisionOnly(t *testing.T) {
	row := func(backend, dtype string, ns float64) entry {
		return entry{BenchRow: results.BenchRow{Case: "vit_b16", Backend: backend, DType: dtype, Batch: 64, Threads: 1, MedianNs: ns}, machine: "h200"}
	}
	es := []entry{row("torch", "float32", 1), row("torch", "bfloat16", 2), row("torch", "tf32", 3)}
	for _, c := range []struct {
		backend string
		want    float64 // MedianNs of the paired torch row; 0: none
	}{
		{"cuda", 1}, {"cuda-bf16", 2}, {"cuda-tf32", 3}, {"cuda-fp16", 0}, {"cpu", 1},
	} {
		got, ok := torchFor(es, row(c.backend, "float32", 9))
		if (c.want == 0) == ok || (ok && got.MedianNs != c.want) {
			t.Errorf("%s: paired with %+v (ok %v), want the row with median %v", c.backend, got.BenchRow, ok, c.want)
		}
	}
}
