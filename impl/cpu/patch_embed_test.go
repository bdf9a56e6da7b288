package cpu

import (
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// BenchmarkPatchEmbedViTB16 times the backend's patch_embed on ViT-B/16's
// shape (1×3×224×224 → 196×768), weights prepacked.
func BenchmarkPatchEmbedViTB16(b *testing.B) {
	be := New(0)
	n := ops.PatchEmbed{Batch: 1, InChans: 3, Height: 224, Width: 224, EmbedDim: 768, PatchH: 16, PatchW: 16, Bias: true}
	alloc := func(s bench.Shape) *tensor {
		t, _ := be.Alloc(s, bench.Float32)
		return t.(*tensor)
	}
	in := []*tensor{alloc(bench.Shape{1, 3, 224, 224}), alloc(bench.Shape{768, 3, 16, 16}), alloc(bench.Shape{768})}
	out := []*tensor{alloc(bench.Shape{1, 196, 768})}
	for b.Loop() {
		if err := be.patchEmbed(n, in, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*196*768*768*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
