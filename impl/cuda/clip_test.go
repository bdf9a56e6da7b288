package cuda

import (
	"math"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu"
)

// runNode runs one node on backend b with the given inputs and returns its
// output of shape out.
func runNode(t *testing.T, b bench.Backend, node bench.Node, ins [][]float32, shapes []bench.Shape, out bench.Shape) []float32 {
	t.Helper()
	var tin []bench.Tensor
	for i, v := range ins {
		x, err := b.Alloc(shapes[i], bench.Float32)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free(x)
		if err := b.Upload(x, v); err != nil {
			t.Fatal(err)
		}
		tin = append(tin, x)
	}
	y, err := b.Alloc(out, bench.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(y)
	if err := b.Enqueue(node, tin, []bench.Tensor{y}); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, out.Elems())
	if err := b.Download(y, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestAttnPoolTokensOnEmulator: CLIP's attention-pool tokens (the mean of
// the map in front, positions added) on the emulator agree with the CPU
// backend, which the clip_resnet fixtures check against PyTorch (on CUDA
// those fixtures also need mha_core).
func TestAttnPoolTokensOnEmulator(t *testing.T) {
	b := requireEmulator(t, FP32)
	n := ops.AttnPoolTokens{Batch: 2, Tokens: 9, Chans: 5}
	x := make([]float32, 2*9*5)
	pos := make([]float32, 10*5)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	for i := range pos {
		pos[i] = float32(i) / 16
	}
	shapes := []bench.Shape{{2, 9, 5}, {10, 5}}
	out := bench.Shape{2, 10, 5}
	got := runNode(t, b, n, [][]float32{x, pos}, shapes, out)
	want := runNode(t, cpu.New(1), n, [][]float32{x, pos}, shapes, out)
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("element %d: emulator %g, cpu %g", i, got[i], want[i])
		}
	}
}
