package cpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// mhaNaive is MHACore's plain loop in float64: per image, head and query,
// the scaled dot products with every unmasked key, their softmax and the
// weighted sum of the values.
func mhaNaive(a ops.MHACore, q, k, v, mask []float32) []float32 {
	e := a.Heads * a.HeadDim
	out := make([]float32, a.Batch*a.Queries*e)
	s := make([]float64, a.Keys)
	for b := 0; b < a.Batch; b++ {
		for h := 0; h < a.Heads; h++ {
			for i := 0; i < a.Queries; i++ {
				mx := math.Inf(-1)
				for j := 0; j < a.Keys; j++ {
					s[j] = math.Inf(-1)
					if a.Masked && mask[b*a.Keys+j] != 0 {
						continue
					}
					var dot float64
					for d := 0; d < a.HeadDim; d++ {
						dot += float64(q[(b*a.Queries+i)*a.QLd+a.QOff+h*a.HeadDim+d]) * float64(k[(b*a.Keys+j)*a.KLd+a.KOff+h*a.HeadDim+d])
					}
					s[j] = dot * a.Scale
					mx = math.Max(mx, s[j])
				}
				var sum float64
				for j := range s {
					s[j] = math.Exp(s[j] - mx)
					sum += s[j]
				}
				for d := 0; d < a.HeadDim; d++ {
					var acc float64
					for j := range s {
						acc += s[j] / sum * float64(v[(b*a.Keys+j)*a.VLd+a.VOff+h*a.HeadDim+d])
					}
					out[(b*a.Queries+i)*e+h*a.HeadDim+d] = float32(acc)
				}
			}
		}
	}
	return out
}

// TestMHACoreMatchesLoop: on every ISA path and worker count, mha_core
// equals the plain loop at shapes no fixture has (odd query and key
// counts, column offsets inside wider tensors, a padding mask that hides
// different keys per image, a batch of 2).
func TestMHACoreMatchesLoop(t *testing.T) {
	defer SetISA(SupportedISAs()[0])
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []ops.MHACore{
		{Batch: 2, Queries: 7, Keys: 13, Heads: 3, HeadDim: 5, Scale: 0.4, QLd: 45, QOff: 0, KLd: 45, KOff: 15, VLd: 17, VOff: 2, Masked: true},
		{Batch: 1, Queries: 70, Keys: 70, Heads: 2, HeadDim: 16, Scale: 0.25, QLd: 96, KLd: 96, KOff: 32, VLd: 96, VOff: 64},
		{Batch: 2, Queries: 10, Keys: 35, Heads: 8, HeadDim: 32, Scale: 1 / math.Sqrt(32), QLd: 768, KLd: 768, KOff: 256, VLd: 768, VOff: 512, Masked: true},
	}
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = rng.Float32()*4 - 2
		}
		return x
	}
	for _, isa := range SupportedISAs() {
		if err := SetISA(isa); err != nil {
			t.Fatal(err)
		}
		for _, a := range cases {
			e := a.Heads * a.HeadDim
			q, k, v := fill(a.Batch*a.Queries*a.QLd), fill(a.Batch*a.Keys*a.KLd), fill(a.Batch*a.Keys*a.VLd)
			mask := make([]float32, a.Batch*a.Keys)
			for b := 0; b < a.Batch; b++ {
				for j := a.Keys - 3 - 2*b; j < a.Keys; j++ {
					mask[b*a.Keys+j] = 1 // the last keys of each image are padding
				}
			}
			want := mhaNaive(a, q, k, v, mask)
			for _, threads := range []int{1, 2, 3} {
				be := New(threads)
				in := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Queries, a.QLd}, q),
					be.testTensor(t, bench.Shape{a.Batch, a.Keys, a.KLd}, k), be.testTensor(t, bench.Shape{a.Batch, a.Keys, a.VLd}, v)}
				if a.Masked {
					in = append(in, be.testTensor(t, bench.Shape{a.Batch, a.Keys}, mask))
				}
				out := []*tensor{be.testTensor(t, bench.Shape{a.Batch, a.Queries, e}, nil)}
				if err := be.mhaCore(a, in, out); err != nil {
					t.Fatal(err)
				}
				for i, g := range out[0].data {
					if d := math.Abs(float64(g - want[i])); !(d <= 2e-5*(1+math.Abs(float64(want[i])))) {
						t.Fatalf("%s, %d threads, %+v: out[%d] = %v, the loop gives %v", isa, threads, a, i, g, want[i])
					}
				}
			}
		}
	}
}

// TestMHACoreRejectsBadColumns: a slice that does not fit its tensor's
// width is an error naming the tensor, not a read past the row.
func TestMHACoreRejectsBadColumns(t *testing.T) {
	be := New(1)
	a := ops.MHACore{Batch: 1, Queries: 2, Keys: 2, Heads: 1, HeadDim: 4, Scale: 1, QLd: 4, KLd: 8, KOff: 5, VLd: 4}
	in := []*tensor{be.testTensor(t, bench.Shape{1, 2, 4}, nil), be.testTensor(t, bench.Shape{1, 2, 8}, nil), be.testTensor(t, bench.Shape{1, 2, 4}, nil)}
	out := []*tensor{be.testTensor(t, bench.Shape{1, 2, 4}, nil)}
	if err := be.mhaCore(a, in, out); err == nil || !strings.Contains(err.Error(), "k columns [5, 9) exceed its width 8") {
		t.Fatalf("got %v, want an error about k's columns", err)
	}
}

// TestRowSliceRepacks: a GEMM whose weight row_slice rewrites (DETR's q, k
// and v blocks of each layer's in_proj, one temp for every layer) uses the
// new rows, not the packed copy of the previous layer's.
func TestRowSliceRepacks(t *testing.T) {
	be := New(1)
	const d = 8
	packed := make([]float32, 3*d*d)
	for i := range packed {
		packed[i] = float32(i%13) - 6
	}
	src := be.testTensor(t, bench.Shape{3 * d, d}, packed)
	w := be.testTensor(t, bench.Shape{d, d}, nil)
	x := make([]float32, 2*d)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	xt := be.testTensor(t, bench.Shape{1, 2, d}, x)
	out := be.testTensor(t, bench.Shape{1, 2, d}, nil)
	g := ops.Gemm{Batch: 1, M: 2, N: d, K: d, TransB: true}
	for _, off := range []int{0, d, 2 * d} {
		if err := be.rowSlice(ops.RowSlice{Rows: d, Cols: d, Off: off}, []*tensor{src}, []*tensor{w}); err != nil {
			t.Fatal(err)
		}
		if err := be.gemm(g, []*tensor{xt, w}, []*tensor{out}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			for j := 0; j < d; j++ {
				var want float32
				for k := 0; k < d; k++ {
					want += x[i*d+k] * packed[(off+j)*d+k]
				}
				if got := out.data[i*d+j]; math.Abs(float64(got-want)) > 1e-4 {
					t.Fatalf("rows from %d: out[%d, %d] = %v, want %v", off, i, j, got, want)
				}
			}
		}
	}
}
