package cpu

import (
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestCachesCountInPeak checks that the buffers a node keeps between
// calls, cpu-bf16 attention's packed K and V per worker and an outlook
// geometry's plan, count in Memory's peak while the node runs, as scratch
// does, and not in the current bytes after it (so that a closed program
// leaves none). On a CPU with AMX the attention runs with AMX off, where
// it packs K and V.
func TestCachesCountInPeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	t.Run("attention", func(t *testing.T) {
		// The packed K and V are kern.AttentionBF16's, which does not run
		// where the bf16 products run on AMX tiles (AttentionBF16Fits).
		defer kern.SetAMX(kern.SetAMX(false))
		be := NewBF16(2)
		a := ops.AttentionCore{Batch: 1, Tokens: 40, Heads: 2, HeadDim: 16, Scale: 0.25}
		e := a.Heads * a.HeadDim
		in := []*tensor{be.testTensor(t, bench.Shape{1, a.Tokens, 3 * e}, randSlice(rng, a.Tokens*3*e, -1, 1))}
		out := []*tensor{be.testTensor(t, bench.Shape{1, a.Tokens, e}, nil)}
		before := be.Memory().Current
		be.ResetPeak()
		if err := be.attentionCore(a, in, out); err != nil {
			t.Fatal(err)
		}
		var kv int64
		for _, p := range be.packedKV {
			kv += p.Bytes()
		}
		if m := be.Memory(); kv == 0 || m.Current != before || m.Peak-m.Current < kv {
			t.Errorf("packed K and V %d bytes; current %d (before %d), peak %d", kv, m.Current, before, m.Peak)
		}
	})
	t.Run("outlook", func(t *testing.T) {
		be := New(2)
		o := ops.OutlookCore{Batch: 1, Height: 9, Width: 12, Dim: 40, Heads: 2, K: 3, Pad: 1, Stride: 2, Scale: 0.2}
		k4 := o.K * o.K * o.K * o.K
		logits := o.Batch * o.GridH() * o.GridW() * o.Heads * k4
		img := bench.Shape{o.Batch, o.Height, o.Width, o.Dim}
		in := []*tensor{
			be.testTensor(t, img, randSlice(rng, int(img.Elems()), -1, 1)),
			be.testTensor(t, bench.Shape{o.Batch, o.GridH(), o.GridW(), o.Heads * k4}, randSlice(rng, logits, -1, 1)),
		}
		out := []*tensor{be.testTensor(t, img, nil)}
		before := be.Memory().Current
		be.ResetPeak()
		if err := be.outlookCore(o, in, out); err != nil {
			t.Fatal(err)
		}
		var plan int64
		for _, pl := range be.outlookPlans {
			plan += pl.bytes()
		}
		// The soft-maxed logits are scratch during the gather too.
		if m := be.Memory(); plan == 0 || m.Current != before || m.Peak-m.Current < plan+4*int64(logits) {
			t.Errorf("plan %d bytes, logits %d; current %d (before %d), peak %d", plan, 4*logits, m.Current, before, m.Peak)
		}
	})
}
