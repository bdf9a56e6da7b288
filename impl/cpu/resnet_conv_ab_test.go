package cpu

import (
	"fmt"
	"os"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// TestResNetConvPathAB prints, for ResNet-50's 1×1 convolutions (BN
// folded, ReLU, some with a residual), the median time of the
// implicit-GEMM (windows) and the direct path, interleaved. Skipped
// unless VITBENCH_PROFILE_AB is set.
func TestResNetConvPathAB(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_AB") == "" {
		t.Skip("VITBENCH_PROFILE_AB not set")
	}
	defer func(p string) { convPath = p }(convPath)
	type cv struct {
		cin, cout, h, k, s int
		res                bool
	}
	for _, c := range []cv{{64, 256, 56, 1, 1, true}, {256, 64, 56, 1, 1, false}, {64, 256, 56, 1, 1, false},
		{128, 512, 28, 1, 1, true}, {512, 128, 28, 1, 1, false},
		{256, 1024, 14, 1, 1, true}, {1024, 256, 14, 1, 1, false},
		{512, 2048, 7, 1, 1, true}, {2048, 512, 7, 1, 1, false},
		{128, 128, 28, 3, 1, false}, {256, 256, 14, 3, 1, false}, {512, 512, 7, 3, 1, false}} {
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: c.cin, Height: c.h, Width: c.h, KernelH: c.k, KernelW: c.k,
			StrideH: c.s, StrideW: c.s, PadH: c.k / 2, PadW: c.k / 2, DilationH: 1, DilationW: 1}, OutChans: c.cout,
			BN: true, BNEps: 1e-5, ReLU: true, Residual: c.res}
		be := New(0)
		oh := conv.OutH()
		per := bench.Shape{c.cout}
		shapes := []bench.Shape{{1, c.cin, c.h, c.h}, {c.cout, c.cin, c.k, c.k}, per, per, per, per}
		if c.res {
			shapes = append(shapes, bench.Shape{1, c.cout, oh, oh})
		}
		ta, tb := abNode(t, be, conv, shapes, []bench.Shape{{1, c.cout, oh, oh}}, 30,
			func(v int) { convPath = []string{"windows", "direct"}[v] })
		flop := 2 * float64(oh*oh*c.cout*c.cin*c.k*c.k)
		fmt.Printf("%+v windows %.1f µs (%.0f GFLOP/s) direct %.1f µs (%.0f GFLOP/s) windows/direct %.2f\n",
			c, ta*1e6, flop/ta/1e9, tb*1e6, flop/tb/1e9, ta/tb)
	}
}

// BenchmarkResNetConv1x1Residual times layer1's expanding 1×1 conv
// (64→256 on 56×56, BN folded, residual added, then ReLU).
func BenchmarkResNetConv1x1Residual(b *testing.B) {
	conv := ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: 64, Height: 56, Width: 56, KernelH: 1, KernelW: 1,
		StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1}, OutChans: 256, BN: true, BNEps: 1e-5, ReLU: true, Residual: true}
	be := New(0)
	per := bench.Shape{256}
	var in []bench.Tensor
	for _, s := range []bench.Shape{{1, 64, 56, 56}, {256, 64, 1, 1}, per, per, per, per, {1, 256, 56, 56}} {
		x, _ := be.Alloc(s, bench.Float32)
		d := make([]float32, s.Elems())
		for j := range d {
			d[j] = float32(j%17)/17 - 0.3
		}
		be.Upload(x, d)
		in = append(in, x)
	}
	out, _ := be.Alloc(bench.Shape{1, 256, 56, 56}, bench.Float32)
	for b.Loop() {
		if err := be.Enqueue(conv, in, []bench.Tensor{out}); err != nil {
			b.Fatal(err)
		}
	}
}
