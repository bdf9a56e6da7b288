package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// TestConvInPlace: a convolution whose output is its residual's tensor (as
// a program binds it where InPlace allows) computes the same bits as with
// an output of its own, on every path of both backends, its residual NCHW
// or blocked: 1×1 tiles that take their input blocks in one pass (summed
// in place), a 1×1 whose 32 input blocks go in two passes, a 3×3 on
// blocked tiles and one forced to blocked Winograd (those three on a copy
// of the residual), and the NCHW paths elsewhere (a copy too).
func TestConvInPlace(t *testing.T) {
	conv := func(cin, cout, h, w, k int) ops.Conv2d {
		return ops.Conv2d{Unfold: ops.Unfold{Batch: 2, InChans: cin, Height: h, Width: w, KernelH: k, KernelW: k, StrideH: 1, StrideW: 1,
			PadH: k / 2, PadW: k / 2, DilationH: 1, DilationW: 1}, OutChans: cout, BN: true, BNEps: 1e-5, ReLU: true, Residual: true}
	}
	cases := []struct {
		c    ops.Conv2d
		path string // convPath while it runs
	}{
		{conv(64, 128, 7, 9, 1), ""},
		{conv(512, 64, 5, 3, 1), ""},
		{conv(32, 48, 6, 7, 3), "noblockedwino"},
		{conv(32, 48, 6, 7, 3), "blockedwino"},
	}
	defer func(p string) { convPath = p }(convPath)
	forEachPath(t, func(t *testing.T) {
		for _, bf16 := range []bool{false, true} {
			if bf16 && !kern.HasBF16() {
				continue
			}
			rng := rand.New(rand.NewPCG(3, 4))
			for _, tc := range cases {
				convPath = tc.path
				be := New(2)
				if bf16 {
					be = NewBF16(2)
				}
				_, ins, outShape := blockedInputs(t, be, rng, tc.c)
				res := ins[len(ins)-1].(*tensor)
				for _, blocked := range []bool{false, true} {
					// Two residual tensors of the same values, in NCHW or as
					// blocked convolutions leave them.
					r1, r2 := be.testTensor(t, outShape, res.data), be.testTensor(t, outShape, res.data)
					if blocked {
						r1, r2 = identityConv(t, be, res), identityConv(t, be, res)
					}
					own := be.testTensor(t, outShape, nil)
					if err := be.Enqueue(tc.c, append(slices.Clone(ins[:len(ins)-1]), r1), []bench.Tensor{own}); err != nil {
						t.Fatal(err)
					}
					if err := be.Enqueue(tc.c, append(slices.Clone(ins[:len(ins)-1]), r2), []bench.Tensor{r2}); err != nil {
						t.Fatal(err)
					}
					want, got := make([]float32, len(own.data)), make([]float32, len(own.data))
					if err := be.Download(own, want); err != nil {
						t.Fatal(err)
					}
					if err := be.Download(r2, got); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Errorf("bf16 %v, %d→%d k%d %q, residual blocked %v: the output over its residual differs from its own output",
							bf16, tc.c.InChans, tc.c.OutChans, tc.c.KernelH, tc.path, blocked)
					}
				}
			}
		}
	})
}

// TestConvInPlaceOffer: where convolutions run blocked, InPlace offers the
// residual (ResidualInput) of a BN convolution whose tiles take their
// input blocks in one pass, and nothing for one that takes two, for a
// node without a residual, or for an output other than the first.
func TestConvInPlaceOffer(t *testing.T) {
	conv := func(cin, cout int, res bool) ops.Conv2d {
		return ops.Conv2d{Unfold: ops.Unfold{Batch: 1, InChans: cin, Height: 7, Width: 7, KernelH: 1, KernelW: 1, StrideH: 1, StrideW: 1,
			DilationH: 1, DilationW: 1}, OutChans: cout, BN: true, BNEps: 1e-5, ReLU: true, Residual: res}
	}
	for _, be := range []*Backend{New(2), NewBF16(2)} {
		one := conv(64, 256, true)
		if !be.useBlocked(one, false) {
			continue // NCHW here: nothing is offered (InPlace's first rule)
		}
		if got := be.InPlace(one, 0); got != one.ResidualInput() || got != 6 {
			t.Errorf("bf16 %v: InPlace(64→256 with residual) = %d, want %d", be.bf16, got, one.ResidualInput())
		}
		for what, tc := range map[string]struct {
			c   ops.Conv2d
			out int
		}{"two passes": {conv(512, 2048, true), 0}, "no residual": {conv(64, 256, false), 0}, "second output": {one, 1}} {
			if got := be.InPlace(tc.c, tc.out); got != -1 {
				t.Errorf("bf16 %v, %s: InPlace = %d, want -1", be.bf16, what, got)
			}
		}
	}
}
