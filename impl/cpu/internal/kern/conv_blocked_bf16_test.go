package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// nanPairs is a pair of bf16 NaNs: what x and w of a bf16 tile hold
// wherever the plain loop does not read.
const nanPairs = 0x7fc07fc0

// convBlockedBF16Case is one call of ConvBlockedTileBF16: the float32
// case's outputs, bias and residual, with x and w as bf16 pairs at even
// offsets (in floats of the float32 layout, halved to index the pairs).
type convBlockedBF16Case struct {
	*convBlockedCase
	xp, wp []uint32
}

// newConvBlockedBF16Case draws a tile as newConvBlockedCase does, its
// image and weight random bf16 pairs and NaN pairs everywhere else.
func newConvBlockedBF16Case(rng *rand.Rand, nb, np, ntaps, cib, pixStride int) *convBlockedBF16Case {
	const half = BlockLanes / 2
	k := &convBlockedBF16Case{convBlockedCase: newConvBlockedCase(rng, nb, np, ntaps, cib, pixStride, true)}
	k.xBlock = 2 * ((np-1)*pixStride/2 + half + 8*rng.IntN(3) + rng.IntN(5)) // even, in floats
	wBlock := cib * half * nb * BlockLanes                                   // pairs per tap
	xMax, wMax := 0, 0
	for t := 0; t < ntaps; t++ {
		xo, wo := 2*rng.IntN(200), 2*(t*(wBlock+50)+rng.IntN(50))
		if t%3 == 2 {
			wo = 2 * rng.IntN(ntaps*wBlock) // overlapping other taps' weights
		}
		k.taps[2*t], k.taps[2*t+1] = xo, wo
		xMax, wMax = max(xMax, xo), max(wMax, wo)
	}
	k.xp = make([]uint32, (xMax+(cib-1)*k.xBlock+(np-1)*pixStride)/2+half+7)
	k.wp = make([]uint32, wMax/2+wBlock+9)
	for i := range k.xp {
		k.xp[i] = nanPairs
	}
	for i := range k.wp {
		k.wp[i] = nanPairs
	}
	draw := func() uint32 { return pairBF16(rng.Float32()*2-1, rng.Float32()*2-1) }
	for t := 0; t < ntaps; t++ {
		xt, wt := k.taps[2*t]/2, k.taps[2*t+1]/2
		for cb := 0; cb < cib; cb++ {
			for p := 0; p < np; p++ {
				for q := 0; q < half; q++ {
					k.xp[xt+(cb*k.xBlock+p*pixStride)/2+q] = draw()
				}
			}
			for i := 0; i < half*nb*BlockLanes; i++ {
				k.wp[wt+cb*half*nb*BlockLanes+i] = draw()
			}
		}
	}
	return k
}

// plain is output o (block j, lane pl of the tile) by the definition, in
// float64 from the bf16 values, with its scale (Σ of the magnitudes that
// make it).
func (k *convBlockedBF16Case) plain(o, j, pl int, res float32, flags int) (v, scale float64) {
	const half = BlockLanes / 2
	p, l := pl/BlockLanes, pl%BlockLanes
	add := func(x float64) { v += x; scale += math.Abs(x) }
	if flags&ConvAccumulate != 0 {
		add(float64(k.out[o]))
	}
	for t := 0; t < k.ntaps; t++ {
		xt, wt := k.taps[2*t]/2, k.taps[2*t+1]/2
		for cb := 0; cb < k.cib; cb++ {
			for q := 0; q < half; q++ {
				x := k.xp[xt+(cb*k.xBlock+p*k.pixStride)/2+q]
				w := k.wp[wt+(cb*half+q)*k.nb*BlockLanes+j*BlockLanes+l]
				for s := 0; s < 32; s += 16 {
					add(float64(BF16ToFloat32(uint16(x>>s))) * float64(BF16ToFloat32(uint16(w>>s))))
				}
			}
		}
	}
	if flags&ConvBias != 0 {
		add(float64(k.bias[j*BlockLanes+l]))
	}
	if flags&ConvResidual != 0 {
		add(float64(res))
	}
	if flags&ConvReLU != 0 {
		v = max(v, 0)
	}
	return v, scale
}

// TestConvBlockedTileBF16 checks every bf16 tile bit for bit against the
// Go twin on every path (the twin chains dpbf16, as VDPBF16PS does), and
// both against the plain sum in float64 to 1e-5 of the magnitudes: one
// and nine taps at even offsets, one and three input blocks, pixel
// strides of 16 and 32 floats, every combination of the flags, the
// residual also aliasing out. Outputs outside the tile must keep the
// sentinel; a pair read at a wrong offset is a NaN.
func TestConvBlockedTileBF16(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(27, 28))
		eachBlockedTile(func(int) int { return ConvBlockedMaxPixels }, func(nb, np, ntaps, cib, ps int) {
			k := newConvBlockedBF16Case(rng, nb, np, ntaps, cib, ps)
			k.eachFlags(func(what string, flags int, alias bool) { k.runCheck(t, what, flags, alias) })
		})
	})
}

// runCheck runs the tile and its twin on copies of out and checks them.
func (k *convBlockedBF16Case) runCheck(t *testing.T, what string, flags int, alias bool) {
	t.Helper()
	got, want := append([]float32(nil), k.out...), append([]float32(nil), k.out...)
	res, wres := k.res, k.res
	if alias {
		res, wres = got, want
	}
	bias := k.bias
	if flags&ConvBias == 0 {
		bias = nil
	}
	if flags&ConvResidual == 0 {
		res, wres = nil, nil
	}
	ConvBlockedTileBF16(k.nb, k.np, k.xp, k.taps, k.ntaps, k.cib, k.xBlock, k.pixStride, k.wp, bias, res, got, k.outStride, k.outPix, flags)
	convBlockedBF16Go(k.nb, k.np, k.xp, k.taps, k.ntaps, k.cib, k.xBlock, k.pixStride, k.wp, bias, wres, want, k.outStride, k.outPix, flags)
	k.checkOutputs(t, what, got, alias, func(o, j, pl int, res float32) string {
		v, scale := k.plain(o, j, pl, res, flags)
		if math.Float32bits(got[o]) != math.Float32bits(want[o]) || math.Abs(float64(got[o])-v) > 1e-5*scale {
			return fmt.Sprintf("twin %v, plain %v", want[o], v)
		}
		return ""
	})
}

// TestBlockedPairs checks the weight's rounding into pairs on a weight
// of five output blocks (groups of four and one) and two taps of one
// input block: pair i of a group row is rows 2i and 2i+1 of the group.
func TestBlockedPairs(t *testing.T) {
	const blocks, rowsPerGroup = 5, 2 * BlockLanes // two taps × 16 channels
	starts := []int{0, rowsPerGroup * 4 * BlockLanes}
	starts = append(starts, starts[1]+rowsPerGroup*BlockLanes)
	w := make([]float32, starts[2])
	for i := range w {
		w[i] = float32(i) + 0.25 // distinct, exact after rounding only where small
	}
	got := BlockedPairs(w, starts, blocks)
	if len(got) != len(w)/2 {
		t.Fatalf("%d pairs, want %d", len(got), len(w)/2)
	}
	for g, n := range []int{4 * BlockLanes, BlockLanes} {
		s := starts[g]
		for i := 0; i < rowsPerGroup/2; i++ {
			for j := 0; j < n; j++ {
				want := pairBF16(w[s+2*i*n+j], w[s+(2*i+1)*n+j])
				if p := got[s/2+i*n+j]; p != want {
					t.Fatalf("group %d pair row %d lane %d: %#x, want %#x", g, i, j, p, want)
				}
			}
		}
	}
}
