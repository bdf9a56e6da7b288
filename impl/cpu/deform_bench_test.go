package cpu

import (
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// ddetrLevels are Deformable DETR's four levels for an 800×1066 image.
var ddetrLevels = ops.LevelsOf([2]int{100, 134}, [2]int{50, 67}, [2]int{25, 34}, [2]int{13, 17})

// BenchmarkMSDeformCoreEncoder times the sampling of one encoder layer
// (Lq = S = 17,821, 8 heads of 32, 4 levels, 4 points), locations uniform
// over the maps.
func BenchmarkMSDeformCoreEncoder(b *testing.B) {
	c := ops.MSDeformCore{Batch: 1, Queries: 17821, Heads: 8, HeadDim: 32, Points: 4, Levels: ddetrLevels}
	be := New(0)
	rng := rand.New(rand.NewPCG(1, 2))
	t := func(s bench.Shape, lo, hi float32) *tensor {
		x, _ := be.Alloc(s, bench.Float32)
		_ = be.Upload(x, randSlice(rng, int(s.Elems()), lo, hi))
		return x.(*tensor)
	}
	in := []*tensor{t(bench.Shape{1, c.Values(), 8, 32}, -1, 1), t(bench.Shape{1, c.Queries, 8, 4, 4, 2}, 0, 1),
		t(bench.Shape{1, c.Queries, 8, 4, 4}, 0, 1)}
	out := []*tensor{t(bench.Shape{1, c.Queries, 256}, 0, 0)}
	for b.Loop() {
		if err := be.msDeformCore(c, in, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMSDeformSampleEncoder times ms_deform_attn's fused softmax,
// locations and sampling for one encoder layer, offsets of a few pixels
// around uniform reference points.
func BenchmarkMSDeformSampleEncoder(b *testing.B) {
	c := ops.MSDeformCore{Batch: 1, Queries: 17821, Heads: 8, HeadDim: 32, Points: 4, Levels: ddetrLevels}
	n := ops.MSDeformSample{MSDeformCore: c, RefDims: 2}
	be := New(0)
	rng := rand.New(rand.NewPCG(1, 2))
	t := func(s bench.Shape, lo, hi float32) *tensor {
		x, _ := be.Alloc(s, bench.Float32)
		_ = be.Upload(x, randSlice(rng, int(s.Elems()), lo, hi))
		return x.(*tensor)
	}
	in := []*tensor{t(bench.Shape{1, c.Values(), 256}, -1, 1), t(bench.Shape{1, c.Queries, 4, 2}, 0, 1),
		t(bench.Shape{1, c.Queries, 256}, -3, 3), t(bench.Shape{1, c.Queries, 128}, -1, 1)}
	out := []*tensor{t(bench.Shape{1, c.Queries, 256}, 0, 0)}
	for b.Loop() {
		if err := be.msDeformSample(n, in, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeformConvDCN256 times deform_conv2d 256→256, 3×3, pad 1, on
// 50×50 with a mask and offsets of up to ±2 pixels.
func BenchmarkDeformConvDCN256(b *testing.B) {
	dc := ops.DeformConv2d{Unfold: ops.Unfold{Batch: 1, InChans: 256, Height: 50, Width: 50, KernelH: 3, KernelW: 3,
		StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: 256, Groups: 1, OffsetGroups: 1,
		Bias: true, Mask: true}
	be := New(0)
	rng := rand.New(rand.NewPCG(1, 2))
	t := func(s bench.Shape, lo, hi float32) *tensor {
		x, _ := be.Alloc(s, bench.Float32)
		_ = be.Upload(x, randSlice(rng, int(s.Elems()), lo, hi))
		return x.(*tensor)
	}
	in := []*tensor{t(bench.Shape{1, 256, 50, 50}, -1, 1), t(bench.Shape{1, 18, 50, 50}, -2, 2), t(bench.Shape{1, 9, 50, 50}, 0, 1),
		t(bench.Shape{256, 256, 3, 3}, -0.02, 0.02), t(bench.Shape{256}, -0.02, 0.02)}
	out := []*tensor{t(bench.Shape{1, 256, 50, 50}, 0, 0)}
	for b.Loop() {
		if err := be.deformConv2d(dc, in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(dc.MACs())/1e9*float64(b.N)/b.Elapsed().Seconds(), "GFLOP/s")
}

// BenchmarkTransposeChannelsLast times the NCHW → channels-last copy of a
// 256×50×50 image.
func BenchmarkTransposeChannelsLast(b *testing.B) {
	src := make([]float32, 256*2500)
	dst := make([]float32, 256*2500)
	for b.Loop() {
		transposeToChannelsLast(2, 256, 2500, src, dst)
	}
	b.SetBytes(int64(len(src)) * 8)
}
