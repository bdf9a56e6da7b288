package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestConvBlockedBF16MatchesOracle runs blockedCases on cpu-bf16, whose
// blocked convolutions (on the AVX-512 path of a CPU with AVX512_BF16)
// run kern.ConvBlockedTileBF16, against the float64 loop of the image
// and folded weight rounded to bf16: from NCHW inputs, then from images
// and residuals left blocked by an identity convolution (which rounds
// them to bf16: the oracle's residual is rounded too). The output must be
// blocked where useBlocked says, and the sums agree to float32 rounding.
// On a CPU with AMX, where cpu-bf16 keeps no blocked layout (its products
// run on AMX tiles), the test turns AMX off to reach those convolutions.
func TestConvBlockedBF16MatchesOracle(t *testing.T) {
	if !kern.HasBF16() {
		t.Skip("no AVX512_BF16: cpu-bf16 runs no blocked convolution here")
	}
	defer kern.SetAMX(kern.SetAMX(false))
	rng := rand.New(rand.NewPCG(7, 12))
	for _, bc := range blockedCases {
		c := bc.conv()
		if blockedNCHWInput(c) {
			continue // cpu-bf16 runs convolutions of NCHW images on its NCHW paths
		}
		be := NewBF16(2)
		vals, ins, outShape := blockedInputs(t, be, rng, c)
		out := be.testTensor(t, outShape, nil)
		if err := be.Enqueue(c, ins, []bench.Tensor{out}); err != nil {
			t.Fatal(err)
		}
		if want := be.useBlocked(c, false); out.blocked != want || !want {
			t.Fatalf("%+v: output blocked %v, useBlocked %v", bc, out.blocked, want)
		}
		got := make([]float32, len(out.data))
		if err := be.Download(out, got); err != nil {
			t.Fatal(err)
		}
		checkClose(t, fmt.Sprintf("%+v from NCHW", bc), got, blockedOracleRounded(c, vals, kern.RoundToBF16))

		ins2 := append([]bench.Tensor{identityConv(t, be, ins[0].(*tensor))}, ins[1:]...)
		vals2 := slices.Clone(vals)
		if c.Residual {
			ins2[len(ins2)-1] = identityConv(t, be, ins[len(ins)-1].(*tensor))
			r := slices.Clone(vals[len(vals)-1])
			kern.RoundToBF16(r, r)
			vals2[len(vals2)-1] = r
		}
		out2 := be.testTensor(t, outShape, nil)
		if err := be.Enqueue(c, ins2, []bench.Tensor{out2}); err != nil {
			t.Fatal(err)
		}
		if err := be.Download(out2, got); err != nil {
			t.Fatal(err)
		}
		checkClose(t, fmt.Sprintf("%+v from blocked", bc), got, blockedOracleRounded(c, vals2, kern.RoundToBF16))
	}
}

// TestPatchEmbedBlocked embeds the patches of a blocked image (an
// identity convolution's output: VOLO's stem leaves one) on cpu and
// cpu-bf16, batches of one and two, with and without a bias, against the
// float64 loop of the same convolution (kernel and stride the patch),
// rounded to bf16 on cpu-bf16; the image must have come blocked where the
// backend keeps that layout (not cpu-bf16 on AMX), and the tokens come out
// token-major.
func TestPatchEmbedBlocked(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 13))
	for _, bf16 := range []bool{false, true} {
		for _, n := range []ops.PatchEmbed{
			{Batch: 1, InChans: 32, Height: 12, Width: 16, EmbedDim: 80, PatchH: 4, PatchW: 4, Bias: true},
			{Batch: 2, InChans: 16, Height: 10, Width: 6, EmbedDim: 48, PatchH: 2, PatchW: 3},
		} {
			be := New(2)
			if bf16 {
				if !kern.HasBF16() {
					continue
				}
				be = NewBF16(2)
			}
			img := bench.Shape{n.Batch, n.InChans, n.Height, n.Width}
			x := randSlice(rng, int(img.Elems()), -1, 1)
			w := randSlice(rng, n.EmbedDim*n.InChans*n.PatchH*n.PatchW, -1, 1)
			bias := make([]float32, n.EmbedDim)
			src := identityConv(t, be, be.testTensor(t, img, x))
			// cpu keeps the blocked layout on AVX-512; cpu-bf16 there too,
			// unless its products run on AMX tiles.
			if src.blocked != be.blockedLayout() || !src.blocked && kern.Active() == kern.ISAAVX512 && !(bf16 && kern.BF16OnAMX()) {
				t.Fatalf("bf16 %v: identity convolution's output blocked %v", bf16, src.blocked)
			}
			ins := []bench.Tensor{src, be.testTensor(t, bench.Shape{n.EmbedDim, n.InChans, n.PatchH, n.PatchW}, w)}
			if n.Bias {
				bias = randSlice(rng, n.EmbedDim, -1, 1)
				ins = append(ins, be.testTensor(t, bench.Shape{n.EmbedDim}, bias))
			}
			hw := n.GridH() * n.GridW()
			_, got := runNode(t, be, n, ins, bench.Shape{n.Batch, hw, n.EmbedDim})
			if bf16 {
				x, w = slices.Clone(x), slices.Clone(w)
				kern.RoundToBF16(x, x) // the identity convolution's rounding, then the product's
				kern.RoundToBF16(w, w)
			}
			c := ops.Conv2d{Unfold: ops.Unfold{Batch: n.Batch, InChans: n.InChans, Height: n.Height, Width: n.Width,
				KernelH: n.PatchH, KernelW: n.PatchW, StrideH: n.PatchH, StrideW: n.PatchW, DilationH: 1, DilationW: 1},
				OutChans: n.EmbedDim}
			maps := convOracle(c, x, w, bias)
			want := make([]float64, len(maps))
			for i := range n.Batch {
				for e := range n.EmbedDim {
					for p := range hw {
						want[(i*hw+p)*n.EmbedDim+e] = maps[(i*n.EmbedDim+e)*hw+p]
					}
				}
			}
			checkClose(t, fmt.Sprintf("bf16 %v %+v", bf16, n), got, want)
		}
	}
}
