package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// layerNorm normalises every token of x [B, T, D], rows split between
// workers in static halves (parallelChunks), not balanced pieces: the
// GEMMs before and after it split their rows the same way (gemmParallel:
// chunk·m/threads), so each worker normalises the rows it computed and
// its next GEMM reads rows it wrote, in its own cache. A balanced call
// sends a piece to the other worker whenever one starts late, and every
// row that moves between the cores costs a transfer of its lines (`vitbench
// peak` measured a 478 ns round trip between the two vCPUs of the 2-vCPU
// Zen 5 guest). Static against balanced, alternating run by run in one
// process: deit_ti 1.017-1.031× on cpu-bf16 and 1.010× on cpu, t2t_vit_14
// 1.005×, volo_d1 1.008× on cpu-bf16.
func (b *Backend) layerNorm(n ops.LayerNorm, in, out []*tensor) error {
	d := bench.Shape{n.Dim}
	if err := checkRowShapes("layernorm", in, []bench.Shape{{n.Batch, n.Tokens, n.Dim}, d, d}, 0); err != nil {
		return err
	}
	if err := checkRowShapes("layernorm", out, []bench.Shape{{n.Batch, n.Tokens, n.Dim}}, 0); err != nil {
		return err
	}
	x, gamma, beta, y := in[0].data, in[1].data, in[2].data, out[0].data
	rows := n.Batch * n.Tokens
	threads := b.threads
	if rows*n.Dim < 1<<15 {
		threads = 1
	}
	parallelChunks(threads, rows, 8, func(_, lo, hi int) {
		kern.LayerNorm(hi-lo, n.Dim, x[lo*n.Dim:], n.Dim, gamma, beta, float32(n.Eps), y[lo*n.Dim:], n.Dim)
	})
	return nil
}
