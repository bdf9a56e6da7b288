package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// runAttentionCore runs attention_core on qkv with path forced, on a
// backend of threads workers.
func runAttentionCore(t *testing.T, a ops.AttentionCore, qkv []float32, threads, path int) []float32 {
	prev := attentionPath
	attentionPath = path
	defer func() { attentionPath = prev }()
	e := a.Heads * a.HeadDim
	be := New(threads)
	in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, 3 * e}, qkv)}
	out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, e}, nil)}
	if err := be.attentionCore(a, in, out); err != nil {
		t.Fatal(err)
	}
	return out[0].data
}

// TestAttentionFusedMatchesUnfused: attention_core's fused path gives the
// unfused path's outputs to rounding (the order of the softmax sums), for
// one and two workers (whole heads, and heads split into query blocks),
// batch 2, causal, token counts that are multiples of no block (77, 300,
// 577) and head dims 20, 64 and 71.
func TestAttentionFusedMatchesUnfused(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, a := range []ops.AttentionCore{
		{Batch: 1, Tokens: 577, Heads: 3, HeadDim: 64, Scale: 0.125},
		{Batch: 2, Tokens: 300, Heads: 1, HeadDim: 71, Scale: 1 / math.Sqrt(71)},
		{Batch: 2, Tokens: 77, Heads: 3, HeadDim: 20, Scale: 1 / math.Sqrt(20), Causal: true},
		{Batch: 1, Tokens: 600, Heads: 1, HeadDim: 64, Scale: 0.125, Causal: true},
		{Batch: 1, Tokens: 20, Heads: 2, HeadDim: 8, Scale: 0.35},
	} {
		e := a.Heads * a.HeadDim
		qkv := make([]float32, a.Batch*a.Tokens*3*e)
		for i := range qkv {
			qkv[i] = (rng.Float32()*2 - 1) * 2
		}
		for _, threads := range []int{1, 2} {
			want := runAttentionCore(t, a, qkv, threads, pathUnfused)
			got := runAttentionCore(t, a, qkv, threads, pathFused)
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 2e-6) {
					t.Fatalf("%+v threads %d: fused ctx[%d] = %v, unfused %v", a, threads, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkAttentionCrossover times attention_core's fused and unfused
// paths on the same inputs, alternating every iteration in the same
// process, for sequence lengths from CLIP ViT-B/32's 50 tokens to T2T's
// 3136 and head dims 32 and 64 (with the heads of a 384-wide model, one
// head for T2T's token layers); it reports each path's time per call and
// the median over the iterations of unfused/fused (above 1: fused
// wins). docs/cpu-attention.md has the
// command and the table.
func BenchmarkAttentionCrossover(b *testing.B) {
	type shape struct{ n, heads, hd int }
	var shapes []shape
	for _, n := range []int{50, 100, 197, 256, 300, 400, 577, 784, 1024} {
		shapes = append(shapes, shape{n, 12, 32}, shape{n, 6, 64})
	}
	shapes = append(shapes, shape{784, 1, 64}, shape{3136, 1, 64})
	for _, s := range shapes {
		a := ops.AttentionCore{Batch: 1, Tokens: s.n, Heads: s.heads, HeadDim: s.hd, Scale: 1 / math.Sqrt(float64(s.hd))}
		b.Run(fmt.Sprintf("n=%d/heads=%d/hd=%d", s.n, s.heads, s.hd), func(b *testing.B) {
			be := New(0)
			in, out := benchAttentionTensors(b, be, a, rand.New(rand.NewPCG(1, 2)))
			prev := attentionPath
			defer func() { attentionPath = prev }()
			var spent [2]time.Duration
			ratios := make([]float64, 0, b.N)
			for i := 0; i < b.N; i++ {
				var took [2]time.Duration
				for p, path := range []int{pathFused, pathUnfused} {
					attentionPath = path
					t0 := time.Now()
					if err := be.attentionCore(a, in, out); err != nil {
						b.Fatal(err)
					}
					took[p] = time.Since(t0)
					spent[p] += took[p]
				}
				ratios = append(ratios, float64(took[1])/float64(took[0]))
			}
			slices.Sort(ratios)
			b.ReportMetric(float64(spent[0].Microseconds())/float64(b.N), "fused-us")
			b.ReportMetric(float64(spent[1].Microseconds())/float64(b.N), "unfused-us")
			b.ReportMetric(ratios[len(ratios)/2], "unfused/fused")
		})
	}
}

// benchTensor is testTensor for a benchmark.
// benchAttentionTensors returns attention_core a's input (qkv, batch 1,
// uniform in [−1, 1)) and output tensors on be, for the benchmarks.
func benchAttentionTensors(b *testing.B, be *Backend, a ops.AttentionCore, rng *rand.Rand) (in, out []*tensor) {
	e := a.Heads * a.HeadDim
	qkv := make([]float32, a.Tokens*3*e)
	for i := range qkv {
		qkv[i] = rng.Float32()*2 - 1
	}
	in = []*tensor{benchTensor(b, be, bench.Shape{1, a.Tokens, 3 * e}, qkv)}
	out = []*tensor{benchTensor(b, be, bench.Shape{1, a.Tokens, e}, nil)}
	return in, out
}

func benchTensor(b *testing.B, be *Backend, s bench.Shape, data []float32) *tensor {
	x, err := be.Alloc(s, bench.Float32)
	if err == nil && data != nil {
		err = be.Upload(x, data)
	}
	if err != nil {
		b.Fatal(err)
	}
	return x.(*tensor)
}
