package report

import (
	"testing"

	"vitbench/bench/results"
)

// TestCPUBF16Pairing: a cpu-bf16 row is set beside the bf16 PyTorch baseline (bench_torch.py
// --dtype bf16 on the CPU writes dtype bfloat16), never the fp32 one, and beside ONNX
// Runtime's fp32 row; a cpu row keeps the fp32 PyTorch row, and a GPU row gets no ORT figure.
func TestCPUBF16Pairing(t *testing.T) {
	row := func(backend, dtype string, ns float64) entry {
		return entry{BenchRow: results.BenchRow{Case: "vit_s16", Backend: backend, DType: dtype, Batch: 1, Threads: 2, MedianNs: ns}, machine: "m"}
	}
	es := []entry{row("torch", "float32", 1), row("torch", "bfloat16", 2), row("ort", "float32", 3)}
	if got, ok := torchFor(es, row("cpu-bf16", "float32", 9)); !ok || got.MedianNs != 2 {
		t.Errorf("cpu-bf16 paired with PyTorch %+v (ok %v), want the bfloat16 row", got.BenchRow, ok)
	}
	if got, ok := torchFor(es[:1], row("cpu-bf16", "float32", 9)); ok {
		t.Errorf("cpu-bf16 paired with the fp32 PyTorch row %+v", got.BenchRow)
	}
	if got, ok := torchFor(es, row("cpu", "float32", 9)); !ok || got.MedianNs != 1 {
		t.Errorf("cpu paired with PyTorch %+v (ok %v), want the float32 row", got.BenchRow, ok)
	}
	for backend, want := range map[string]bool{"cpu": true, "cpu-bf16": true, "cuda": false, "cuda-bf16": false} {
		if got, ok := ortFor(es, row(backend, "float32", 9)); ok != want || (ok && got.MedianNs != 3) {
			t.Errorf("%s: ORT row %+v (ok %v), want ok %v", backend, got.BenchRow, ok, want)
		}
	}
}
