package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
	"vitbench/internal/mutation"
)

// blockedCase is a convolution of the blocked path's tests.
type blockedCase struct {
	batch, cin, cout, h, w, k, s, p, d int
	res, relu                          bool
}

func (bc blockedCase) conv() ops.Conv2d {
	return ops.Conv2d{Unfold: ops.Unfold{Batch: bc.batch, InChans: bc.cin, Height: bc.h, Width: bc.w, KernelH: bc.k, KernelW: bc.k,
		StrideH: bc.s, StrideW: bc.s, PadH: bc.p, PadW: bc.p, DilationH: bc.d, DilationW: bc.d},
		OutChans: bc.cout, BN: true, BNEps: 1e-5, ReLU: bc.relu, Residual: bc.res}
}

// blockedCases: 3×3 at stride 1 and 2 on odd and even sizes (first and
// last columns and rows with their own taps), a 1×1 image under a 3×3
// window (only the centre tap), 1×1 at stride 1 (the image as one row of
// pixels, split by columns) and 2, a 7×7 stem-like window, dilation 2, a
// 1×1 window with padding (border outputs with no tap at all: bias,
// residual and ReLU only), output blocks in groups of 4 with 1, 2 and 3
// left over, batches of two and three, a 1×1 convolution deep
// enough to take its input blocks in batches (blockedBatchBytes),
// 3×3 and 1×1 ones whose weights are over pixelMajorWeightBytes (their
// tasks numbered group, then part; the others' part, then group), and
// convolutions of NCHW images of 1 to 3 channels (blockedNCHWInput: 3×3
// and ResNet's 7×7 stems at stride 2, tiles of 12 and 6 pixels,
// dilation). The outputs of
// one or two blocks run in tiles of up to 12 pixels (wideTiles).
var blockedCases = []blockedCase{
	{1, 32, 64, 7, 7, 3, 1, 1, 1, true, true},
	{2, 16, 80, 14, 13, 3, 1, 1, 1, false, true},
	{1, 48, 48, 1, 1, 3, 1, 1, 1, false, false},
	{1, 32, 32, 15, 14, 3, 2, 1, 1, false, true},
	{3, 64, 96, 9, 11, 1, 1, 0, 1, true, true},
	{1, 16, 16, 56, 56, 1, 1, 0, 1, false, false},
	{2, 32, 112, 14, 14, 1, 2, 0, 1, true, false},
	{1, 16, 32, 20, 22, 7, 2, 3, 1, false, true},
	{1, 32, 16, 10, 10, 3, 1, 2, 2, true, true},
	{1, 16, 32, 5, 5, 1, 1, 1, 1, true, true},
	{1, 1040, 64, 3, 5, 1, 1, 0, 1, true, true},
	{1, 48, 384, 6, 5, 3, 1, 1, 1, true, false},
	{2, 160, 1040, 3, 5, 1, 1, 0, 1, true, true},
	{1, 3, 32, 30, 31, 3, 2, 1, 1, false, true},
	{2, 3, 48, 13, 17, 3, 1, 1, 1, false, false},
	{1, 1, 16, 9, 26, 5, 1, 2, 1, false, true},
	{1, 2, 80, 11, 8, 3, 1, 2, 2, false, true},
	{1, 3, 64, 23, 20, 7, 2, 3, 1, false, true},
}

// TestConvBlockedMatchesOracle runs blockedCases through Enqueue on every
// path (the blocked convolution on AVX-512, NCHW elsewhere) against the
// float64 loop, each twice: from an NCHW image and residual (converted
// into scratch), then with the image and the residual the outputs of
// blocked convolutions, read blocked; Download returns NCHW. On AVX-512
// the output tensor must be blocked after the node.
func TestConvBlockedMatchesOracle(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 11))
		for _, bc := range blockedCases {
			c := bc.conv()
			be := New(2)
			vals, ins, outShape := blockedInputs(t, be, rng, c)
			wantOut := blockedOracle(c, vals)
			out := be.testTensor(t, outShape, nil)
			if err := be.Enqueue(c, ins, []bench.Tensor{out}); err != nil {
				t.Fatal(err)
			}
			blockedWant := be.useBlocked(c, false)
			if out.blocked != blockedWant {
				t.Fatalf("%+v: output blocked %v, want %v", bc, out.blocked, blockedWant)
			}
			got := make([]float32, len(out.data))
			if err := be.Download(out, got); err != nil {
				t.Fatal(err)
			}
			checkClose(t, fmt.Sprintf("%+v from NCHW", bc), got, wantOut)

			// The same node with its image (and residual) produced blocked
			// by an identity convolution: 1×1, BN scale 1, zero shift.
			idIn := identityConv(t, be, ins[0].(*tensor))
			ins2 := append([]bench.Tensor{idIn}, ins[1:]...)
			if c.Residual {
				ins2[len(ins2)-1] = identityConv(t, be, ins[len(ins)-1].(*tensor))
			}
			out2 := be.testTensor(t, outShape, nil)
			if err := be.Enqueue(c, ins2, []bench.Tensor{out2}); err != nil {
				t.Fatal(err)
			}
			if err := be.Download(out2, got); err != nil {
				t.Fatal(err)
			}
			checkClose(t, fmt.Sprintf("%+v from blocked", bc), got, wantOut)
		}
	})
}

// blockedInputs returns random values for the inputs of conv c (the BN
// variance in [0.5, 2], the rest in [−1, 1]), those values as tensors of
// be in node order, and the output's shape.
func blockedInputs(t *testing.T, be *Backend, rng *rand.Rand, c ops.Conv2d) ([][]float32, []bench.Tensor, bench.Shape) {
	t.Helper()
	shapes, outShape := convShapes(c)
	vals := make([][]float32, len(shapes))
	ins := make([]bench.Tensor, len(shapes))
	for i, s := range shapes {
		lo, hi := float32(-1), float32(1)
		if i == 5 { // the BN variance
			lo, hi = 0.5, 2
		}
		vals[i] = randSlice(rng, int(s.Elems()), lo, hi)
		ins[i] = be.testTensor(t, s, vals[i])
	}
	return vals, ins, outShape
}

// identityConv returns x passed through a 1×1 convolution with BatchNorm
// whose weight is the identity: x's values, in the blocked layout where
// that path runs.
func identityConv(t *testing.T, be *Backend, x *tensor) *tensor {
	t.Helper()
	ch := int(x.shape[1])
	c := ops.Conv2d{Unfold: ops.Unfold{Batch: int(x.shape[0]), InChans: ch, Height: int(x.shape[2]), Width: int(x.shape[3]),
		KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1}, OutChans: ch, BN: true, BNEps: 0}
	w := make([]float32, ch*ch)
	for i := 0; i < ch; i++ {
		w[i*ch+i] = 1
	}
	ones, zeros := make([]float32, ch), make([]float32, ch)
	for i := range ones {
		ones[i] = 1
	}
	ins := []bench.Tensor{x, be.testTensor(t, bench.Shape{ch, ch, 1, 1}, w), be.testTensor(t, bench.Shape{ch}, ones),
		be.testTensor(t, bench.Shape{ch}, zeros), be.testTensor(t, bench.Shape{ch}, zeros), be.testTensor(t, bench.Shape{ch}, ones)}
	out := be.testTensor(t, x.shape, nil)
	if err := be.Enqueue(c, ins, []bench.Tensor{out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// blockedOracle is conv c (BN folded in float64) from the values of its
// inputs in node order.
func blockedOracle(c ops.Conv2d, vals [][]float32) []float64 {
	return blockedOracleRounded(c, vals, nil)
}

// blockedOracleRounded is blockedOracle with the image and the folded
// weight first passed through round (nil: as they are): cpu-bf16's
// products, kern.RoundToBF16.
func blockedOracleRounded(c ops.Conv2d, vals [][]float32, round func(dst, src []float32)) []float64 {
	x, w := vals[0], vals[1]
	bn := vals[2:6]
	k := c.Cols()
	wf := make([]float32, len(w))
	bias := make([]float32, c.OutChans)
	for o := 0; o < c.OutChans; o++ {
		s := float64(bn[0][o]) / math.Sqrt(float64(bn[3][o])+c.BNEps)
		for j := 0; j < k; j++ {
			wf[o*k+j] = float32(float64(w[o*k+j]) * s)
		}
		bias[o] = float32(-float64(bn[2][o])*s + float64(bn[1][o]))
	}
	if round != nil {
		x = slices.Clone(x)
		round(x, x)
		round(wf, wf)
	}
	want := convOracle(c, x, wf, bias)
	if c.Residual {
		for i, r := range vals[len(vals)-1] {
			want[i] += float64(r)
		}
	}
	if c.ReLU {
		for i := range want {
			want[i] = max(want[i], 0)
		}
	}
	return want
}

// TestAvgPoolBlocked pools the blocked output of a convolution 2×2 on
// even and odd sizes (the last row and column dropped) and a batch of
// two, and a 3×3 pool the blocked path does not take (its image goes
// back to NCHW first): the same values as the NCHW pool of the same
// image, bit for bit, and a blocked output exactly when the input was.
func TestAvgPoolBlocked(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 5))
		for _, pc := range []struct{ batch, ch, h, w, k int }{{1, 32, 8, 8, 2}, {2, 16, 7, 9, 2}, {1, 48, 14, 14, 2}, {1, 16, 9, 9, 3}} {
			be := New(2)
			shape := bench.Shape{pc.batch, pc.ch, pc.h, pc.w}
			x := randSlice(rng, int(shape.Elems()), -1, 1)
			a := ops.AvgPool2d{Batch: pc.batch, Chans: pc.ch, Height: pc.h, Width: pc.w, KH: pc.k, KW: pc.k, SH: 2, SW: 2, CountIncludePad: true}
			outShape := bench.Shape{pc.batch, pc.ch, a.OutH(), a.OutW()}
			plain := be.testTensor(t, outShape, nil)
			if err := be.Enqueue(a, []bench.Tensor{be.testTensor(t, shape, x)}, []bench.Tensor{plain}); err != nil {
				t.Fatal(err)
			}
			src := identityConv(t, be, be.testTensor(t, shape, x))
			wasBlocked := src.blocked
			got := be.testTensor(t, outShape, nil)
			if err := be.Enqueue(a, []bench.Tensor{src}, []bench.Tensor{got}); err != nil {
				t.Fatal(err)
			}
			if got.blocked != (wasBlocked && pc.k == 2) {
				t.Fatalf("%+v: output blocked %v from an input blocked %v", pc, got.blocked, wasBlocked)
			}
			g := make([]float32, len(got.data))
			if err := be.Download(got, g); err != nil {
				t.Fatal(err)
			}
			for i := range g {
				if g[i] != plain.data[i] {
					t.Fatalf("%+v: value %d: %v, NCHW pool %v", pc, i, g[i], plain.data[i])
				}
			}
		}
	})
}

// blockInPlace turns t's NCHW data into the blocked layout in place.
func (b *Backend) blockInPlace(t *tensor) {
	n, c, hw := blockedDims(t.shape)
	tmp := make([]float32, len(t.data))
	b.toBlocked(n, c, hw, t.data, tmp)
	copy(t.data, tmp)
	t.blocked = true
}

// TestEvenTile: the tiles of n pixels cover them exactly, in as few tiles
// of at most six as fit, no two sizes more than one apart.
func TestEvenTile(t *testing.T) {
	for n := 1; n < 200; n++ {
		sum, lo, hi, k := 0, 7, 0, 0
		for ; sum < n; k++ {
			s := evenTile(n, 6, k)
			sum, lo, hi = sum+s, min(lo, s), max(hi, s)
		}
		if sum != n || k != ceilDiv(n, 6) || hi > 6 || hi-lo > 1 {
			t.Fatalf("%d pixels: %d tiles summing to %d, sizes %d to %d", n, k, sum, lo, hi)
		}
	}
}

// TestConvBlockedWinograd runs 3×3 convolutions through the blocked
// Winograd path against the float64 loop: even and odd sizes (tiles past
// the last row and column), maps of one to three pixels a side (every
// window crossing the edge), a residual with and without ReLU, output
// blocks in groups with one to three left over, batches of two and
// three, each with the chunks as large as they come and with one tile
// row per chunk (chunks crossing images).
func TestConvBlockedWinograd(t *testing.T) {
	cases := []blockedCase{
		{1, 32, 64, 7, 7, 3, 1, 1, 1, true, true},
		{2, 16, 80, 14, 13, 3, 1, 1, 1, false, true},
		{1, 48, 48, 1, 1, 3, 1, 1, 1, false, false},
		{3, 16, 32, 2, 3, 3, 1, 1, 1, true, false},
		{1, 32, 16, 3, 2, 3, 1, 1, 1, true, true},
		{2, 64, 96, 9, 11, 3, 1, 1, 1, true, true},
		{1, 16, 16, 12, 12, 3, 1, 1, 1, false, true},
	}
	for _, mode := range []string{"blockedwino", "blockedwino,winochunk1"} {
		t.Run(mode, func(t *testing.T) {
			defer func(p string) { convPath = p }(convPath)
			convPath = mode
			forEachPath(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(5, 6))
				for _, bc := range cases {
					c := bc.conv()
					be := New(2)
					vals, ins, outShape := blockedInputs(t, be, rng, c)
					blocked, got := runNode(t, be, c, ins, outShape)
					if blocked != be.useBlocked(c, false) {
						t.Fatalf("%+v: output blocked %v", bc, blocked)
					}
					if f := ins[1].(*tensor).folded; blocked && (f == nil || f.mode() != convBlockedWinograd) {
						t.Fatalf("%+v: not the blocked Winograd convolution", bc)
					}
					checkClose(t, fmt.Sprintf("%s %+v", mode, bc), got, blockedOracle(c, vals))
				}
			})
		})
	}
}

// TestBlockedPixelMajor: a blocked convolution with a weight of at most
// pixelMajorWeightBytes numbers its tasks part, then group, in at least
// one part per worker, so that the first half of the tasks is the first
// half of the output rows in every group, on either backend (cpu-bf16's
// pairs too); a larger weight keeps group, then part.
func TestBlockedPixelMajor(t *testing.T) {
	for _, tc := range []struct {
		bc    blockedCase
		pairs bool
		want  bool
	}{
		{blockedCase{1, 128, 512, 28, 28, 1, 1, 0, 1, true, true}, false, true},   // 256 KB
		{blockedCase{1, 128, 128, 28, 28, 3, 1, 1, 1, false, true}, false, true},  // 590 KB
		{blockedCase{1, 256, 1024, 14, 14, 1, 1, 0, 1, true, true}, false, false}, // 1 MiB
		{blockedCase{1, 128, 512, 28, 28, 1, 1, 0, 1, true, true}, true, true},    // bf16 pairs
		{blockedCase{1, 256, 1024, 14, 14, 1, 1, 0, 1, true, true}, true, false},  // bf16 pairs, 1 MiB
	} {
		c := tc.bc.conv()
		bw := blockedConvWeight(c, make([]float32, c.OutChans*c.InChans*c.KernelH*c.KernelW), make([]float32, c.OutChans))
		if tc.pairs {
			bw.roundPairs(c.OutChans / 16)
		}
		p := bw.planFor(c, 2)
		if p.pixelMajor != tc.want {
			t.Errorf("%+v (pairs %v): pixelMajor %v, want %v", tc.bc, tc.pairs, p.pixelMajor, tc.want)
		}
		if parts := len(p.partStart) - 1; p.pixelMajor && parts < 2 {
			t.Errorf("%+v: %d parts for two workers", tc.bc, parts)
		}
	}
}

// TestBlockedNCHWRule: on the float32 backend's AVX-512 path a
// convolution with BatchNorm of an NCHW image of a few channels runs
// blocked (kern.ConvNCHWTile) when its window holds at most
// nchwTileMaxCols values and it adds no residual: CLIP RN50's stem and
// the ResNet-50 one (147 values), not 5 channels by 7×7 (245); never on
// cpu-bf16, nor without BatchNorm (VQGAN's first convolution).
func TestBlockedNCHWRule(t *testing.T) {
	if kern.Active() != kern.ISAAVX512 || mutation.Enabled {
		t.Skip("the blocked layout runs on the AVX-512 path, without mutations")
	}
	stem := blockedCase{1, 3, 32, 224, 224, 3, 2, 1, 1, false, true}.conv()
	resnet := blockedCase{1, 3, 64, 224, 224, 7, 2, 3, 1, false, true}.conv()
	wide := blockedCase{1, 5, 64, 224, 224, 7, 2, 3, 1, false, true}.conv()
	withRes := stem
	withRes.Residual = true
	noBN := stem
	noBN.BN = false
	f32, bf16 := New(2), NewBF16(2)
	for _, c := range []struct {
		what    string
		be      *Backend
		c       ops.Conv2d
		blocked bool
		want    bool
	}{
		{"CLIP RN50 stem", f32, stem, false, true},
		{"ResNet-50 stem", f32, resnet, false, true},
		{"5 channels by 7×7", f32, wide, false, false},
		{"with a residual", f32, withRes, false, false},
		{"without BatchNorm", f32, noBN, false, false},
		{"on cpu-bf16", bf16, stem, false, false},
	} {
		if got := c.be.useBlocked(c.c, c.blocked); got != c.want {
			t.Errorf("%s: useBlocked %v, want %v", c.what, got, c.want)
		}
	}
	if !blockedNCHWInput(stem) || blockedNCHWInput(blockedCase{1, 16, 32, 8, 8, 3, 1, 1, 1, false, true}.conv()) {
		t.Error("blockedNCHWInput: want true for 3 channels, false for 16")
	}
}
