package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// layerNorm normalises every token of x [B, T, D], rows split between
// workers.
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
	parallelFor(threads, rows, 8, func(lo, hi int) {
		kern.LayerNorm(hi-lo, n.Dim, x[lo*n.Dim:], n.Dim, gamma, beta, float32(n.Eps), y[lo*n.Dim:], n.Dim)
	})
	return nil
}
