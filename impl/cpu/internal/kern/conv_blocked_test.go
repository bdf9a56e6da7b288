package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// convBlockedCase is one call of ConvBlockedTile with its operands. Every
// value of x and w that the plain loop does not read is NaN, so a kernel
// that reads a wrong offset turns its outputs into NaN.
type convBlockedCase struct {
	nb, np, ntaps, cib, xBlock, pixStride, outStride, outPix int
	taps                                                     []int
	x, w, bias, res, out                                     []float32
}

// sentinel fills the output slice outside the tile: no path may write it.
const sentinel = float32(-12345.5)

// newConvBlockedCase draws taps at arbitrary offsets (with share, some
// taps overlap others' inputs and weights; without, no two taps read the
// same value) and operands for one tile; out holds random values in the tile (the old values that
// ConvAccumulate starts from) and the sentinel elsewhere, res the same
// layout with random values.
func newConvBlockedCase(rng *rand.Rand, nb, np, ntaps, cib, pixStride int, share bool) *convBlockedCase {
	k := &convBlockedCase{nb: nb, np: np, ntaps: ntaps, cib: cib, pixStride: pixStride}
	k.xBlock = (np-1)*pixStride + BlockLanes + 16*rng.IntN(3) + rng.IntN(5)
	k.outPix = BlockLanes // along a row; else as down a column
	if rng.IntN(2) == 1 {
		k.outPix += 16*rng.IntN(3) + 1 + rng.IntN(3)
	}
	k.outStride = (np-1)*k.outPix + BlockLanes + 1 + rng.IntN(40)
	wBlock := cib * BlockLanes * nb * BlockLanes
	xMax, wMax := 0, 0
	for t := 0; t < ntaps; t++ {
		xo, wo := rng.IntN(300), t*(wBlock+50)+rng.IntN(50)
		if !share {
			xo = t*((cib-1)*k.xBlock+(np-1)*pixStride+BlockLanes+5) + rng.IntN(5)
		} else if t%3 == 2 {
			wo = rng.IntN(ntaps * wBlock) // overlapping other taps' weights
		}
		k.taps = append(k.taps, xo, wo)
		xMax, wMax = max(xMax, xo), max(wMax, wo)
	}
	k.x = nanSlice(xMax + (cib-1)*k.xBlock + (np-1)*pixStride + BlockLanes + 7)
	k.w = nanSlice(wMax + wBlock + 9)
	for t := 0; t < ntaps; t++ {
		xt, wt := k.taps[2*t], k.taps[2*t+1]
		for cb := 0; cb < cib; cb++ {
			for p := 0; p < np; p++ {
				for c := 0; c < BlockLanes; c++ {
					k.x[xt+cb*k.xBlock+p*pixStride+c] = rng.Float32()*2 - 1
				}
			}
			for i := 0; i < BlockLanes*nb*BlockLanes; i++ {
				k.w[wt+cb*BlockLanes*nb*BlockLanes+i] = rng.Float32()*2 - 1
			}
		}
	}
	k.drawEpilogue(rng)
	return k
}

// drawEpilogue draws the tile's bias, and out and res of its output
// strides: random values in the tile, the sentinel (out) and NaN (res)
// elsewhere.
func (k *convBlockedCase) drawEpilogue(rng *rand.Rand) {
	k.bias = make([]float32, k.nb*BlockLanes)
	for i := range k.bias {
		k.bias[i] = rng.Float32()*2 - 1
	}
	n := (k.nb-1)*k.outStride + (k.np-1)*k.outPix + BlockLanes + 13
	k.out, k.res = make([]float32, n), make([]float32, n)
	for i := range k.out {
		k.out[i] = sentinel
		k.res[i] = float32(math.NaN()) // read only in the tile
	}
	k.eachOutput(func(o, _, _ int) {
		k.out[o] = rng.Float32()*4 - 2
		k.res[o] = rng.Float32()*4 - 2
	})
}

// checkOutputs fails the test where wrong, given each output of the tile
// (o in got, block j, lane pl, and the residual it read: res's value, or
// out's old one when alias), says what is wrong with got[o] ("" when
// nothing), and where got holds anything but the sentinel outside the
// tile.
func (k *convBlockedCase) checkOutputs(t *testing.T, what string, got []float32, alias bool,
	wrong func(o, j, pl int, res float32) string) {
	t.Helper()
	in := make([]bool, len(got))
	k.eachOutput(func(o, j, pl int) {
		in[o] = true
		res := k.res[o]
		if alias {
			res = k.out[o]
		}
		if msg := wrong(o, j, pl, res); msg != "" {
			t.Fatalf("%s: out[%d] (block %d, pixel %d, lane %d) = %v, %s", what, o, j, pl/BlockLanes, pl%BlockLanes, got[o], msg)
		}
	})
	for i, v := range got {
		if !in[i] && v != sentinel {
			t.Fatalf("%s: out[%d] outside the tile written: %v", what, i, v)
		}
	}
}

func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// eachOutput calls f with the index in out of every output of the tile,
// its block and lane l + 16·p.
func (k *convBlockedCase) eachOutput(f func(o, j, pl int)) {
	for j := 0; j < k.nb; j++ {
		for pl := 0; pl < k.np*BlockLanes; pl++ {
			f(j*k.outStride+pl/BlockLanes*k.outPix+pl%BlockLanes, j, pl)
		}
	}
}

// scale is Σ|x·w| over the products that reach the output of block j at
// pixel lane pl, plus the magnitudes of the values added to it.
func (k *convBlockedCase) scale(j, pl int, old, res float32, flags int) float64 {
	p, l := pl/BlockLanes, pl%BlockLanes
	s := 0.0
	for t := 0; t < k.ntaps; t++ {
		for cb := 0; cb < k.cib; cb++ {
			for c := 0; c < BlockLanes; c++ {
				x := k.x[k.taps[2*t]+cb*k.xBlock+p*k.pixStride+c]
				w := k.w[k.taps[2*t+1]+(cb*BlockLanes+c)*k.nb*BlockLanes+j*BlockLanes+l]
				s += math.Abs(float64(x) * float64(w))
			}
		}
	}
	if flags&ConvAccumulate != 0 {
		s += math.Abs(float64(old))
	}
	if flags&ConvBias != 0 {
		s += math.Abs(float64(k.bias[j*BlockLanes+l]))
	}
	if flags&ConvResidual != 0 {
		s += math.Abs(float64(res))
	}
	return s
}

// run calls ConvBlockedTile (aliasRes: with res = out) and the Go twin on
// copies of out and returns both outputs.
func (k *convBlockedCase) run(flags int, aliasRes bool) (got, want []float32) {
	got, want = append([]float32(nil), k.out...), append([]float32(nil), k.out...)
	res, wres := k.res, k.res
	if aliasRes {
		res, wres = got, append([]float32(nil), got...)
	}
	bias := k.bias
	if flags&ConvBias == 0 {
		bias = nil // read only with ConvBias
	}
	if flags&ConvResidual == 0 {
		res, wres = nil, nil
	}
	ConvBlockedTile(k.nb, k.np, k.x, k.taps, k.ntaps, k.cib, k.xBlock, k.pixStride, k.w, bias, res, got, k.outStride, k.outPix, flags,
		tilePrefetch(k.x, flags))
	convBlockedGo(k.nb, k.np, k.x, k.taps, k.ntaps, k.cib, k.xBlock, k.pixStride, k.w, bias, wres, want, k.outStride, k.outPix, flags)
	return got, want
}

// tilePrefetch is what the tile tests prefetch with the given flags:
// nothing, five values (shorter than a line, so the kernel prefetches
// past pf's end) or the whole of s: none may change an output.
func tilePrefetch[T any](s []T, flags int) []T {
	switch flags % 3 {
	case 0:
		return nil
	case 1:
		return s[:min(len(s), 5)]
	}
	return s
}

// TestPrefetchStep: a tile's prefetch step spreads n bytes over its blocks
// in the fewest whole lines, never past a block's reach, and covers all n
// when the blocks can.
func TestPrefetchStep(t *testing.T) {
	for _, c := range []struct{ n, blocks, lines int }{
		{1 << 20, 288, 16}, {131072, 288, 16}, {4096, 4, 16}, {64, 100, 16}, {5 * 4, 9, 16}, {1 << 20, 16, 8}, {65536, 256, 8},
	} {
		step := prefetchStep(c.n, c.blocks, c.lines)
		if step%64 != 0 || step < 0 || step > 64*c.lines || (step-64)*c.blocks >= c.n {
			t.Errorf("prefetchStep(%d, %d, %d) = %d: want whole lines, at most %d, the fewest that cover n", c.n, c.blocks, c.lines, step, 64*c.lines)
		}
		reach := (c.blocks-1)*step + 64*c.lines
		if c.n <= 64*c.lines*c.blocks && reach < c.n {
			t.Errorf("prefetchStep(%d, %d, %d) = %d reaches %d bytes, want all %d", c.n, c.blocks, c.lines, step, reach, c.n)
		}
	}
}

// TestConvBlockedTile checks every tile against the Go twin on every
// path: one and nine taps at arbitrary offsets, one and three input
// channel blocks, pixel strides of 16 and 32 floats, an output stride
// wider than the tile, and all sixteen combinations of the flags (with the
// residual also aliasing out). The twin rounds each product before adding
// it, the kernels fuse, so an output may differ by 1e-5 of the sum of the
// magnitudes that make it; outputs outside the tile must keep the sentinel.
func TestConvBlockedTile(t *testing.T) {
	forEachISA(t, testConvBlockedTile)
}

func testConvBlockedTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	eachBlockedTile(ConvTilePixels, func(nb, np, ntaps, cib, ps int) {
		k := newConvBlockedCase(rng, nb, np, ntaps, cib, ps, true)
		k.eachFlags(func(what string, flags int, alias bool) {
			got, want := k.run(flags, alias)
			k.check(t, what, got, want, flags, alias)
		})
	})
}

// eachBlockedTile calls f with every tile shape of the tile tests: every
// nb and np (up to maxNp(nb)), one and nine taps, one and three input
// blocks, pixel strides of 16 and 32 floats.
func eachBlockedTile(maxNp func(nb int) int, f func(nb, np, ntaps, cib, ps int)) {
	for nb := 1; nb <= ConvBlockedMaxBlocks; nb++ {
		for np := 1; np <= maxNp(nb); np++ {
			for _, ntaps := range []int{1, 9} {
				for _, cib := range []int{1, 3} {
					for _, ps := range []int{16, 32} {
						f(nb, np, ntaps, cib, ps)
					}
				}
			}
		}
	}
}

// eachFlags calls f with all sixteen combinations of the flags, those
// with a residual also with it aliasing out, and a description of the
// call.
func (k *convBlockedCase) eachFlags(f func(what string, flags int, alias bool)) {
	for flags := 0; flags < 16; flags++ {
		for _, alias := range []bool{false, true} {
			if alias && flags&ConvResidual == 0 {
				continue
			}
			f(fmt.Sprintf("%dx%d ntaps %d cib %d pixStride %d outStride %d outPix %d flags %04b alias %v",
				k.nb, k.np, k.ntaps, k.cib, k.pixStride, k.outStride, k.outPix, flags, alias), flags, alias)
		}
	}
}

// check compares got with the twin's want in the tile and the sentinel
// outside it.
func (k *convBlockedCase) check(t *testing.T, what string, got, want []float32, flags int, alias bool) {
	t.Helper()
	k.checkOutputs(t, what, got, alias, func(o, j, pl int, res float32) string {
		g, w := got[o], want[o]
		tol := 1e-5 * k.scale(j, pl, k.out[o], res, flags)
		switch {
		case math.IsNaN(float64(g)) || math.IsNaN(float64(w)) || math.Abs(float64(g)-float64(w)) > tol:
			return fmt.Sprintf("twin %v (tolerance %.3g)", w, tol)
		case flags&ConvReLU != 0 && g < 0:
			return "negative with ReLU"
		}
		return ""
	})
}

// TestConvBlockedTileNaN checks that a NaN in x reaches every output of
// its pixel, and a NaN in w every output of its lane, through ReLU.
func TestConvBlockedTileNaN(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(23, 24))
		for nb := 1; nb <= ConvBlockedMaxBlocks; nb++ {
			for np := 1; np <= ConvTilePixels(nb); np++ {
				k := newConvBlockedCase(rng, nb, np, 9, 2, 32, false)
				flags := ConvBias | ConvReLU
				// x: the last tap's second channel block, pixel np-1, channel 5.
				tap, p := k.ntaps-1, np-1
				xi := k.taps[2*tap] + k.xBlock + p*k.pixStride + 5
				old := k.x[xi]
				k.x[xi] = float32(math.NaN())
				got, _ := k.run(flags, false)
				k.x[xi] = old
				k.eachOutput(func(o, j, pl int) {
					if isNaN := math.IsNaN(float64(got[o])); isNaN != (pl/BlockLanes == p) {
						t.Fatalf("%dx%d: NaN in x at pixel %d: out block %d pixel %d lane %d = %v",
							nb, np, p, j, pl/BlockLanes, pl%BlockLanes, got[o])
					}
				})
				// w: tap 0, block 0, channel 15, output block nb-1, lane 3.
				wi := k.taps[1] + 15*nb*BlockLanes + (nb-1)*BlockLanes + 3
				k.w[wi] = float32(math.NaN())
				got, _ = k.run(flags, false)
				k.eachOutput(func(o, j, pl int) {
					if isNaN := math.IsNaN(float64(got[o])); isNaN != (j == nb-1 && pl%BlockLanes == 3) {
						t.Fatalf("%dx%d: NaN in w at block %d lane 3: out block %d pixel %d lane %d = %v",
							nb, np, nb-1, j, pl/BlockLanes, pl%BlockLanes, got[o])
					}
				})
			}
		}
	})
}

// TestAvgPool2x2BlockedRow checks the pooled row bit for bit against the
// Go twin and a plain loop on every path, for row lengths around the
// kernel's unrolling, with values of magnitudes from 1 to 2^15 (so that
// another order of the sums would round differently); out past n pixels
// must stay untouched.
func TestAvgPool2x2BlockedRow(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(25, 26))
		for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 14, 28, 56} {
			r0, r1 := make([]float32, 2*n*BlockLanes), make([]float32, 2*n*BlockLanes)
			for i := range r0 {
				r0[i] = (rng.Float32()*2 - 1) * float32(int(1)<<rng.IntN(16))
				r1[i] = (rng.Float32()*2 - 1) * float32(int(1)<<rng.IntN(16))
			}
			got, full := guarded(rng, n*BlockLanes, false)
			twin := make([]float32, n*BlockLanes)
			AvgPool2x2BlockedRow(n, r0, r1, got)
			avgPool2x2BlockedRowGo(n, r0, r1, twin)
			checkGuards(t, fmt.Sprintf("n %d out", n), full)
			for j := 0; j < n; j++ {
				for l := 0; l < BlockLanes; l++ {
					a, b := r0[2*j*BlockLanes:], r1[2*j*BlockLanes:]
					plain := (a[l] + a[BlockLanes+l] + b[l] + b[BlockLanes+l]) / 4
					o := j*BlockLanes + l
					if math.Float32bits(got[o]) != math.Float32bits(twin[o]) || math.Float32bits(got[o]) != math.Float32bits(plain) {
						t.Fatalf("n %d: out[%d] = %v, twin %v, plain loop %v", n, o, got[o], twin[o], plain)
					}
				}
			}
		}
	})
}

// TestMaxPool3s2BlockedRow checks the blocked max pool's row pass bit for
// bit against the Go twin on every path, for row lengths around the
// kernel's unrolling, on values with NaNs, −∞, and +0 and −0 side by side
// (Max keeps the first of equals: the order of the comparisons shows);
// out past n pixels must stay untouched.
func TestMaxPool3s2BlockedRow(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(41, 42))
		specials := []float32{float32(math.NaN()), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
		for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 50, 133} {
			src := make([]float32, (2*n+1)*BlockLanes)
			for i := range src {
				src[i] = rng.Float32()*2 - 1
				if rng.IntN(8) == 0 {
					src[i] = specials[rng.IntN(len(specials))]
				}
			}
			got, full := guarded(rng, n*BlockLanes, false)
			twin := make([]float32, n*BlockLanes)
			MaxPool3s2BlockedRow(n, src, got)
			maxPool3s2BlockedRowGo(n, src, twin)
			checkGuards(t, fmt.Sprintf("n %d out", n), full)
			for j := 0; j < n; j++ {
				for l := 0; l < BlockLanes; l++ {
					o := j*BlockLanes + l
					nan := false
					for k := 0; k < 3; k++ {
						nan = nan || src[(2*j+k)*BlockLanes+l] != src[(2*j+k)*BlockLanes+l]
					}
					if math.Float32bits(got[o]) != math.Float32bits(twin[o]) || nan != (got[o] != got[o]) {
						t.Fatalf("n %d: out[%d] = %v, twin %v (a NaN in the window: %v)", n, o, got[o], twin[o], nan)
					}
					for k := 0; k < 3 && !nan; k++ {
						if v := src[(2*j+k)*BlockLanes+l]; v > got[o] {
							t.Fatalf("n %d: out[%d] = %v below window value %v", n, o, got[o], v)
						}
					}
				}
			}
		}
	})
}

// BenchmarkConvBlockedTile times the 4×6 tile warm on every path, in
// GFLOP/s of one thread: a 3×3 convolution's nine taps over 16 input
// channel blocks (590 KB of weights in L2), and a 1×1 convolution's one
// tap over 4 and 16 blocks (16 and 64 KB), where the call's own cost
// shows.
func BenchmarkConvBlockedTile(b *testing.B) {
	const nb, np, wp = 4, 6, 8
	for _, shape := range [][2]int{{9, 16}, {1, 4}, {1, 16}} {
		ntaps, cib := shape[0], shape[1]
		xBlock := 3 * wp * BlockLanes // three padded rows of 8 pixels
		wBlock := cib * BlockLanes * nb * BlockLanes
		x := make([]float32, cib*xBlock)
		w := make([]float32, ntaps*wBlock)
		for i := range x {
			x[i] = float32(i%7) * 0.125
		}
		for i := range w {
			w[i] = float32(i%5) * 0.0625
		}
		var taps []int
		for t := 0; t < ntaps; t++ {
			taps = append(taps, (t/3*wp+t%3)*BlockLanes, t*wBlock)
		}
		bias := make([]float32, nb*BlockLanes)
		out := make([]float32, nb*np*BlockLanes)
		for _, s := range Supported() {
			b.Run(fmt.Sprintf("%s/%dx%d/ntaps=%d/cib=%d", s, nb, np, ntaps, cib), func(b *testing.B) {
				defer SetISA(SetISA(s))
				for b.Loop() {
					ConvBlockedTile(nb, np, x, taps, ntaps, cib, xBlock, BlockLanes, w, bias, nil, out, np*BlockLanes, BlockLanes, ConvBias|ConvReLU, nil)
				}
				flops := 2 * nb * BlockLanes * np * ntaps * cib * BlockLanes
				b.ReportMetric(float64(flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
