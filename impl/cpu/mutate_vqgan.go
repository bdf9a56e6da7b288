//go:build mutation

package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
)

// Mutations of VQGAN's nodes: GroupNorm's eps, the Downsample's padding and
// the quantizer's forward value.

func init() {
	addMutation("groupnorm_eps_1e5", "GroupNorm with PyTorch's default eps 1e-5 where VQGAN's Normalize has 1e-6",
		func(g ops.GroupNorm) bool { return g.Eps == 1e-6 },
		func(b *Backend, g ops.GroupNorm, in, out []*tensor) error {
			g.Eps = 1e-5
			return b.groupNorm(g, in, out)
		})
	addMutation("downsample_symmetric_pad", "Downsample padded on every side (Conv2d padding 1) instead of on the right and bottom only", nil,
		func(b *Backend, n ops.PadRightBottom, in, out []*tensor) error {
			// Padding 1 on every side, as the stride-2 3×3 windows read it: the
			// input shifted one row and one column down and right.
			h, w := n.Height, n.Width
			if err := checkShapes("pad_right_bottom", out, []bench.Shape{{n.Batch, n.Chans, h + 1, w + 1}}); err != nil {
				return err
			}
			x, y := in[0].data, out[0].data
			clear(y)
			for p := 0; p < n.Batch*n.Chans; p++ {
				for r := 0; r < h; r++ {
					copy(y[(p*(h+1)+r+1)*(w+1)+1:(p*(h+1)+r+2)*(w+1)], x[(p*h+r)*w:(p*h+r)*w+w])
				}
			}
			return nil
		})
	addMutation("vq_codebook_row", "the quantizer returning the codebook row e[idx] instead of the straight-through z + (e − z)", nil,
		func(b *Backend, n ops.VectorQuantize, in, out []*tensor) error {
			if err := b.vectorQuantize(n, in, out); err != nil {
				return err
			}
			c, hw := n.Chans, n.Height*n.Width
			e, quant, idx := in[1].data, out[0].data, out[1].data
			for p, v := range idx {
				img, s := p/hw, p%hw
				for ch := 0; ch < c; ch++ {
					quant[(img*c+ch)*hw+s] = e[int(v)*c+ch]
				}
			}
			return nil
		})
}
