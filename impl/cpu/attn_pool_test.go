package cpu

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/bench/runner"
)

// attnPoolNaive is AttnPool as its parts compute it: the three
// projections (biases included) in float64, rounded once, then mhaNaive
// with the one query of each image against every token.
func attnPoolNaive(a ops.AttnPool, x, wq, bq, wk, bk, wv, bv []float32) []float32 {
	n, c := a.Tokens, a.Chans
	proj := func(rows int, w, bias []float32) []float32 {
		out := make([]float32, a.Batch*rows*c)
		for b := 0; b < a.Batch; b++ {
			for r := 0; r < rows; r++ {
				row := x[(b*n+r)*c : (b*n+r+1)*c]
				for o := 0; o < c; o++ {
					acc := float64(bias[o])
					for i, v := range row {
						acc += float64(v) * float64(w[o*c+i])
					}
					out[(b*rows+r)*c+o] = float32(acc)
				}
			}
		}
		return out
	}
	core := ops.MHACore{Batch: a.Batch, Queries: 1, Keys: n, Heads: a.Heads, HeadDim: a.HeadDim(), Scale: a.Scale,
		QLd: c, KLd: c, VLd: c}
	return mhaNaive(core, proj(1, wq, bq), proj(n, wk, bk), proj(n, wv, bv), nil)
}

// TestAttnPoolMatchesParts: on every ISA path and worker count, attn_pool
// (the query folded into Wk, the probabilities into Wv) equals its parts
// computed in float64, key and value biases included, at shapes no
// fixture has: a batch of 3 (whole images per worker), heads of 20 values
// (no whole panel of Wv: the per-head products), one head, and 8 heads of
// 64 over 50 tokens as in RN50's pool.
func TestAttnPoolMatchesParts(t *testing.T) {
	defer SetISA(SupportedISAs()[0])
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []ops.AttnPool{
		{Batch: 1, Tokens: 50, Chans: 512, Heads: 8},
		{Batch: 3, Tokens: 5, Chans: 40, Heads: 2},
		{Batch: 2, Tokens: 17, Chans: 96, Heads: 3},
		{Batch: 2, Tokens: 9, Chans: 64, Heads: 1},
	}
	fill := func(n int, r float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * r
		}
		return x
	}
	for _, a := range cases {
		a.Scale = 1 / math.Sqrt(float64(a.HeadDim()))
		c := a.Chans
		wr := float32(2 / math.Sqrt(float64(c))) // scores of a few units
		x := fill(a.Batch*a.Tokens*c, 1)
		ws := [][]float32{fill(c*c, wr), fill(c, 1), fill(c*c, wr), fill(c, 1), fill(c*c, wr), fill(c, 1)}
		want := attnPoolNaive(a, x, ws[0], ws[1], ws[2], ws[3], ws[4], ws[5])
		for _, isa := range SupportedISAs() {
			if err := SetISA(isa); err != nil {
				t.Fatal(err)
			}
			for _, threads := range []int{1, 2, 3} {
				be := New(threads)
				in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Tokens, c}, x)}
				for i, w := range ws {
					shape := bench.Shape{c}
					if i%2 == 0 {
						shape = bench.Shape{c, c}
					}
					in = append(in, be.testTensor(t, shape, w))
				}
				out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, 1, c}, nil)}
				if err := be.attnPool(a, in, out); err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%s, %d threads, %+v", isa, threads, a)
				for i, g := range out[0].data {
					if d := math.Abs(float64(g - want[i])); !(d <= 2e-5*(1+math.Abs(float64(want[i])))) {
						t.Fatalf("%s: out[%d] = %v, the parts give %v", what, i, g, want[i])
					}
				}
			}
		}
	}
}

// TestAttnPoolRejectsBadShapes: a weight of the wrong shape or heads that
// do not divide the channels are errors naming the op, not a read past a
// slice.
func TestAttnPoolRejectsBadShapes(t *testing.T) {
	be := New(1)
	a := ops.AttnPool{Batch: 1, Tokens: 3, Chans: 8, Heads: 2, Scale: 0.5}
	mk := func(wk bench.Shape) []*tensor {
		return []*tensor{be.testTensor(t, bench.Shape{1, 3, 8}, nil), be.testTensor(t, bench.Shape{8, 8}, nil),
			be.testTensor(t, bench.Shape{8}, nil), be.testTensor(t, wk, nil), be.testTensor(t, bench.Shape{8}, nil),
			be.testTensor(t, bench.Shape{8, 8}, nil), be.testTensor(t, bench.Shape{8}, nil)}
	}
	out := []*tensor{be.testTensor(t, bench.Shape{1, 1, 8}, nil)}
	if err := be.attnPool(a, mk(bench.Shape{8, 4}), out); err == nil {
		t.Fatal("a Wk of [8, 4] was accepted")
	}
	a.Heads = 3
	if err := be.attnPool(a, mk(bench.Shape{8, 8}), out); err == nil {
		t.Fatal("8 channels in 3 heads were accepted")
	}
}

// partsOnly is the cpu backend without a kernel for attn_pool, as the CUDA
// backend and cpu-bf16 are: the runner gives it the node's parts.
type partsOnly struct{ *Backend }

func (p partsOnly) Supports(op string, dt bench.DType) error {
	if op == "attn_pool" {
		return fmt.Errorf("partsOnly: no attn_pool")
	}
	return p.Backend.Supports(op, dt)
}

// TestAttnPoolAsItsParts: a CLIP ResNet (RN50's layout at a small width,
// a batch of 2, 3×3 positions and two heads) prepared on a backend
// without attn_pool runs the parts (take_token, the three projections,
// mha_core) in its place, and the image features agree with the folded
// node's on the full backend.
func TestAttnPoolAsItsParts(t *testing.T) {
	kind, err := bench.LookupOpKind("clip_resnet")
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(ops.CLIPResNetParams{Layers: []int{2, 1, 1, 1}, OutputDim: 16, Heads: 2, InputResolution: 70, Width: 8})
	spec, err := kind.Parse(params, 2)
	if err != nil {
		t.Fatal(err)
	}
	whole, parts := New(2), partsOnly{New(2)}
	if g := runner.GraphFor(parts, spec, bench.Float32); slices.Contains(g.Ops(), "attn_pool") || !slices.Contains(g.Ops(), "mha_core") {
		t.Fatalf("without attn_pool the graph runs %v", g.Ops())
	}
	if g := runner.GraphFor(whole, spec, bench.Float32); !slices.Contains(g.Ops(), "attn_pool") || slices.Contains(g.Ops(), "mha_core") {
		t.Fatalf("with attn_pool the graph runs %v", g.Ops())
	}
	var got [2][]float32
	for i, be := range []bench.Backend{whole, parts} {
		outs, p := runSpec(t, be, spec, 1)
		got[i] = outs["image_features"]
		p.Close()
	}
	if len(got[0]) != 2*16 || len(got[1]) != len(got[0]) {
		t.Fatalf("%d and %d features, want 32", len(got[0]), len(got[1]))
	}
	for i := range got[0] {
		if d := math.Abs(float64(got[0][i] - got[1][i])); !(d <= 1e-5*(1+math.Abs(float64(got[1][i])))) {
			t.Fatalf("feature %d: %v folded, %v as the parts", i, got[0][i], got[1][i])
		}
	}
}
