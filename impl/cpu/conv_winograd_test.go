package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestConvWinogradMatchesOracle runs 3×3 stride-1 convolutions through the
// Winograd path on every SIMD path against the float64 loop: odd and even
// output sizes (a last tile row or column half outside the map), no,
// symmetric, asymmetric and wide padding, maps down to 2×2 and a batch of
// two, batches of three and five whose images are grouped (three in
// groups of two and one), output channels that split into several parts, and a residual
// with a ReLU, a ReLU alone and neither.
func TestConvWinogradMatchesOracle(t *testing.T) {
	geoms := []convGeom{{1, 5, 13, 11, 1, 1}, {2, 7, 8, 8, 1, 1}, {1, 4, 9, 16, 0, 0}, {1, 3, 7, 6, 2, 1},
		{1, 16, 4, 4, 0, 1}, {1, 9, 33, 35, 1, 1}, {2, 64, 7, 7, 1, 1},
		{3, 5, 18, 17, 1, 1}, {5, 6, 5, 6, 1, 1}}
	checkConvPath(t, "winograd", 3, geoms, useWinograd)
	// The same with each work item transforming its own block of tiles
	// (transformBlock), which the size rule leaves to larger maps.
	checkConvPath(t, "winograd,winoblocks", 3, geoms, useWinograd)
}

// convGeom is one image geometry of checkConvPath: batch, input channels,
// height, width and padding.
type convGeom struct{ batch, cin, h, w, ph, pw int }

// checkConvPath runs k×k stride-1 convolutions of every geometry, with 13,
// 40 and 200 output channels, forced onto convPath mode, on every kernel
// path where use takes them, against the float64 loop: geometry i with a
// residual and a ReLU when i mod 3 is 0, a ReLU alone when 1, neither
// when 2.
func checkConvPath(t *testing.T, mode string, k int, geoms []convGeom, use func(ops.Conv2d, bool) bool) {
	t.Helper()
	defer func(p string) { convPath = p }(convPath)
	convPath = mode
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		for gi, gm := range geoms {
			u := ops.Unfold{Batch: gm.batch, InChans: gm.cin, Height: gm.h, Width: gm.w, KernelH: k, KernelW: k,
				StrideH: 1, StrideW: 1, PadH: gm.ph, PadW: gm.pw, DilationH: 1, DilationW: 1}
			for _, outChans := range []int{13, 40, 200} {
				res, relu := gi%3 == 0, gi%3 != 2
				c := ops.Conv2d{Unfold: u, OutChans: outChans, Bias: true, ReLU: relu, Residual: res}
				if !use(c, false) {
					continue // the Go path
				}
				be := New(2)
				x := randSlice(rng, u.Batch*u.InChans*u.Height*u.Width, -1, 1)
				w := randSlice(rng, outChans*c.Cols(), -0.5, 0.5)
				bias := randSlice(rng, outChans, -0.5, 0.5)
				outShape := bench.Shape{u.Batch, outChans, u.OutH(), u.OutW()}
				in := []*tensor{be.testTensor(t, bench.Shape{u.Batch, u.InChans, u.Height, u.Width}, x),
					be.testTensor(t, bench.Shape{outChans, u.InChans, k, k}, w),
					be.testTensor(t, bench.Shape{outChans}, bias)}
				want := convOracle(c, x, w, bias)
				if res {
					r := randSlice(rng, int(outShape.Elems()), -1, 1)
					in = append(in, be.testTensor(t, outShape, r))
					for i := range want {
						want[i] += float64(r[i])
					}
				}
				if relu {
					for i := range want {
						want[i] = max(want[i], 0)
					}
				}
				out := []*tensor{be.testTensor(t, outShape, nil)}
				if err := be.conv2d(c, in, out); err != nil {
					t.Fatal(err)
				}
				checkClose(t, fmt.Sprintf("%s %+v O=%d", mode, gm, outChans), out[0].data, want)
			}
		}
	})
}

// TestConvWinogradAB prints, for 3×3 convolutions of ResNet-50, VQGAN and
// IPT (BN folded, ReLU), the median time of the path the backend takes
// without Winograd and of the Winograd path, on two threads, interleaved
// in rounds of 20 runs (shorter rounds let the switch between them
// dominate). Skipped unless VITBENCH_PROFILE_AB is set.
func TestConvWinogradAB(t *testing.T) {
	if os.Getenv("VITBENCH_PROFILE_AB") == "" {
		t.Skip("VITBENCH_PROFILE_AB not set")
	}
	for _, cv := range [][3]int{{64, 16, 1}, {32, 64, 1}, {64, 32, 1}, {64, 56, 1}, {128, 28, 1}, {256, 14, 1}, {512, 7, 1},
		{256, 13, 2}, {512, 7, 2}, {128, 16, 2}, {256, 8, 2}, {512, 7, 8}, {256, 14, 8}} {
		cin, h, batch := cv[0], cv[1], cv[2]
		conv := ops.Conv2d{Unfold: ops.Unfold{Batch: batch, InChans: cin, Height: h, Width: h, KernelH: 3, KernelW: 3,
			StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: cin, BN: true, BNEps: 1e-5, ReLU: true}
		ta, tb := abConv(conv, [2]string{"nowinograd", "winograd"})
		fmt.Printf("%v (C, H, batch): default %.1f µs, winograd %.1f µs, default/winograd %.2f\n", cv, ta*1e6, tb*1e6, ta/tb)
	}
}

// convShapes returns the shapes of conv's inputs in the order the conv2d
// node takes them (image, weight, then bias, the four BN arrays and the
// residual where conv has them) and of its output.
func convShapes(conv ops.Conv2d) (in []bench.Shape, out bench.Shape) {
	o := conv.OutChans
	out = bench.Shape{conv.Batch, o, conv.OutH(), conv.OutW()}
	in = []bench.Shape{{conv.Batch, conv.InChans, conv.Height, conv.Width}, {o, conv.InChans, conv.KernelH, conv.KernelW}}
	if conv.Bias {
		in = append(in, bench.Shape{o})
	}
	if conv.BN {
		in = append(in, bench.Shape{o}, bench.Shape{o}, bench.Shape{o}, bench.Shape{o})
	}
	if conv.Residual {
		in = append(in, out)
	}
	return in, out
}

// abConv returns the median time of conv under two convPath settings on a
// two-thread backend, interleaved in 12 rounds of 20 runs each (shorter
// rounds let the switch between them dominate), its inputs distinct per
// setting and positive (post-ReLU-like), with BN when conv has it and a
// residual when it has one.
func abConv(conv ops.Conv2d, paths [2]string) (ta, tb float64) {
	defer func(p string) { convPath = p }(convPath)
	be := New(2)
	shapes, outShape := convShapes(conv)
	var ins [2][]bench.Tensor
	var outs [2]bench.Tensor
	for v := range 2 {
		for _, s := range shapes {
			x, _ := be.Alloc(s, bench.Float32)
			d := make([]float32, s.Elems())
			for j := range d {
				d[j] = float32((j*7)%17)/17 + 0.1
			}
			be.Upload(x, d)
			ins[v] = append(ins[v], x)
		}
		outs[v], _ = be.Alloc(outShape, bench.Float32)
	}
	var ts [2][]float64
	for r := 0; r < 12; r++ {
		for v := range 2 {
			convPath = paths[v]
			for i := 0; i < 3; i++ {
				be.Enqueue(conv, ins[v], []bench.Tensor{outs[v]})
			}
			t0 := time.Now()
			for i := 0; i < 20; i++ {
				be.Enqueue(conv, ins[v], []bench.Tensor{outs[v]})
			}
			ts[v] = append(ts[v], time.Since(t0).Seconds()/20)
		}
	}
	slices.Sort(ts[0])
	slices.Sort(ts[1])
	return ts[0][6], ts[1][6]
}

// TestWinogradVendorRule: the Winograd path's channel minimum is 64 on the
// AVX-512 path of an Intel CPU (128 for products of at most a 16×16 map's
// tiles) and 32 elsewhere, a single image's one block of wide rows is
// transformed per work item there, and 32 everywhere with the vendor's rules off
// (what `vitbench baseline` measures peak bytes under, so that they do not
// depend on the machine).
func TestWinogradVendorRule(t *testing.T) {
	intel := fullWidthAVX512() && kern.Active() == kern.ISAAVX512
	for _, tiles := range []int{16, winogradFewTiles, winogradFewTiles + 1, 784} {
		want := winogradMinChans
		switch {
		case intel && tiles <= winogradFewTiles:
			want = winogradMinChansFewTiles
		case intel:
			want = winogradMinChansFullWidth
		}
		if got := winogradMinChansHere(tiles); got != want {
			t.Errorf("vendor rules on, %d tiles: %d channels, want %d", tiles, got, want)
		}
	}
	// VQGAN's middle blocks: 64 channels at 16×16 go direct on Intel.
	mid := ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: 64, Height: 16, Width: 16, KernelH: 3, KernelW: 3,
		StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: 64}
	if got := useWinograd(mid, false); kern.Active() != kern.ISAGo && got == intel {
		t.Errorf("vendor rules on: 64 channels at 16×16 take the Winograd path: %v, want %v", got, !intel)
	}
	// One block of wide rows (14×14) is transformed per work item on
	// Intel; dense rows (16×16) and the one block of a batch of two,
	// dense (8×8) or wide (9×9), are not.
	for _, pm := range []struct {
		size, batch int
		want        bool
	}{{14, 1, intel}, {16, 1, false}, {8, 2, false}, {9, 2, false}} {
		c := ops.Conv2d{Unfold: ops.Unfold{Batch: pm.batch, InChans: 256, Height: pm.size, Width: pm.size, KernelH: 3, KernelW: 3,
			StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: 256}
		g := newWinoGeom(c, 2)
		if got := g.transformPerItem(16*c.InChans*g.vs, 2); got != pm.want {
			t.Errorf("256 channels at %d×%d, batch %d: transformed per item %v, want %v", pm.size, pm.size, pm.batch, got, pm.want)
		}
	}
	was := SetVendorRules(false)
	defer SetVendorRules(was)
	for _, tiles := range []int{16, 784} {
		if got := winogradMinChansHere(tiles); got != winogradMinChans {
			t.Errorf("vendor rules off, %d tiles: %d channels, want %d", tiles, got, winogradMinChans)
		}
	}
	conv := ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: 32, Height: 64, Width: 64, KernelH: 3, KernelW: 3,
		StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: 32}
	if kern.Active() != kern.ISAGo && !useWinograd(conv, false) {
		t.Errorf("vendor rules off: VQGAN's 32-channel 3×3 convolution does not take the Winograd path")
	}
}

// TestWinogradGroupedDensePlanes: transformed planes past
// winogradBlocksMinBytes are transformed per work item, except those of a
// group of images numbered in dense rows, which keep whole planes (DETR's
// 7×9 and 13×17 maps and CLIP's 7×7 at batch 8); a group in wide rows
// (14×14 at batch 8) and a single large image in dense rows (56×56) are
// still per item.
func TestWinogradGroupedDensePlanes(t *testing.T) {
	for _, pm := range []struct {
		c, h, w, batch int
		grouped, dense bool
		want           bool
	}{
		{256, 7, 9, 8, true, true, false},
		{512, 7, 7, 8, true, true, false},
		{128, 13, 17, 8, true, true, false},
		{256, 14, 14, 8, true, false, true},
		{128, 56, 56, 1, false, true, true},
	} {
		c := ops.Conv2d{Unfold: ops.Unfold{Batch: pm.batch, InChans: pm.c, Height: pm.h, Width: pm.w, KernelH: 3, KernelW: 3,
			StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, DilationH: 1, DilationW: 1}, OutChans: pm.c}
		g := newWinoGeom(c, 2)
		vSize := 16 * c.InChans * g.vs
		if g.group > 1 != pm.grouped || (g.rowTiles != g.wq) != pm.dense || vSize*4 <= winogradBlocksMinBytes || g.blocks < 2 {
			t.Fatalf("%d channels at %d×%d, batch %d: group %d, rows of %d (wide %d), %d bytes of planes, %d blocks: not the case meant",
				pm.c, pm.h, pm.w, pm.batch, g.group, g.rowTiles, g.wq, vSize*4, g.blocks)
		}
		if got := g.transformPerItem(vSize, 2); got != pm.want {
			t.Errorf("%d channels at %d×%d, batch %d: transformed per item %v, want %v", pm.c, pm.h, pm.w, pm.batch, got, pm.want)
		}
	}
}
