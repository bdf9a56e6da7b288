package cpu

import (
	"testing"

	"vitbench/bench"
	"vitbench/bench/cases"
)

// BenchmarkConvVOLOStem2 times conv2d/volo_stem2 (64→64, 3×3, 112×112,
// BN and ReLU folded) through the backend.
func BenchmarkConvVOLOStem2(b *testing.B) {
	c, _ := cases.Lookup("conv2d/volo_stem2")
	s, _ := c.Spec(0)
	be := New(0)
	var in, out []bench.Tensor
	for _, a := range append(s.Inputs(), s.Weights()...) {
		t, _ := be.Alloc(a.Shape, bench.Float32)
		d := make([]float32, a.Shape.Elems())
		for i := range d {
			d[i] = 1
		}
		be.Upload(t, d)
		in = append(in, t)
	}
	t, _ := be.Alloc(s.Outputs()[0].Shape, bench.Float32)
	out = append(out, t)
	node := s.Graph().Steps[0].Node
	for b.Loop() {
		if err := be.Enqueue(node, in, out); err != nil {
			b.Fatal(err)
		}
	}
}
