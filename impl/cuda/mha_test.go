package cuda

import (
	"math"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu"
)

// TestMHACoreOnEmulator: mha_core on the emulator agrees with the CPU
// backend, with q, k and v as column slices of wider tensors, with and
// without a key padding mask, and with one query (CLIP's attention pool).
func TestMHACoreOnEmulator(t *testing.T) {
	b := requireEmulator(t, FP32)
	for _, c := range []struct {
		a    ops.MHACore
		name string
	}{
		{ops.MHACore{Batch: 2, Queries: 5, Keys: 7, Heads: 3, HeadDim: 4, Scale: 0.5, QLd: 12, KLd: 24, KOff: 12, VLd: 30, VOff: 6}, "slices"},
		{ops.MHACore{Batch: 2, Queries: 5, Keys: 7, Heads: 3, HeadDim: 4, Scale: 0.5, QLd: 12, KLd: 12, VLd: 12, Masked: true}, "masked"},
		{ops.MHACore{Batch: 3, Queries: 1, Keys: 10, Heads: 2, HeadDim: 8, Scale: 0.35, QLd: 16, KLd: 16, VLd: 16}, "one query"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.a
			shapes := []bench.Shape{{a.Batch, a.Queries, a.QLd}, {a.Batch, a.Keys, a.KLd}, {a.Batch, a.Keys, a.VLd}}
			if a.Masked {
				shapes = append(shapes, bench.Shape{a.Batch, a.Keys})
			}
			var ins [][]float32
			for i, s := range shapes {
				v := make([]float32, s.Elems())
				for j := range v {
					v[j] = float32(math.Sin(float64(7*j + 3*i)))
				}
				if a.Masked && i == 3 {
					for j := range v {
						v[j] = 0
						if j%a.Keys >= a.Keys-1-j/a.Keys { // image 0 pads its last key, image 1 two
							v[j] = 1
						}
					}
				}
				ins = append(ins, v)
			}
			out := bench.Shape{a.Batch, a.Queries, a.Heads * a.HeadDim}
			got := runNode(t, b, a, ins, shapes, out)
			want := runNode(t, cpu.New(1), a, ins, shapes, out)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 || math.IsNaN(float64(got[i])) {
					t.Fatalf("element %d: emulator %g, cpu %g", i, got[i], want[i])
				}
			}
		})
	}
}
