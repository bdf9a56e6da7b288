package cpu

import (
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// The Winograd F(2×2, 3×3) convolution on blocked images: the NCHW path's
// transforms (conv_winograd.go) with the 16 channels of a block in the
// lanes, so every transform is vertical arithmetic on whole vectors, and
// the 16 products per tile a 1×1 blocked convolution each (the tiles as
// its pixels, kern.ConvBlockedTile): 2.25× fewer multiplies than the
// direct 3×3 convolution, for the cost of the transforms and of their
// planes going through memory.
//
// The image is taken in chunks of tile rows (across the images of the
// batch) whose transformed inputs V and products M fit in L2 together
// (blockedWinoChunkBytes); per chunk, three passes over both workers:
//
//	V[ξν][cb][tile] = (Bᵀ d B)[ξ][ν]           (kern.WinogradInputBlocked)
//	M[ξν][ob][tile] = Σ_c V[ξν][c][tile]·U[ξν][c][ob]   (kern.ConvBlockedTile)
//	y = relu(Aᵀ M A + bias + res)              (kern.WinogradOutputBlocked)
//
// A tile whose 4×4 window crosses the image's edge, or whose 2×2 outputs
// do, goes through a small zero-padded copy.

// useBlockedWinograd reports whether the blocked convolution c runs as a
// Winograd convolution: 3×3, stride 1, padding 1, no dilation, at least
// blockedWinoMinChans input channels (or blockedWinoMinChansWide into at
// least blockedWinoMinOutWide) and a transformed weight of at most
// blockedWinoMaxWeight bytes, or forced by convPath "blockedwino"
// ("noblockedwino" keeps it direct).
func useBlockedWinograd(c ops.Conv2d) bool {
	if c.KernelH != 3 || c.KernelW != 3 || c.StrideH != 1 || c.StrideW != 1 || c.PadH != 1 || c.PadW != 1 ||
		max(1, c.DilationH) != 1 || max(1, c.DilationW) != 1 {
		return false
	}
	if convForced("blockedwino") {
		return true
	}
	if convForced("blocked") || convForced("noblockedwino") {
		return false
	}
	deep := c.InChans >= blockedWinoMinChans ||
		c.InChans >= blockedWinoMinChansWide && c.OutChans >= blockedWinoMinOutWide
	return deep && 16*c.InChans*c.OutChans*4 <= blockedWinoMaxWeightHere()
}

// blockedWinoMaxWeightHere is blockedWinoMaxWeight on the AVX-512 path of
// an Intel CPU (intelFullWidth), blockedWinoMaxWeightAMD elsewhere.
func blockedWinoMaxWeightHere() int {
	if intelFullWidth() {
		return blockedWinoMaxWeight
	}
	return blockedWinoMaxWeightAMD
}

// blockedWinoMinChans and blockedWinoMaxWeight bound the blocked Winograd
// convolution. Measured direct/Winograd, both blocked, cold on two
// threads (TestConvColdAB, a 2-vCPU Xeon, BN and ReLU): 1.13× for 64
// channels at 56×56, 1.43× for 128 at 56×56, 1.6× at 28×28, 1.45× at
// 16×16, 1.42× for 256 at 28×28, 1.27× at 14×14 (1.30× at batch 8),
// 1.09× at 7×9 (batch 2), 1.56× for VQGAN's 64 at 16×16 with the
// residual, 1.25× at 32×32. With 512, the 16 MiB of transformed weight
// comes from memory once per chunk (1.0× at 14×14, 0.94× at 7×7 batch 8).
// With 32 input channels the products are short, and pay only with
// enough output channels (blockedWinoMinChansWide, blockedWinoMinOutWide;
// on a faster Xeon host, where the direct tiles of one or two output
// blocks take 12 pixels): 1.10–1.14× for 32→64 at 112×112 (batch 1 and
// 8, three runs; CLIP RN50's third stem convolution), 1.22× at 56×56,
// 1.41× at 28×28, 1.11× for 32→128 at 56×56, 1.07× for 32→48 at 112×112,
// but 0.87× for 32→32 at 112×112 (1.33× at 56×56) and 0.73× for 16→32;
// clip_rn50 1.015× at batch 1 (80 pairs), 1.013× at batch 8.
//
// On an AMD EPYC Zen 5 (2 vCPU, 2 MiB of L2 per core) the 512-channel
// products pay too: 1.43–1.56× at 14×14 (batch 1 and 8), 1.84× at 25×34,
// 1.07–1.28× at 7×7 (batch 1 and 8), 1.18× at 4×5 (batch 2), 0.97× at
// 7×7 with a residual; so blockedWinoMaxWeightAMD admits them everywhere
// but on Intel.
const (
	blockedWinoMinChans     = 64
	blockedWinoMinChansWide = 32
	blockedWinoMinOutWide   = 48
	blockedWinoMaxWeight    = 4 << 20
	blockedWinoMaxWeightAMD = 16 << 20
)

// blockedWinoChunkBytes is about the most bytes of transformed inputs and
// products one chunk of tile rows holds.
const blockedWinoChunkBytes = 1 << 20

// blockedWinogradWeight packs the 16 transformed weights of wf [O, C, 3,
// 3] for kern.ConvBlockedTile as a 4×4 window's "taps" (position 4ξ+ν).
func blockedWinogradWeight(c ops.Conv2d, wf, bias []float32) *blockedWeight {
	o, ci := c.OutChans, c.InChans
	u := winogradU(o, ci, wf)
	w16 := make([]float32, o*ci*16)
	for oc := 0; oc < o*ci; oc++ {
		for pos := range 16 {
			w16[oc*16+pos] = u[pos][oc]
		}
	}
	c4 := c
	c4.KernelH, c4.KernelW = 4, 4
	bw := blockedConvWeight(c4, w16, bias)
	bw.winograd = true
	return bw
}

// conv2dBlockedWinograd runs the 3×3 convolution c (stride 1, padding 1)
// on the blocked image x (residual res, nil without one) into the blocked
// output y.
func (b *Backend) conv2dBlockedWinograd(c ops.Conv2d, bw *blockedWeight, x, y, res []float32) {
	const l = kern.BlockLanes
	h, w := c.Height, c.Width
	th, tw := ceilDiv(h, 2), ceilDiv(w, 2)
	cib, cob := c.InChans/l, c.OutChans/l
	groups := len(bw.starts) - 1
	rows := c.Batch * th // tile rows over the batch
	perRow := 16 * (cib + cob) * tw * l * 4
	chunk := max(1, min(rows, blockedWinoChunkBytes/perRow))
	if convForced("winochunk1") { // tests: every tile row its own chunk
		chunk = 1
	}
	vLen, mLen := 16*cib*chunk*tw*l, 16*cob*chunk*tw*l
	buf, release := fromArena(b, &b.winoArena, vLen+mLen)
	defer release()
	v, m := buf[:vLen], buf[vLen:]
	plane, img := h*w*l, c.InChans*h*w
	outImg := c.OutChans * h * w
	// The taps of the products: position pos's weight, per group size.
	var taps [kern.ConvBlockedMaxBlocks + 1][32]int
	for nb := 1; nb <= kern.ConvBlockedMaxBlocks; nb++ {
		for pos := range 16 {
			taps[nb][2*pos+1] = pos * cib * l * nb * l
		}
	}
	for r0 := 0; r0 < rows; r0 += chunk {
		nr := min(chunk, rows-r0)
		tiles := nr * tw
		vs, ms := cib*tiles*l, cob*tiles*l // the strides of the positions
		// Input transforms, per (input block, tile row).
		parallelFor(b.threads, cib*nr, 1, func(lo, hi int) {
			var pad [4 * 4 * l]float32
			for task := lo; task < hi; task++ {
				cb, r := task/nr, task%nr
				im, ty := (r0+r)/th, (r0+r)%th
				src := x[im*img+cb*plane:]
				dst := v[(cb*tiles+r*tw)*l:]
				winoInputRow(h, w, ty, tw, src, dst, vs, pad[:])
			}
		})
		// Products, per (position, group of output blocks); each task's
		// calls prefetch the weight of the worker's next task.
		calls := ceilDiv(tiles, kern.ConvBlockedMaxPixels)
		parallelFor(b.threads, 16*groups, 1, func(lo, hi int) {
			for task := lo; task < hi; task++ {
				pos, grp := task/groups, task%groups
				ob0 := grp * kern.ConvBlockedMaxBlocks
				nb := groupBlocks(c, grp)
				wg := bw.w[bw.starts[grp]:bw.starts[grp+1]]
				tp := taps[nb][2*pos : 2*pos+2]
				var pf weightPrefetch
				if next := task + 1; next < hi && prefetchWeights {
					pos2, grp2 := next/groups, next%groups
					nb2 := groupBlocks(c, grp2)
					at := bw.starts[grp2] + taps[nb2][2*pos2+1]
					pf = newWeightPrefetch(at, cib*l*nb2*l, 0, 1, calls)
				}
				for t0, k := 0, 0; t0 < tiles; k++ {
					n := evenTile(tiles, kern.ConvBlockedMaxPixels, k)
					p0, p1 := pf.next()
					kern.ConvBlockedTile(nb, n, v[pos*vs+t0*l:], tp, 1, cib, tiles*l, l,
						wg, nil, nil, m[pos*ms+(ob0*tiles+t0)*l:], tiles*l, l, 0, bw.w[p0:p1])
					t0 += n
				}
			}
		})
		// Output transforms, per (output block, tile row).
		parallelFor(b.threads, cob*nr, 1, func(lo, hi int) {
			var tmp [2 * 2 * l * 2]float32
			for task := lo; task < hi; task++ {
				ob, r := task/nr, task%nr
				im, ty := (r0+r)/th, (r0+r)%th
				at := im*outImg + ob*plane
				var ri []float32
				if res != nil {
					ri = res[at:]
				}
				bias := (*[l]float32)(bw.bias[ob*l:])
				winoOutputRow(h, w, ty, tw, m[(ob*tiles+r*tw)*l:], ms, bias, ri, y[at:], c.ReLU, tmp[:])
			}
		})
	}
}

// winoInputRow transforms tile row ty (tw tiles) of one block plane src
// (h×w pixels) into dst (position stride vs): the tiles whose windows lie
// inside the image straight from it, the others from pad, a zero-padded
// copy of their window.
func winoInputRow(h, w, ty, tw int, src, dst []float32, vs int, pad []float32) {
	const l = kern.BlockLanes
	y0 := 2*ty - 1 // the window's first row
	inside := y0 >= 0 && y0+3 < h
	k0, k1 := tw, tw // tiles [k0, k1) read in place: columns 2k−1 … 2k+2 inside
	if inside {
		k0, k1 = 1, max(1, min(tw, (w-3)/2+1))
	}
	if k1 > k0 {
		kern.WinogradInputBlocked(k1-k0, src[(y0*w+2*k0-1)*l:], w*l, dst[k0*l:], vs)
	}
	for k := 0; k < tw; k++ {
		if k >= k0 && k < k1 {
			continue
		}
		for a := 0; a < 4; a++ {
			for bb := 0; bb < 4; bb++ {
				p := pad[(a*4+bb)*l : (a*4+bb+1)*l]
				iy, ix := y0+a, 2*k-1+bb
				if iy >= 0 && iy < h && ix >= 0 && ix < w {
					copy(p, src[(iy*w+ix)*l:])
				} else {
					clear(p)
				}
			}
		}
		kern.WinogradInputBlocked(1, pad, 4*l, dst[k*l:], vs)
	}
}

// winoOutputRow writes tile row ty of one output block plane y (h×w) from
// its products m (position stride ms): whole tiles in place, a tile past
// the last row or column through tmp.
func winoOutputRow(h, w, ty, tw int, m []float32, ms int, bias *[kern.BlockLanes]float32, res, y []float32, relu bool, tmp []float32) {
	const l = kern.BlockLanes
	oy := 2 * ty
	full := w / 2 // tiles whose two columns are inside
	if oy+1 < h && full > 0 {
		var r []float32
		if res != nil {
			r = res[oy*w*l:]
		}
		kern.WinogradOutputBlocked(full, m, ms, bias, r, y[oy*w*l:], w*l, relu)
	}
	k0 := full
	if oy+1 >= h {
		k0 = 0
	}
	for k := k0; k < tw; k++ {
		// The tile's 2×2 outputs (and residual) in tmp, rows 2·16 apart.
		out, rt := tmp[:4*l], tmp[4*l:8*l]
		var r []float32
		if res != nil {
			for i := 0; i < 2; i++ {
				for j := 0; j < 2; j++ {
					if oy+i < h && 2*k+j < w {
						copy(rt[(i*2+j)*l:(i*2+j+1)*l], res[((oy+i)*w+2*k+j)*l:])
					}
				}
			}
			r = rt
		}
		kern.WinogradOutputBlocked(1, m[k*l:], ms, bias, r, out, 2*l, relu)
		for i := 0; i < 2; i++ {
			for j := 0; j < 2; j++ {
				if oy+i < h && 2*k+j < w {
					copy(y[((oy+i)*w+2*k+j)*l:((oy+i)*w+2*k+j+1)*l], out[(i*2+j)*l:])
				}
			}
		}
	}
}
