package cpu

import (
	"fmt"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// The nodes of VQGAN's first stage (ops/vqgan_nodes.go): Downsample's
// one-sided padding, Upsample's nearest ×2 and the codebook search.

// padRightBottom copies every [H, W] plane into the top-left of an
// [H+1, W+1] plane whose last row and column are zero.
func (b *Backend) padRightBottom(n ops.PadRightBottom, in, out []*tensor) error {
	h, w := n.Height, n.Width
	if err := checkShapes("pad_right_bottom", in, []bench.Shape{{n.Batch, n.Chans, h, w}}); err != nil {
		return err
	}
	if err := checkShapes("pad_right_bottom", out, []bench.Shape{{n.Batch, n.Chans, h + 1, w + 1}}); err != nil {
		return err
	}
	// A blocked image (layout_blocked.go) is padded the same way with
	// pixels of 16 channels as its units.
	x, y, u := in[0].data, out[0].data, blockedUnit(in[0])
	out[0].blocked = in[0].blocked
	parallelFor(b.threads, n.Batch*n.Chans/u, 1, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			src, dst := x[p*h*w*u:(p+1)*h*w*u], y[p*(h+1)*(w+1)*u:(p+1)*(h+1)*(w+1)*u]
			for r := 0; r < h; r++ {
				copy(dst[r*(w+1)*u:(r*(w+1)+w)*u], src[r*w*u:(r+1)*w*u])
				clear(dst[(r*(w+1)+w)*u : (r+1)*(w+1)*u])
			}
			clear(dst[h*(w+1)*u:])
		}
	})
	return nil
}

// upsampleNearest2x writes out[.., y, x] = in[.., ⌊y/2⌋, ⌊x/2⌋].
func (b *Backend) upsampleNearest2x(n ops.UpsampleNearest2x, in, out []*tensor) error {
	h, w := n.Height, n.Width
	if err := checkShapes("upsample_nearest2x", in, []bench.Shape{{n.Batch, n.Chans, h, w}}); err != nil {
		return err
	}
	if err := checkShapes("upsample_nearest2x", out, []bench.Shape{{n.Batch, n.Chans, 2 * h, 2 * w}}); err != nil {
		return err
	}
	// A blocked image is upsampled the same way with pixels of 16
	// channels as its units.
	x, y, u := in[0].data, out[0].data, blockedUnit(in[0])
	out[0].blocked = in[0].blocked
	parallelFor(b.threads, n.Batch*n.Chans/u*h, 8, func(lo, hi int) {
		for r := lo; r < hi; r++ { // r = plane·h + source row
			src := x[r*w*u : (r+1)*w*u]
			dst := y[2*r*2*w*u : (2*r+1)*2*w*u]
			if u == 1 {
				for i, v := range src {
					dst[2*i], dst[2*i+1] = v, v
				}
			} else {
				for i := 0; i < w; i++ {
					copy(dst[2*i*u:(2*i+1)*u], src[i*u:(i+1)*u])
					copy(dst[(2*i+1)*u:(2*i+2)*u], src[i*u:(i+1)*u])
				}
			}
			copy(y[(2*r+1)*2*w*u:(2*r+2)*2*w*u], dst)
		}
	})
	return nil
}

// vectorQuantize is ops.VectorQuantize: per image, the positions' vectors
// as rows zt [HW, C], the products zt·eᵀ by Sgemm, then per position
//
//	d[j] = (‖z‖² + ‖e_j‖²) − 2·(z·e_j)      (float32, the norms summed in order)
//	idx = first j of the smallest d[j]
//	quant[c] = z[c] + (e[idx, c] − z[c])
func (b *Backend) vectorQuantize(n ops.VectorQuantize, in, out []*tensor) error {
	if err := vqCheck(n); err != nil {
		return err
	}
	c, hw, codes := n.Chans, n.Height*n.Width, n.Codes
	if err := checkShapes("vector_quantize", in, []bench.Shape{{n.Batch, c, n.Height, n.Width}, {codes, c}}); err != nil {
		return err
	}
	if err := checkShapes("vector_quantize", out, []bench.Shape{{n.Batch, c, n.Height, n.Width}, {n.Batch, n.Height, n.Width}}); err != nil {
		return err
	}
	z, e, quant, indices := in[0].data, in[1].data, out[0].data, out[1].data
	// Scratch (no garbage per call): the codebook's squared norms, one
	// image's vectors transposed, and the dot products of all of them.
	buf, release := b.scratch(codes + hw*c + hw*codes)
	defer release()
	en, zt, dots := buf[:codes], buf[codes:codes+hw*c], buf[codes+hw*c:]
	for j := range en {
		en[j] = sumSquares(e[j*c : (j+1)*c])
	}
	pb := kern.PackBT(codes, c, e, c)
	for img := 0; img < n.Batch; img++ {
		zi, qi := z[img*c*hw:(img+1)*c*hw], quant[img*c*hw:(img+1)*c*hw]
		kern.Transpose(c, hw, zi, hw, zt, c)
		parallelFor(b.threads, hw, 64, func(lo, hi int) {
			dot := dots[lo*codes : hi*codes]
			kern.SgemmPacked(hi-lo, zt[lo*c:], c, pb, dot, codes, nil, 0, codes)
			for p := lo; p < hi; p++ {
				row := zt[p*c : (p+1)*c]
				zn := sumSquares(row)
				d := dot[(p-lo)*codes : (p-lo+1)*codes]
				best, bestD := 0, (zn+en[0])-2*d[0]
				for j := 1; j < codes; j++ {
					if dj := (zn + en[j]) - 2*d[j]; dj < bestD {
						best, bestD = j, dj
					}
				}
				indices[img*hw+p] = float32(best)
				code := e[best*c : (best+1)*c]
				for ch, v := range row {
					qi[ch*hw+p] = v + (code[ch] - v)
				}
			}
		})
	}
	return nil
}

// sumSquares is Σ v², summed in order in float32 (as torch.sum of a short
// row; the rounding differs from PyTorch's vectorized sum only in the last bits).
func sumSquares(v []float32) float32 {
	var s float32
	for _, x := range v {
		s += x * x
	}
	return s
}

// vqCheck is a guard for the node's hyper-parameters.
func vqCheck(n ops.VectorQuantize) error {
	if n.Codes < 1 || n.Codes > 1<<24 {
		return fmt.Errorf("cpu: vector_quantize: %d codes (indices must be exact in float32)", n.Codes)
	}
	return nil
}
