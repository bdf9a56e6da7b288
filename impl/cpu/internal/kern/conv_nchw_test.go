package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// convNCHWCase is one call of ConvNCHWTile with its operands; every value
// of x and w the plain loop does not read is NaN, so a kernel that reads
// a wrong offset turns its outputs into NaN.
type convNCHWCase struct {
	convBlockedCase     // nb, np, ntaps, taps, outStride, outPix, the weight and epilogue operands
	cin, chanStride int // input channels, a channel's stride in floats
}

// newConvNCHWCase draws a tile of ConvNCHWTile as newConvBlockedCase
// draws one of ConvBlockedTile: taps at arbitrary, overlapping offsets,
// channel planes chanStride apart, output strides wider than the tile.
func newConvNCHWCase(rng *rand.Rand, nb, np, ntaps, cin, pixStride int) *convNCHWCase {
	k := &convNCHWCase{cin: cin}
	k.nb, k.np, k.ntaps, k.pixStride = nb, np, ntaps, pixStride
	k.chanStride = (np-1)*pixStride + 1 + 300 + rng.IntN(40)
	k.outPix = BlockLanes
	if rng.IntN(2) == 1 {
		k.outPix += 16*rng.IntN(3) + 1 + rng.IntN(3)
	}
	k.outStride = (np-1)*k.outPix + BlockLanes + 1 + rng.IntN(40)
	wTap := cin * nb * BlockLanes
	xMax, wMax := 0, 0
	for t := 0; t < ntaps; t++ {
		xo, wo := rng.IntN(300), t*(wTap+7)+rng.IntN(7)
		k.taps = append(k.taps, xo, wo)
		xMax, wMax = max(xMax, xo), max(wMax, wo)
	}
	k.x = nanSlice(xMax + (cin-1)*k.chanStride + (np-1)*pixStride + 5)
	k.w = nanSlice(wMax + wTap + 9)
	for t := 0; t < ntaps; t++ {
		xt, wt := k.taps[2*t], k.taps[2*t+1]
		for ch := 0; ch < cin; ch++ {
			for p := 0; p < np; p++ {
				k.x[xt+ch*k.chanStride+p*pixStride] = rng.Float32()*2 - 1
			}
			for i := 0; i < nb*BlockLanes; i++ {
				k.w[wt+ch*nb*BlockLanes+i] = rng.Float32()*2 - 1
			}
		}
	}
	k.drawEpilogue(rng)
	return k
}

// want is the plain loop of ConvNCHWTile in float64 at output o of block
// j, lane l + 16·p.
func (k *convNCHWCase) want(j, pl int, old, res float32, flags int) (v, scale float64) {
	p, l := pl/BlockLanes, pl%BlockLanes
	for t := 0; t < k.ntaps; t++ {
		for ch := 0; ch < k.cin; ch++ {
			x := float64(k.x[k.taps[2*t]+ch*k.chanStride+p*k.pixStride])
			w := float64(k.w[k.taps[2*t+1]+ch*k.nb*BlockLanes+j*BlockLanes+l])
			v += x * w
			scale += math.Abs(x * w)
		}
	}
	if flags&ConvAccumulate != 0 {
		v += float64(old)
		scale += math.Abs(float64(old))
	}
	if flags&ConvBias != 0 {
		v += float64(k.bias[j*BlockLanes+l])
		scale += math.Abs(float64(k.bias[j*BlockLanes+l]))
	}
	if flags&ConvResidual != 0 {
		v += float64(res)
		scale += math.Abs(float64(res))
	}
	if flags&ConvReLU != 0 {
		v = max(v, 0)
	}
	return v, scale
}

// TestConvNCHWTile checks every tile of ConvNCHWTile on every path (the
// Go twin and the AVX-512 kernels) against the plain loop in float64:
// every nb and np up to ConvTilePixels(nb), one and nine taps at
// arbitrary offsets, one and three input channels, pixel strides of 1
// and 2 (a stride-2 convolution's row), all sixteen combinations of the
// flags (the residual also aliasing out). Outputs may differ by 1e-5 of
// the magnitudes that make them; outputs outside the tile must keep the
// sentinel.
func TestConvNCHWTile(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(31, 32))
		for nb := 1; nb <= ConvBlockedMaxBlocks; nb++ {
			for np := 1; np <= ConvTilePixels(nb); np++ {
				for _, ntaps := range []int{1, 9} {
					for _, cin := range []int{1, 3} {
						for _, ps := range []int{1, 2} {
							k := newConvNCHWCase(rng, nb, np, ntaps, cin, ps)
							k.eachFlags(func(what string, flags int, alias bool) {
								k.check(t, fmt.Sprintf("%s cin %d", what, cin), flags, alias)
							})
						}
					}
				}
			}
		}
	})
}

// check runs the tile with flags (alias: res = out) and compares it with
// the plain loop in the tile and the sentinel outside it.
func (k *convNCHWCase) check(t *testing.T, what string, flags int, alias bool) {
	t.Helper()
	got := append([]float32(nil), k.out...)
	res, bias := k.res, k.bias
	if alias {
		res = got
	}
	if flags&ConvResidual == 0 {
		res = nil
	}
	if flags&ConvBias == 0 {
		bias = nil
	}
	ConvNCHWTile(k.nb, k.np, k.x, k.taps, k.ntaps, k.cin, k.chanStride, k.pixStride, k.w, bias, res, got,
		k.outStride, k.outPix, flags)
	k.checkOutputs(t, what, got, alias, func(o, j, pl int, res float32) string {
		w, scale := k.want(j, pl, k.out[o], res, flags)
		if g := float64(got[o]); math.IsNaN(g) || math.Abs(g-w) > 1e-5*scale+1e-30 {
			return fmt.Sprintf("want %v", w)
		}
		return ""
	})
}
