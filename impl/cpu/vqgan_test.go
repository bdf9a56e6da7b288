package cpu

import (
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestGraphWrittenWeightRepacks: a GEMM weight that the graph itself
// writes (minGPT's stacked q/k/v, rewritten for every layer) is packed
// again after each write, on every ISA path: the second product uses the
// second matrix, not the first one's packed copy.
func TestGraphWrittenWeightRepacks(t *testing.T) {
	for _, isa := range SupportedISAs() {
		if err := SetISA(isa); err != nil {
			t.Fatal(err)
		}
		b := New(1)
		alloc := func(s bench.Shape, v []float32) bench.Tensor {
			x, err := b.Alloc(s, bench.Float32)
			if err != nil {
				t.Fatal(err)
			}
			if v != nil {
				b.Upload(x, v)
			}
			return x
		}
		x := alloc(bench.Shape{1, 1, 2}, []float32{1, 2})
		wa := alloc(bench.Shape{2, 2}, []float32{1, 0, 0, 1})
		wb := alloc(bench.Shape{2, 2}, []float32{0, 1, 1, 0})
		w := alloc(bench.Shape{2, 2}, nil)
		ya, yb := alloc(bench.Shape{1, 1, 2}, nil), alloc(bench.Shape{1, 1, 2}, nil)
		copyNode := ops.Concat{Parts: 1, Elems: 4}
		gemm := ops.Gemm{Batch: 1, M: 1, N: 2, K: 2, TransB: true}
		for _, st := range []struct {
			n       bench.Node
			in, out []bench.Tensor
		}{
			{copyNode, []bench.Tensor{wa}, []bench.Tensor{w}},
			{gemm, []bench.Tensor{x, w}, []bench.Tensor{ya}},
			{copyNode, []bench.Tensor{wb}, []bench.Tensor{w}},
			{gemm, []bench.Tensor{x, w}, []bench.Tensor{yb}},
		} {
			if err := b.Enqueue(st.n, st.in, st.out); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]float32, 2)
		b.Download(yb, got)
		if got[0] != 2 || got[1] != 1 {
			t.Errorf("%s: x·wbᵀ = %v, want [2 1] (a stale packed copy of the first matrix gives [1 2])", isa, got)
		}
	}
	SetISA(SupportedISAs()[0])
}
