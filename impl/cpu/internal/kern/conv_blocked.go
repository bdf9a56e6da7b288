package kern

import "unsafe"

// The channel-blocked (NCHW16c) layout keeps an image of C channels (a
// multiple of 16) as C/16 blocks, each an H×W plane whose pixels hold 16
// consecutive channels side by side:
//
//	x[n, c, y, x] is at (((n·C/16 + c/16)·H + y)·W + x)·16 + c%16
//
// so a vector of 16 lanes is 16 channels of one pixel. A convolution in
// this layout (as oneDNN's and MLAS's NCHWc kernels do) broadcasts one
// input channel of one pixel and multiplies it by the 16 output channels
// of a weight vector: every lane is used whatever the image's width, and
// neither the image nor its windows are packed per call.

// BlockLanes is the channels of one block of the NCHW16c layout.
const BlockLanes = 16

// The flags of ConvBlockedTile.
const (
	ConvAccumulate = 1 << iota // start from out's values instead of zero
	ConvBias                   // add bias
	ConvResidual               // then add res
	ConvReLU                   // then clamp at zero
)

// ConvBlockedMaxBlocks and ConvBlockedMaxPixels bound a tile of
// ConvBlockedTile: output channel blocks × pixels, the accumulators of the
// AVX-512 kernel (24 of its 32 registers, 4 more for the weight vectors).
// A float32 tile of one or two blocks (ConvBlockedTile, ConvNCHWTile)
// may take up to ConvTilePixels(nb) pixels, ConvTileMaxPixels; a bf16
// tile ConvBlockedMaxPixels.
const (
	ConvBlockedMaxBlocks = 4
	ConvBlockedMaxPixels = 6
	ConvTileMaxPixels    = 12
)

// ConvTilePixels is the most pixels of a float32 tile of nb output blocks
// (ConvBlockedTile, ConvNCHWTile): 24 accumulators, so 12 pixels of one
// or two blocks (2×12 keeps 27 of the 32 registers busy), 6 of three or
// four.
func ConvTilePixels(nb int) int {
	if nb <= 2 {
		return ConvTileMaxPixels
	}
	return ConvBlockedMaxPixels
}

// ConvBlockedTile computes nb blocks of 16 output channels (nb ≤
// ConvBlockedMaxBlocks) at np pixels (np ≤ ConvTilePixels(nb)) of a
// convolution in the NCHW16c layout. taps holds ntaps pairs (xOff, wOff)
// of offsets in floats: a tap's input for pixel 0 at x[xOff], its weight
// block at w[wOff]; output pixel p is outPix floats after pixel p−1 (16
// along a row, a row's width times 16 down a column). The plain loop, in this order (the SIMD kernel fuses
// each multiply-add, so it agrees with the Go twin to rounding):
//
//	for t < ntaps: for cb < cib: for c < 16:
//	    for j < nb: for p < np: for l < 16:
//	        acc[j][p][l] += x[taps[2t] + cb·xBlock + p·pixStride + c] ·
//	                        w[taps[2t+1] + (cb·16 + c)·nb·16 + j·16 + l]
//	then for j, p, l, at o = j·outStride + p·outPix + l:
//	    v = acc[j][p][l]   (starting from out[o] with ConvAccumulate, else 0)
//	    v += bias[j·16 + l] (ConvBias); v += res[o] (ConvResidual); v = max(v, 0) (ConvReLU)
//	    out[o] = v
//
// So a group's weight is laid out [tap][cb][c][nb·16]. res is read only
// with ConvResidual and may then alias out.
//
// pf, which may be nil, is memory the caller reads next (a weight, from
// memory in a network): the SIMD kernel prefetches it into L2 while it
// computes, one line per channel step, spread over its ntaps·cib input
// blocks (prefetchStep, whose step is rounded up to a line, so the last
// blocks may reach past the end of pf: by under a line per block and
// the last block's 1 KiB; a prefetch never faults). The Go twin ignores
// it.
func ConvBlockedTile(nb, np int, x []float32, taps []int, ntaps, cib, xBlock, pixStride int,
	w, bias, res, out []float32, outStride, outPix, flags int, pf []float32) {
	// The bounds the loops reach, checked once so the SIMD kernel's
	// unchecked reads and writes stay inside the slices.
	xMax, wMax := checkBlockedTile("ConvBlockedTile", nb, np, ConvTilePixels(nb), taps, ntaps, cib, bias, res, out, outStride, outPix, flags, 1)
	_ = x[xMax+(cib-1)*xBlock+(np-1)*pixStride+BlockLanes-1]
	_ = w[wMax+cib*BlockLanes*nb*BlockLanes-1]
	if k := convBlockedFor(active); k != nil {
		bp, r := blockedEpiPointers(bias, res, flags)
		pfp, pfStep := &w[0], 0 // nothing to prefetch: the tile's own first lines, in cache
		if len(pf) > 0 {
			pfp, pfStep = &pf[0], prefetchStep(4*len(pf), ntaps*cib, BlockLanes)
		}
		k[nb-1][np-1](&x[0], unsafe.SliceData(taps), ntaps, cib, xBlock*4, pixStride*4,
			&w[0], bp, r, &out[0], outStride*4, outPix*4, flags, pfp, pfStep)
		return
	}
	convBlockedGo(nb, np, x, taps, ntaps, cib, xBlock, pixStride, w, bias, res, out, outStride, outPix, flags)
}

// prefetchStep is how many bytes a blocked tile's prefetch pointer moves
// per input block so that its blocks, each prefetching lines lines from
// it, cover n bytes: n spread evenly, rounded up to whole lines, at most
// the lines a block prefetches (a longer stretch is covered as far as
// that reaches).
func prefetchStep(n, blocks, lines int) int {
	return min((n+64*blocks-1)/(64*blocks)*64, 64*lines)
}

// convBlockedGo is ConvBlockedTile's plain loop, its Go twin.
func convBlockedGo(nb, np int, x []float32, taps []int, ntaps, cib, xBlock, pixStride int,
	w, bias, res, out []float32, outStride, outPix, flags int) {
	acc := blockedStart(nb, np, out, outStride, outPix, flags)
	for t := 0; t < ntaps; t++ {
		xt, wt := taps[2*t], taps[2*t+1]
		for cb := 0; cb < cib; cb++ {
			for c := 0; c < BlockLanes; c++ {
				wc := w[wt+(cb*BlockLanes+c)*nb*BlockLanes:]
				for j := 0; j < nb; j++ {
					wv := wc[j*BlockLanes : (j+1)*BlockLanes]
					for p := 0; p < np; p++ {
						xv := x[xt+cb*xBlock+p*pixStride+c]
						a := &acc[j][p]
						for l, wl := range wv {
							a[l] += xv * wl
						}
					}
				}
			}
		}
	}
	blockedFinish(nb, np, &acc, bias, res, out, outStride, outPix, flags)
}

// ConvNCHWTile is ConvBlockedTile for an image in NCHW (a network's
// input, whose few channels make no block): nb blocks of 16 output
// channels (the blocked layout) at np pixels (np ≤ ConvTilePixels(nb)),
// each input channel a step of its own, chanStride floats apart (a
// channel plane). In this order (the SIMD kernel fuses each
// multiply-add):
//
//	for t < ntaps: for ch < cin: for j < nb: for p < np: for l < 16:
//	    acc[j][p][l] += x[taps[2t] + ch·chanStride + p·pixStride] ·
//	                    w[taps[2t+1] + ch·nb·16 + j·16 + l]
//
// then the epilogue of ConvBlockedTile. So a group's weight is laid out
// [tap][ch][nb·16], as ConvBlockedTile's with cin channels.
func ConvNCHWTile(nb, np int, x []float32, taps []int, ntaps, cin, chanStride, pixStride int,
	w, bias, res, out []float32, outStride, outPix, flags int) {
	xMax, wMax := checkBlockedTile("ConvNCHWTile", nb, np, ConvTilePixels(nb), taps, ntaps, cin, bias, res, out, outStride, outPix, flags, 1)
	_ = x[xMax+(cin-1)*chanStride+(np-1)*pixStride]
	_ = w[wMax+cin*nb*BlockLanes-1]
	if k := convNCHWFor(active); k != nil {
		bp, r := blockedEpiPointers(bias, res, flags)
		k[nb-1][np-1](&x[0], unsafe.SliceData(taps), ntaps, cin, chanStride*4, pixStride*4,
			&w[0], bp, r, &out[0], outStride*4, outPix*4, flags)
		return
	}
	convNCHWGo(nb, np, x, taps, ntaps, cin, chanStride, pixStride, w, bias, res, out, outStride, outPix, flags)
}

// convNCHWGo is ConvNCHWTile's plain loop, its Go twin.
func convNCHWGo(nb, np int, x []float32, taps []int, ntaps, cin, chanStride, pixStride int,
	w, bias, res, out []float32, outStride, outPix, flags int) {
	acc := blockedStart(nb, np, out, outStride, outPix, flags)
	for t := 0; t < ntaps; t++ {
		xt, wt := taps[2*t], taps[2*t+1]
		for ch := 0; ch < cin; ch++ {
			wc := w[wt+ch*nb*BlockLanes:]
			for j := 0; j < nb; j++ {
				wv := wc[j*BlockLanes : (j+1)*BlockLanes]
				for p := 0; p < np; p++ {
					xv := x[xt+ch*chanStride+p*pixStride]
					a := &acc[j][p]
					for l, wl := range wv {
						a[l] += xv * wl
					}
				}
			}
		}
	}
	blockedFinish(nb, np, &acc, bias, res, out, outStride, outPix, flags)
}

// ConvBlockedTileBF16 is ConvBlockedTile with its image and weight
// rounded to bf16: x holds the image's values as bf16 pairs of
// neighbouring channels (the blocked image through packPairs, so a
// block's pixel is 8 pairs) and w the weight's, channels 2q and 2q+1 of
// one output lane paired (BlockedPairs). The offsets and strides are
// those of the float32 layout, each even, and halved to index the pairs.
// The plain loop, whose order and rounding the SIMD kernel (VDPBF16PS)
// reproduces bit for bit:
//
//	for t < ntaps: for cb < cib: for q < 8:
//	    for j < nb: for p < np: for l < 16:
//	        acc[j][p][l] = dpbf16(acc[j][p][l], x[(taps[2t] + cb·xBlock + p·pixStride)/2 + q],
//	                              w[(taps[2t+1] + cb·16·nb·16)/2 + q·nb·16 + j·16 + l])
//
// then the epilogue of ConvBlockedTile. It runs on the AVX-512 path of a
// CPU with AVX512_BF16, the Go twin elsewhere.
func ConvBlockedTileBF16(nb, np int, x []uint32, taps []int, ntaps, cib, xBlock, pixStride int,
	w []uint32, bias, res, out []float32, outStride, outPix, flags int) {
	if xBlock%2 != 0 || pixStride%2 != 0 {
		panic("kern: ConvBlockedTileBF16 with an odd stride")
	}
	const half = BlockLanes / 2
	xMax, wMax := checkBlockedTile("ConvBlockedTileBF16", nb, np, ConvBlockedMaxPixels, taps, ntaps, cib, bias, res, out, outStride, outPix, flags, 2)
	_ = x[(xMax+(cib-1)*xBlock+(np-1)*pixStride)/2+half-1]
	_ = w[wMax/2+cib*half*nb*BlockLanes-1]
	if k := convBlockedBF16For(active); k != nil {
		bp, r := blockedEpiPointers(bias, res, flags)
		k[nb-1][np-1](&x[0], unsafe.SliceData(taps), ntaps, cib, xBlock*2, pixStride*2,
			&w[0], bp, r, &out[0], outStride*4, outPix*4, flags)
		return
	}
	convBlockedBF16Go(nb, np, x, taps, ntaps, cib, xBlock, pixStride, w, bias, res, out, outStride, outPix, flags)
}

// convBlockedBF16Go is ConvBlockedTileBF16's plain loop, its Go twin.
func convBlockedBF16Go(nb, np int, x []uint32, taps []int, ntaps, cib, xBlock, pixStride int,
	w []uint32, bias, res, out []float32, outStride, outPix, flags int) {
	const half = BlockLanes / 2
	acc := blockedStart(nb, np, out, outStride, outPix, flags)
	for t := 0; t < ntaps; t++ {
		xt, wt := taps[2*t]/2, taps[2*t+1]/2
		for cb := 0; cb < cib; cb++ {
			for q := 0; q < half; q++ {
				wq := w[wt+(cb*half+q)*nb*BlockLanes:]
				for j := 0; j < nb; j++ {
					wv := wq[j*BlockLanes : (j+1)*BlockLanes]
					for p := 0; p < np; p++ {
						xv := x[xt+(cb*xBlock+p*pixStride)/2+q]
						a := &acc[j][p]
						for l, wl := range wv {
							a[l] = dpbf16(a[l], xv, wl)
						}
					}
				}
			}
		}
	}
	blockedFinish(nb, np, &acc, bias, res, out, outStride, outPix, flags)
}

// BlockedPairs rounds a blocked convolution weight to bf16 pairs for
// ConvBlockedTileBF16: w holds groups [starts[g], starts[g+1]) of rows of
// 16·nb(g) values (one input channel's weights of the group's output
// lanes; nb(g) = min(4, blocks − 4g) of blocks output blocks), and
//
//	out[s/2 + i·n + j] = bf16(w[s + 2i·n + j]) | bf16(w[s + (2i+1)·n + j])<<16
//
// for each group's start s, n = 16·nb(g), so a pair holds one lane's
// weights of two neighbouring input channels. Every group's row count is
// even (16 per input block), so the pairs keep the groups' offsets halved.
func BlockedPairs(w []float32, starts []int, blocks int) []uint32 {
	out := make([]uint32, len(w)/2)
	for g := 0; g+1 < len(starts); g++ {
		n := min(ConvBlockedMaxBlocks, blocks-g*ConvBlockedMaxBlocks) * BlockLanes
		s, e := starts[g], starts[g+1]
		for r := s; r < e; r += 2 * n {
			dst := out[r/2:] // s/2 + (r−s)/2
			for j := 0; j < n; j++ {
				dst[j] = pairBF16(w[r+j], w[r+n+j])
			}
		}
	}
	return out
}

// checkBlockedTile panics unless a blocked tile's shape (np at most
// maxNp) and taps are valid (each tap offset a multiple of unit: 2 for
// the pairs of the bf16 tile) and its bias, residual and output hold what
// it reads and writes, and returns the largest image and weight offsets
// of its taps.
func checkBlockedTile(name string, nb, np, maxNp int, taps []int, ntaps, cib int, bias, res, out []float32,
	outStride, outPix, flags, unit int) (xMax, wMax int) {
	if nb < 1 || nb > ConvBlockedMaxBlocks || np < 1 || np > maxNp {
		panic("kern: " + name + " tile out of range")
	}
	if ntaps < 1 || cib < 1 || outPix < BlockLanes && np > 1 {
		panic("kern: " + name + " with no taps or channels")
	}
	for t := 0; t < ntaps; t++ {
		if taps[2*t] < 0 || taps[2*t+1] < 0 || taps[2*t]%unit != 0 || taps[2*t+1]%unit != 0 {
			panic("kern: " + name + " negative or misaligned tap offset")
		}
		xMax = max(xMax, taps[2*t])
		wMax = max(wMax, taps[2*t+1])
	}
	last := (nb-1)*outStride + (np-1)*outPix + BlockLanes - 1
	_ = out[last]
	if flags&ConvBias != 0 {
		_ = bias[nb*BlockLanes-1]
	}
	if flags&ConvResidual != 0 {
		_ = res[last]
	}
	return xMax, wMax
}

// blockedEpiPointers returns the first bias and residual values a SIMD
// tile reads, nil unless its flags ask for them.
func blockedEpiPointers(bias, res []float32, flags int) (bp, r *float32) {
	if flags&ConvBias != 0 {
		bp = &bias[0]
	}
	if flags&ConvResidual != 0 {
		r = &res[0]
	}
	return bp, r
}

// blockedAcc is a tile's accumulators in the Go twins: [block][pixel][lane].
type blockedAcc = [ConvBlockedMaxBlocks][ConvTileMaxPixels][BlockLanes]float32

// blockedStart returns a tile's first accumulators: out's values with
// ConvAccumulate, else zero.
func blockedStart(nb, np int, out []float32, outStride, outPix, flags int) blockedAcc {
	var acc blockedAcc
	if flags&ConvAccumulate != 0 {
		for j := 0; j < nb; j++ {
			for p := 0; p < np; p++ {
				copy(acc[j][p][:], out[j*outStride+p*outPix:])
			}
		}
	}
	return acc
}

// blockedFinish writes a tile's outputs from its sums: the bias, then the
// residual, then the clamp, each as its flag asks.
func blockedFinish(nb, np int, acc *blockedAcc, bias, res, out []float32, outStride, outPix, flags int) {
	for j := 0; j < nb; j++ {
		for p := 0; p < np; p++ {
			o := out[j*outStride+p*outPix:][:BlockLanes]
			for l := range o {
				v := acc[j][p][l]
				if flags&ConvBias != 0 {
					v += bias[j*BlockLanes+l]
				}
				if flags&ConvResidual != 0 {
					v += res[j*outStride+p*outPix+l]
				}
				if flags&ConvReLU != 0 {
					v = max(v, 0)
				}
				o[l] = v
			}
		}
	}
}
