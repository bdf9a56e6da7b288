package cuda

import (
	"math"
	"os"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

func symlink(target, link string) error { return os.Symlink(target, link) }

// testDeviceGemm checks gemm (bias, exact GELU) on the device against a
// float64 loop.
func testDeviceGemm(t *testing.T, b *Backend) {
	const m, n, k = 37, 29, 53
	x, w, bias := make([]float32, m*k), make([]float32, n*k), make([]float32, n)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)))
	}
	for i := range w {
		w[i] = float32(math.Cos(float64(i) * 0.7))
	}
	for i := range bias {
		bias[i] = float32(i) / 10
	}
	alloc := func(shape bench.Shape, data []float32) bench.Tensor {
		tt, err := b.Alloc(shape, bench.Float32)
		if err != nil {
			t.Fatal(err)
		}
		if data != nil {
			if err := b.Upload(tt, data); err != nil {
				t.Fatal(err)
			}
		}
		return tt
	}
	tx, tw, tb, ty := alloc(bench.Shape{1, m, k}, x), alloc(bench.Shape{n, k}, w), alloc(bench.Shape{n}, bias), alloc(bench.Shape{1, m, n}, nil)
	node := ops.Gemm{Batch: 1, M: m, N: n, K: k, TransB: true, Bias: true, Act: "gelu"}
	if err := b.Enqueue(node, []bench.Tensor{tx, tw, tb}, []bench.Tensor{ty}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, m*n)
	if err := b.Download(ty, got); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			acc := float64(bias[j])
			for p := 0; p < k; p++ {
				acc += float64(x[i*k+p]) * float64(w[j*k+p])
			}
			want := 0.5 * acc * (1 + math.Erf(acc/math.Sqrt2))
			if d := math.Abs(float64(got[i*n+j]) - want); d > 1e-3*(1+math.Abs(want)) {
				t.Fatalf("out[%d, %d] = %v, want %v", i, j, got[i*n+j], want)
			}
		}
	}
	for _, tt := range []bench.Tensor{tx, tw, tb, ty} {
		b.Free(tt)
	}
	if mem := b.Memory(); mem.Current != 0 {
		t.Errorf("%d bytes still allocated after Free", mem.Current)
	}
}
