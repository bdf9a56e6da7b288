package cpu

import (
	"fmt"
	"math"
	"slices"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// deformRows is the number of output pixels one worker samples and
// multiplies at a time: enough rows for the packed GEMM to reuse each
// weight panel, few enough that the sampled columns stay in L2/L3.
const deformRows = 240

// deformConv2d computes ops.DeformConv2d. Per image, the input is first
// made channels-last [H·W, C], so that a sampling point's four corners are
// contiguous channel vectors. Workers then take runs of output pixels;
// for each pixel and tap they compute the sampling point and its corner
// weights (times the mask) once per offset group and gather the channels
// with kern.WeightedRows into a column matrix [pixels, Groups·K·C/Groups]
// (group-major, then tap, then channel). Each weight group's columns are
// multiplied by its packed weight [O/Groups, K·C/Groups] (bias fused), and
// the result is written into the NCHW output.
func (b *Backend) deformConv2d(dc ops.DeformConv2d, in, out []*tensor) error {
	bsz, cin, h, w, o := dc.Batch, dc.InChans, dc.Height, dc.Width, dc.OutChans
	oh, ow, taps := dc.OutH(), dc.OutW(), dc.Taps()
	og, g := dc.OffsetGroups, dc.Groups
	want := []bench.Shape{{bsz, cin, h, w}, {bsz, 2 * og * taps, oh, ow}}
	if dc.Mask {
		want = append(want, bench.Shape{bsz, og * taps, oh, ow})
	}
	want = append(want, bench.Shape{o, cin / g, dc.KernelH, dc.KernelW})
	if dc.Bias {
		want = append(want, bench.Shape{o})
	}
	if err := checkShapes("deform_conv2d", in, want); err != nil {
		return err
	}
	if err := checkShapes("deform_conv2d", out, []bench.Shape{{bsz, o, oh, ow}}); err != nil {
		return err
	}
	if int64(h)*int64(w)*int64(cin) >= math.MaxInt32 {
		return fmt.Errorf("cpu: deform_conv2d: an image of %d×%d×%d has more than 2³¹ elements", cin, h, w)
	}
	x, offset := in[0].data, in[1].data
	var mask []float32
	wi := 2
	if dc.Mask {
		mask, wi = in[2].data, 3
	}
	dw := b.deformWeights(dc, in[wi:])
	pixels, cg, og0, cols := oh*ow, cin/g, o/g, taps*cin
	workers := b.threads
	if int64(pixels)*int64(o)*int64(cols) < 1<<18 {
		workers = 1
	}
	// Chunks of about deformRows whole row tiles, as many per worker.
	rowTile := dw.pbs[0].RowTile()
	nChunks := workers * ((pixels + workers*deformRows - 1) / (workers * deformRows))
	chunk := ((pixels+nChunks-1)/nChunks + rowTile - 1) / rowTile * rowTile
	// Scratch: the channels-last image, then per worker its columns and
	// one group's GEMM result.
	per := chunk*cols + chunk*og0
	buf, release := b.scratch(h*w*cin + workers*per)
	defer release()
	xt := buf[:h*w*cin]
	y := out[0].data
	cpo := cin / og // channels per offset group
	for img := 0; img < bsz; img++ {
		transposeToChannelsLast(b.threads, cin, h*w, x[img*cin*h*w:(img+1)*cin*h*w], xt)
		offImg := offset[img*2*og*taps*pixels : (img+1)*2*og*taps*pixels]
		var maskImg []float32
		if mask != nil {
			maskImg = mask[img*og*taps*pixels : (img+1)*og*taps*pixels]
		}
		yImg := y[img*o*pixels : (img+1)*o*pixels]
		tiles := (pixels + chunk - 1) / chunk
		parallelWorkers(workers, tiles, 1, func(wk, lo, hi int) {
			col := buf[h*w*cin+wk*per : h*w*cin+wk*per+chunk*cols]
			res := buf[h*w*cin+wk*per+chunk*cols : h*w*cin+(wk+1)*per]
			var offs [4]int32
			var wts [4]float32
			for t := lo; t < hi; t++ {
				p0, p1 := t*chunk, min((t+1)*chunk, pixels)
				for px := p0; px < p1; px++ {
					oy, ox := px/ow, px%ow
					row := col[(px-p0)*cols : (px-p0+1)*cols]
					for grp := 0; grp < og; grp++ {
						for k := 0; k < taps; k++ {
							ky, kx := k/dc.KernelW, k%dc.KernelW
							dy := offImg[((grp*taps+k)*2)*pixels+px]
							dx := offImg[((grp*taps+k)*2+1)*pixels+px]
							m := float32(1)
							if maskImg != nil {
								m = maskImg[(grp*taps+k)*pixels+px]
							}
							sy := float32(oy*dc.StrideH-dc.PadH+ky*dc.DilationH) + dy
							sx := float32(ox*dc.StrideW-dc.PadW+kx*dc.DilationW) + dx
							n := bilinearCorners(sy, sx, h, w, cin, m, &offs, &wts)
							// The offset group's channels, split at weight-group borders.
							for c0 := grp * cpo; c0 < (grp+1)*cpo; {
								gw := c0 / cg
								c1 := min((grp+1)*cpo, (gw+1)*cg)
								for j := 0; j < n; j++ {
									offs[j] += int32(c0)
								}
								dst := row[gw*taps*cg+k*cg+(c0-gw*cg):]
								kern.WeightedRows(c1-c0, xt, offs[:n], wts[:n], dst)
								for j := 0; j < n; j++ {
									offs[j] -= int32(c0)
								}
								c0 = c1
							}
						}
					}
				}
				rows := p1 - p0
				for gw := 0; gw < g; gw++ {
					epi := kern.Epilogue{}
					if dw.bias != nil {
						epi.Bias = dw.bias[gw*og0 : (gw+1)*og0]
					}
					kern.SgemmPackedEpi(rows, col[gw*taps*cg:], cols, dw.pbs[gw], res, og0, epi, 0, og0)
					kern.Transpose(rows, og0, res, og0, yImg[gw*og0*pixels+p0:], pixels)
				}
			}
		})
	}
	return nil
}

// bilinearCorners writes the in-image corners of the sampling point
// (sy, sx) of an H×W image stored channels-last with c channels: their
// row offsets (pixel·c) and bilinear weights times m, and returns how many
// there are. A point with sy ≤ −1, sy ≥ H, sx ≤ −1 or sx ≥ W has none.
func bilinearCorners(sy, sx float32, h, w, c int, m float32, offs *[4]int32, wts *[4]float32) int {
	if !(sy > -1 && sx > -1 && sy < float32(h) && sx < float32(w)) {
		return 0
	}
	yf, xf := float32(math.Floor(float64(sy))), float32(math.Floor(float64(sx)))
	yl, xl := int(yf), int(xf)
	ly, lx := sy-yf, sx-xf
	hy, hx := 1-ly, 1-lx
	n := 0
	put := func(y, x int, weight float32) {
		if y >= 0 && x >= 0 && y < h && x < w {
			offs[n] = int32((y*w + x) * c)
			wts[n] = weight * m
			n++
		}
	}
	put(yl, xl, hy*hx)
	put(yl, xl+1, hy*lx)
	put(yl+1, xl, ly*hx)
	put(yl+1, xl+1, ly*lx)
	return n
}

// transposeToChannelsLast writes src [c, n] as dst [n, c], pixel blocks
// split between workers.
func transposeToChannelsLast(threads, c, n int, src, dst []float32) {
	const blk = 64
	parallelFor(threads, (n+blk-1)/blk, 4, func(lo, hi int) {
		p0, p1 := lo*blk, min(hi*blk, n)
		kern.Transpose(c, p1-p0, src[p0:], n, dst[p0*c:], c)
	})
}

// deformWeights returns the weight of each group reordered to
// [O/Groups, K·C/Groups] (tap-major, matching the columns) and packed,
// with the bias; rebuilt only when the weight or bias is uploaded again.
func (b *Backend) deformWeights(dc ops.DeformConv2d, ws []*tensor) *foldedWeight {
	w := ws[0]
	versions := make([]uint64, len(ws))
	for i, t := range ws {
		versions[i] = t.version
	}
	if f := w.folded; f != nil && f.current() && slices.Equal(f.versions, versions) {
		return f
	}
	b.dropPacked(w)
	g, taps, cg := dc.Groups, dc.Taps(), dc.InChans/dc.Groups
	og := dc.OutChans / g
	f := &foldedWeight{versions: versions}
	for gw := 0; gw < g; gw++ {
		re := make([]float32, og*taps*cg)
		for o := 0; o < og; o++ {
			src := w.data[(gw*og+o)*cg*taps : (gw*og+o+1)*cg*taps] // [cg, taps]
			dst := re[o*taps*cg : (o+1)*taps*cg]                   // [taps, cg]
			for c := 0; c < cg; c++ {
				for k := 0; k < taps; k++ {
					dst[k*cg+c] = src[c*taps+k]
				}
			}
		}
		pb := b.packBT(og, taps*cg, re, taps*cg)
		if pb.Bytes() == 0 { // the Go path multiplies by the reordered weight itself
			f.held += int64(len(re)) * 4
		}
		f.pbs = append(f.pbs, pb)
		f.held += pb.Bytes()
	}
	if dc.Bias {
		f.bias = append([]float32(nil), ws[1].data...)
		f.held += int64(len(f.bias)) * 4
	}
	w.folded = f
	b.account(f.bytes())
	return f
}
