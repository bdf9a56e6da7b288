package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestAttentionCoreSplitsAgree: whatever the worker count, and so however
// the (image, head) pairs are cut into blocks of query rows (DeiT-Ti's 3
// heads on 2 workers, one head on 4, a batch of 2), the outputs equal one
// worker's: bit for bit on the SIMD paths, to rounding on the Go path;
// cpu-bf16 (where its kernels run) is held to the same.
func TestAttentionCoreSplitsAgree(t *testing.T) {
	t.Run("cpu", func(t *testing.T) { testAttentionSplits(t, New, kern.Active() != kern.ISAGo) })
	if kern.HasBF16() {
		t.Run("cpu-bf16", func(t *testing.T) { testAttentionSplits(t, NewBF16, true) })
	}
}

func testAttentionSplits(t *testing.T, newBackend func(int) *Backend, exact bool) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, a := range []ops.AttentionCore{
		{Batch: 1, Tokens: 197, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Batch: 1, Tokens: 100, Heads: 1, HeadDim: 64, Scale: 0.125},
		{Batch: 2, Tokens: 65, Heads: 3, HeadDim: 16, Scale: 0.25},
		{Batch: 1, Tokens: 20, Heads: 3, HeadDim: 8, Scale: 0.35},
	} {
		e := a.Heads * a.HeadDim
		qkv := make([]float32, a.Batch*a.Tokens*3*e)
		for i := range qkv {
			qkv[i] = rng.Float32()*2 - 1
		}
		run := func(threads int) []float32 {
			be := newBackend(threads)
			in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, 3 * e}, qkv)}
			out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, e}, nil)}
			if err := be.attentionCore(a, in, out); err != nil {
				t.Fatal(err)
			}
			return out[0].data
		}
		want := run(1)
		for _, threads := range []int{2, 3, 4} {
			got := run(threads)
			for i := range got {
				d := math.Abs(float64(got[i] - want[i]))
				if d != 0 && (exact || d > 1e-5*(1+math.Abs(float64(want[i])))) {
					t.Fatalf("%+v threads %d: ctx[%d] = %v, one worker gives %v", a, threads, i, got[i], want[i])
				}
			}
		}
	}
}
