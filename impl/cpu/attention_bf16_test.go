package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestBF16BlockedScoresMatchUnfused: cpu-bf16's attention through
// kern.AttentionBF16 gives the bits of the unfused score path it replaced
// (the whole score block of a task, then its softmax), with the masks
// placed by the task's first query row: attention_core causal and not,
// with several blocks of query rows per head, and mha_core with padded
// keys, on one worker and on three; the blocked side runs each node on
// other values first, whose packed keys and values must not be reused.
func TestBF16BlockedScoresMatchUnfused(t *testing.T) {
	if !kern.HasBF16() || !kern.AttentionBF16Fits(1, 1) {
		t.Skip("no VDPBF16PS kernels: cpu-bf16 is NS here")
	}
	defer func() { bf16BlockedScores = true }()
	rng := rand.New(rand.NewPCG(51, 52))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = rng.Float32()*4 - 2
		}
		return x
	}
	same := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: out[%d] = %v blocked, %v unfused", what, i, got[i], want[i])
			}
		}
	}
	for _, a := range []ops.AttentionCore{
		{Batch: 1, Tokens: 197, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Batch: 2, Tokens: 77, Heads: 2, HeadDim: 32, Scale: 0.2, Causal: true},
		{Batch: 1, Tokens: 130, Heads: 1, HeadDim: 64, Scale: 0.125, Causal: true},
	} {
		e := a.Heads * a.HeadDim
		qkv := fill(a.Batch * a.Tokens * 3 * e)
		for _, threads := range []int{1, 3} {
			var outs [2][]float32
			for i, on := range []bool{false, true} {
				bf16BlockedScores = on
				be := NewBF16(threads)
				out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, e}, nil)}
				// A call on other values first: nothing of it may be
				// reused by the next (the packed K and V of a head).
				for _, x := range [][]float32{fill(len(qkv)), qkv} {
					in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, 3 * e}, x)}
					if err := be.attentionCore(a, in, out); err != nil {
						t.Fatal(err)
					}
				}
				outs[i] = out[0].data
			}
			same(t, "attention_core", outs[1], outs[0])
		}
	}
	a := ops.MHACore{Batch: 2, Queries: 30, Keys: 41, Heads: 4, HeadDim: 16, Scale: 0.25, QLd: 64, KLd: 128, KOff: 64, VLd: 80, VOff: 8, Masked: true}
	q, k, v := fill(a.Batch*a.Queries*a.QLd), fill(a.Batch*a.Keys*a.KLd), fill(a.Batch*a.Keys*a.VLd)
	mask := make([]float32, a.Batch*a.Keys)
	for j := 30; j < a.Keys; j++ {
		mask[a.Keys+j] = 1 // the second image's last keys are padding
	}
	var outs [2][]float32
	for i, on := range []bool{false, true} {
		bf16BlockedScores = on
		be := NewBF16(2)
		out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Queries, a.HeadDim * a.Heads}, nil)}
		for _, kv := range [][2][]float32{{fill(len(k)), fill(len(v))}, {k, v}} { // other keys and values first
			in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Queries, a.QLd}, q), be.testTensor(t, bench.Shape{a.Batch, a.Keys, a.KLd}, kv[0]),
				be.testTensor(t, bench.Shape{a.Batch, a.Keys, a.VLd}, kv[1]), be.testTensor(t, bench.Shape{a.Batch, a.Keys}, mask)}
			if err := be.mhaCore(a, in, out); err != nil {
				t.Fatal(err)
			}
		}
		outs[i] = out[0].data
	}
	same(t, "mha_core", outs[1], outs[0])
}

// BenchmarkBF16BlockedScores times cpu-bf16's attention_core through
// kern.AttentionBF16 against the unfused GEMMs and softmax it replaced,
// alternating call by call (which goes first alternating), on DeiT-Ti's,
// ViT-S/16's and ViT-B/16's heads at 197 tokens and CLIP's causal 77, and
// reports the median of the paired ratios, unfused over blocked:
//
//	go test ./impl/cpu -run '^$' -bench BF16BlockedScores -benchtime 3000x
func BenchmarkBF16BlockedScores(b *testing.B) {
	if !kern.HasBF16() || !kern.AttentionBF16Fits(1, 1) {
		b.Skip("no VDPBF16PS kernels")
	}
	defer func() { bf16BlockedScores = true }()
	for _, a := range []ops.AttentionCore{
		{Batch: 1, Tokens: 197, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Batch: 1, Tokens: 197, Heads: 6, HeadDim: 64, Scale: 0.125},
		{Batch: 1, Tokens: 197, Heads: 12, HeadDim: 64, Scale: 0.125},
		{Batch: 1, Tokens: 77, Heads: 8, HeadDim: 64, Scale: 0.125, Causal: true},
	} {
		be := NewBF16(0)
		in, out := benchAttentionTensors(b, be, a, rand.New(rand.NewPCG(1, 1)))
		b.Run(fmt.Sprintf("tokens=%d/heads=%d/causal=%v", a.Tokens, a.Heads, a.Causal), func(b *testing.B) {
			var ratios []float64
			for it := 0; b.Loop(); it++ {
				var d [2]time.Duration // unfused, blocked
				for j := range 2 {
					v := (j + it) % 2
					bf16BlockedScores = v == 1
					t0 := time.Now()
					if err := be.attentionCore(a, in, out); err != nil {
						b.Fatal(err)
					}
					d[v] = time.Since(t0)
				}
				ratios = append(ratios, d[0].Seconds()/d[1].Seconds())
			}
			b.ReportMetric(median(ratios), "unfused/blocked")
		})
	}
}
