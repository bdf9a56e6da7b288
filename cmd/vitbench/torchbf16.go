package main

import (
	"strings"

	"vitbench/bench"
	"vitbench/bench/accuracy"
)

// wantsTorchBF16 reports whether `run` times a CPU backend in bf16 ("cpu-bf16"), and so also
// the bf16 PyTorch baseline (reference/bench_torch.py --dtype bf16: the faster of autocast and
// bf16 weights), whose bfloat16 rows the report pairs with that backend's.
func wantsTorchBF16(backends []bench.Backend) bool {
	for _, b := range backends {
		if n := b.Name(); strings.HasPrefix(n, "cpu") && accuracy.Precision(n) == "bf16" {
			return true
		}
	}
	return false
}
