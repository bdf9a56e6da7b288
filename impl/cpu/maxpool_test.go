package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// maxPoolOracle is nn.MaxPool2d's plain loop over each window in
// row-major order, a NaN anywhere in the window giving NaN.
func maxPoolOracle(m ops.MaxPool2d, x []float32) []float32 {
	oh, ow := m.OutH(), m.OutW()
	out := make([]float32, m.Batch*m.Chans*oh*ow)
	for pl := 0; pl < m.Batch*m.Chans; pl++ {
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				best, nan := float32(math.Inf(-1)), false
				for ky := 0; ky < m.Kernel; ky++ {
					for kx := 0; kx < m.Kernel; kx++ {
						y, xx := oy*m.Stride-m.Pad+ky, ox*m.Stride-m.Pad+kx
						if y < 0 || xx < 0 || y >= m.Height || xx >= m.Width {
							continue
						}
						v := x[(pl*m.Height+y)*m.Width+xx]
						nan = nan || v != v
						best = max(best, v)
					}
				}
				if nan {
					best = float32(math.NaN())
				}
				out[(pl*oh+oy)*ow+ox] = best
			}
		}
	}
	return out
}

// TestMaxPoolMatchesOracle pools odd and even planes with ResNet's 3×3
// stride-2 pad-1 window (windows of three, two and one rows; a row of
// whole vectors and a tail) and others (2×2, stride 1, no padding, a window
// as large as the plane, padding wider than half the window, which
// PyTorch refuses but a fixture may declare), with some NaNs and all-negative planes (the
// padding must not count as 0), against the plain loop.
func TestMaxPoolMatchesOracle(t *testing.T) {
	forEachPath(t, func(t *testing.T) { checkMaxPool(t) })
}

func checkMaxPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range []ops.MaxPool2d{
		{Batch: 2, Chans: 3, Height: 50, Width: 65, Kernel: 3, Stride: 2, Pad: 1},
		{Batch: 1, Chans: 2, Height: 7, Width: 8, Kernel: 3, Stride: 2, Pad: 1},
		{Batch: 1, Chans: 2, Height: 1, Width: 5, Kernel: 3, Stride: 2, Pad: 1}, // one row per window
		{Batch: 1, Chans: 2, Height: 2, Width: 3, Kernel: 3, Stride: 2, Pad: 1},
		{Batch: 2, Chans: 2, Height: 34, Width: 40, Kernel: 3, Stride: 2, Pad: 1},
		{Batch: 1, Chans: 2, Height: 9, Width: 6, Kernel: 2, Stride: 2, Pad: 0},
		{Batch: 1, Chans: 1, Height: 5, Width: 7, Kernel: 3, Stride: 1, Pad: 1},
		{Batch: 1, Chans: 1, Height: 3, Width: 3, Kernel: 3, Stride: 1, Pad: 0},
		{Batch: 1, Chans: 1, Height: 4, Width: 5, Kernel: 2, Stride: 1, Pad: 2}, // windows wholly in the padding
	} {
		be := New(2)
		x := randSlice(rng, m.Batch*m.Chans*m.Height*m.Width, -2, -0.5)
		for i := 0; i < len(x); i += 37 {
			x[i] = float32(math.NaN())
		}
		in := []*tensor{be.testTensor(t, bench.Shape{m.Batch, m.Chans, m.Height, m.Width}, x)}
		out := []*tensor{be.testTensor(t, bench.Shape{m.Batch, m.Chans, m.OutH(), m.OutW()}, nil)}
		if err := be.maxPool2d(m, in, out); err != nil {
			t.Fatal(err)
		}
		want := maxPoolOracle(m, x)
		for i, w := range want {
			g := out[0].data[i]
			if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				t.Fatalf("%+v: element %d = %g, want %g", m, i, g, w)
			}
		}
	}
}

// TestMaxPoolBlocked runs ResNet's max pool through Enqueue on blocked
// images (NCHW on the paths without the blocked layout), on every path: two
// blocks of channels, odd and even sizes (windows of three, two and one
// rows and columns), a batch of two, NaNs, and ±0 side by side (the
// NCHW pool and the blocked one compare in the same order, so they must
// agree bit for bit). On the AVX-512 path the output stays blocked;
// Download returns NCHW.
func TestMaxPoolBlocked(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(43, 44))
		for _, m := range []ops.MaxPool2d{
			{Batch: 2, Chans: 32, Height: 13, Width: 17, Kernel: 3, Stride: 2, Pad: 1},
			{Batch: 1, Chans: 16, Height: 8, Width: 6, Kernel: 3, Stride: 2, Pad: 1},
			{Batch: 1, Chans: 16, Height: 1, Width: 2, Kernel: 3, Stride: 2, Pad: 1},
		} {
			be := New(2)
			x := randSlice(rng, m.Batch*m.Chans*m.Height*m.Width, -2, 2)
			for i := range x {
				switch rng.IntN(16) {
				case 0:
					x[i] = float32(math.NaN())
				case 1:
					x[i] = 0
				case 2:
					x[i] = float32(math.Copysign(0, -1))
				}
			}
			shape := bench.Shape{m.Batch, m.Chans, m.Height, m.Width}
			nchw := be.testTensor(t, shape, x)
			// The image as a blocked convolution leaves it (an identity
			// convolution would turn a pixel's NaN into NaN in all its
			// channels, and −0 into +0).
			wantBlocked := be.blockedLayout()
			blocked := be.testTensor(t, shape, x)
			if wantBlocked {
				be.toBlocked(m.Batch, m.Chans, m.Height*m.Width, x, blocked.data)
				blocked.blocked = true
			}
			outShape := bench.Shape{m.Batch, m.Chans, m.OutH(), m.OutW()}
			ref := be.testTensor(t, outShape, nil)
			if err := be.maxPool2d(m, []*tensor{nchw}, []*tensor{ref}); err != nil {
				t.Fatal(err)
			}
			out := be.testTensor(t, outShape, nil)
			if err := be.Enqueue(m, []bench.Tensor{blocked}, []bench.Tensor{out}); err != nil {
				t.Fatal(err)
			}
			if out.blocked != wantBlocked {
				t.Fatalf("%+v: output blocked %v, want %v", m, out.blocked, wantBlocked)
			}
			got := make([]float32, len(out.data))
			if err := be.Download(out, got); err != nil {
				t.Fatal(err)
			}
			want := maxPoolOracle(m, x)
			for i, w := range ref.data {
				g := got[i]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Fatalf("%+v: element %d = %g, the NCHW pool %g (oracle %g)", m, i, g, w, want[i])
				}
				if (g != g) != (want[i] != want[i]) || g == g && g != want[i] {
					t.Fatalf("%+v: element %d = %g, oracle %g", m, i, g, want[i])
				}
			}
		}
	})
}
