package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// runNode enqueues node on be with inputs ins and a fresh output of
// shape out, and returns whether the node left the output blocked and its
// values in NCHW.
func runNode(t *testing.T, be *Backend, node bench.Node, ins []bench.Tensor, out bench.Shape) (bool, []float32) {
	t.Helper()
	o := be.testTensor(t, out, nil)
	if err := be.Enqueue(node, ins, []bench.Tensor{o}); err != nil {
		t.Fatal(err)
	}
	blocked := o.blocked
	got := make([]float32, len(o.data))
	if err := be.Download(o, got); err != nil {
		t.Fatal(err)
	}
	return blocked, got
}

// TestGroupNormBlocked runs group norms on NCHW and on blocked images
// (the output of a blocked identity convolution) against the same norm
// on a backend that keeps NCHW: groups of one, two and sixteen channels
// within a block and of 32 over two blocks, with and without Swish, a
// batch of two; three channels per group (groups across blocks) and an
// NCHW image without Swish stay NCHW. On AVX-512 the output is blocked
// exactly when useBlockedGroupNorm says so.
func TestGroupNormBlocked(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 1))
		for _, gc := range []struct {
			batch, ch, groups, h, w int
			swish, fromBlocked      bool
		}{
			{1, 32, 32, 9, 7, true, false}, {2, 64, 32, 5, 6, true, true}, {1, 512, 32, 3, 3, false, true},
			{1, 1024, 32, 2, 3, true, false}, {1, 96, 32, 4, 4, true, true}, {1, 64, 32, 4, 4, false, false},
		} {
			n := ops.GroupNorm{Batch: gc.batch, Chans: gc.ch, Groups: gc.groups, Height: gc.h, Width: gc.w, Eps: 1e-6, Swish: gc.swish}
			shape := bench.Shape{gc.batch, gc.ch, gc.h, gc.w}
			x := randSlice(rng, int(shape.Elems()), -2, 3)
			gamma, beta := randSlice(rng, gc.ch, 0.5, 1.5), randSlice(rng, gc.ch, -0.5, 0.5)
			ref := New(2)
			ref.nchwOnly = true
			_, want := runNode(t, ref, n, []bench.Tensor{ref.testTensor(t, shape, x), ref.testTensor(t, bench.Shape{gc.ch}, gamma),
				ref.testTensor(t, bench.Shape{gc.ch}, beta)}, shape)
			be := New(2)
			src := be.testTensor(t, shape, x)
			if gc.fromBlocked {
				src = identityConv(t, be, src)
			}
			inBlocked := src.blocked
			oBlocked, got := runNode(t, be, n, []bench.Tensor{src, be.testTensor(t, bench.Shape{gc.ch}, gamma),
				be.testTensor(t, bench.Shape{gc.ch}, beta)}, shape)
			if oBlocked != be.useBlockedGroupNorm(n, inBlocked) {
				t.Fatalf("%+v: output blocked %v, input blocked %v", gc, oBlocked, inBlocked)
			}
			w64 := make([]float64, len(want))
			for i, v := range want {
				w64[i] = float64(v)
			}
			checkClose(t, fmt.Sprintf("%+v", gc), got, w64)
		}
	})
}

// TestPadUpsampleBlocked pads and upsamples blocked images (and NCHW
// ones): the same values as on a backend that keeps NCHW, bit for bit,
// and the output in the input's layout.
func TestPadUpsampleBlocked(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 4))
		for _, blocked := range []bool{false, true} {
			shape := bench.Shape{2, 32, 5, 7}
			x := randSlice(rng, int(shape.Elems()), -1, 1)
			nodes := []struct {
				node bench.Node
				out  bench.Shape
			}{
				{ops.PadRightBottom{Batch: 2, Chans: 32, Height: 5, Width: 7}, bench.Shape{2, 32, 6, 8}},
				{ops.UpsampleNearest2x{Batch: 2, Chans: 32, Height: 5, Width: 7}, bench.Shape{2, 32, 10, 14}},
			}
			for _, nd := range nodes {
				ref := New(2)
				ref.nchwOnly = true
				_, want := runNode(t, ref, nd.node, []bench.Tensor{ref.testTensor(t, shape, x)}, nd.out)
				be := New(2)
				src := be.testTensor(t, shape, x)
				if blocked {
					src = identityConv(t, be, src)
				}
				inBlocked := src.blocked
				oBlocked, got := runNode(t, be, nd.node, []bench.Tensor{src}, nd.out)
				if oBlocked != inBlocked {
					t.Fatalf("%s: output blocked %v from an input blocked %v", nd.node.OpName(), oBlocked, inBlocked)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s (input blocked %v): value %d = %v, want %v", nd.node.OpName(), inBlocked, i, got[i], want[i])
					}
				}
			}
		}
	})
}

// TestFlattenLevelsBlocked flattens two levels into tokens, one blocked
// and one NCHW, then both blocked and a batch of two: the same tokens as
// from NCHW maps, bit for bit.
func TestFlattenLevelsBlocked(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(2, 8))
		n := ops.FlattenLevels{Batch: 2, Chans: 32, Levels: ops.LevelsOf([2]int{5, 7}, [2]int{3, 2})}
		shapes := []bench.Shape{{2, 32, 5, 7}, {2, 32, 3, 2}}
		vals := [][]float32{randSlice(rng, int(shapes[0].Elems()), -1, 1), randSlice(rng, int(shapes[1].Elems()), -1, 1)}
		out := bench.Shape{2, 41, 32}
		ref := New(2)
		ref.nchwOnly = true
		_, want := runNode(t, ref, n, []bench.Tensor{ref.testTensor(t, shapes[0], vals[0]), ref.testTensor(t, shapes[1], vals[1])}, out)
		for _, both := range []bool{false, true} {
			be := New(2)
			l0, l1 := identityConv(t, be, be.testTensor(t, shapes[0], vals[0])), be.testTensor(t, shapes[1], vals[1])
			if both {
				l1 = identityConv(t, be, l1)
			}
			_, got := runNode(t, be, n, []bench.Tensor{l0, l1}, out)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("both blocked %v: value %d = %v, want %v", both, i, got[i], want[i])
				}
			}
		}
	})
}
