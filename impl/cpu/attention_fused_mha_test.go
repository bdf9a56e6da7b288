package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestMHAFusedMatchesUnfused: mha_core's fused path gives the unfused
// path's outputs to rounding, for one and two workers, batch 2, queries
// and keys of different counts that are multiples of no block, column
// offsets inside wider tensors, head dims 20, 64 and 71, and a padding
// mask that hides different keys per image (the first 300, a whole key
// block, in image 0).
func TestMHAFusedMatchesUnfused(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, a := range []ops.MHACore{
		{Batch: 2, Queries: 100, Keys: 600, Heads: 2, HeadDim: 20, Scale: 1 / math.Sqrt(20), QLd: 40, KLd: 120, KOff: 40, VLd: 120, VOff: 80, Masked: true},
		{Batch: 1, Queries: 333, Keys: 333, Heads: 3, HeadDim: 64, Scale: 0.125, QLd: 3 * 192, KLd: 3 * 192, KOff: 192, VLd: 3 * 192, VOff: 384},
		{Batch: 2, Queries: 70, Keys: 301, Heads: 1, HeadDim: 71, Scale: 1 / math.Sqrt(71), QLd: 71, KLd: 71, VLd: 80, VOff: 9, Masked: true},
	} {
		fill := func(n int) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = (rng.Float32()*2 - 1) * 2
			}
			return x
		}
		q, k, v := fill(a.Batch*a.Queries*a.QLd), fill(a.Batch*a.Keys*a.KLd), fill(a.Batch*a.Keys*a.VLd)
		mask := make([]float32, a.Batch*a.Keys)
		for j := 0; j < a.Keys; j++ {
			if j < 300 && j < a.Keys-1 || j%11 == 5 {
				mask[j] = 1
			}
			if a.Batch > 1 && j%3 == 0 {
				mask[a.Keys+j] = 1
			}
		}
		e := a.Heads * a.HeadDim
		run := func(threads, path int) []float32 {
			prev := attentionPath
			attentionPath = path
			defer func() { attentionPath = prev }()
			be := New(threads)
			in := []*tensor{
				be.testTensor(t, bench.Shape{a.Batch, a.Queries, a.QLd}, q),
				be.testTensor(t, bench.Shape{a.Batch, a.Keys, a.KLd}, k),
				be.testTensor(t, bench.Shape{a.Batch, a.Keys, a.VLd}, v),
			}
			if a.Masked {
				in = append(in, be.testTensor(t, bench.Shape{a.Batch, a.Keys}, mask))
			}
			out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Queries, e}, nil)}
			if err := be.mhaCore(a, in, out); err != nil {
				t.Fatal(err)
			}
			return out[0].data
		}
		for _, threads := range []int{1, 2} {
			want, got := run(threads, pathUnfused), run(threads, pathFused)
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 2e-6) {
					t.Fatalf("%+v threads %d: fused ctx[%d] = %v, unfused %v", a, threads, i, got[i], want[i])
				}
			}
		}
	}
}
