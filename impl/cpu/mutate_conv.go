//go:build mutation

package cpu

import (
	"slices"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// Mutations of convolutions, normalization around them, unfolding and
// T2T-ViT's performer.

func init() {
	addMutation("bn_eps_x10", "BatchNorm eps ten times the model's (1e-4 for 1e-5)",
		func(c ops.Conv2d) bool { return c.BN },
		func(b *Backend, c ops.Conv2d, in, out []*tensor) error {
			c.BNEps *= 10
			return b.conv2d(c, replaced(in, 1, cloneTensor(in[1])), out) // a fresh weight: no folded cache
		})
	addMutation("conv_padding_shifted", "convolution padded one pixel less before and one more after (TensorFlow's SAME) instead of symmetrically",
		func(c ops.Conv2d) bool { return c.PadH > 0 || c.PadW > 0 },
		func(b *Backend, c ops.Conv2d, in, out []*tensor) error {
			x, u := padAfter(c.Unfold, in[0])
			c.Unfold = u
			return b.conv2d(c, replaced(replaced(in, 0, x), 1, cloneTensor(in[1])), out)
		})
	addMutation("deform_conv_padding_shifted", "deformable convolution padded one pixel less before and one more after",
		func(d ops.DeformConv2d) bool { return d.PadH > 0 || d.PadW > 0 },
		func(b *Backend, d ops.DeformConv2d, in, out []*tensor) error {
			x, u := padAfter(d.Unfold, in[0])
			d.Unfold = u
			return b.deformConv2d(d, replaced(in, 0, x), out)
		})
	addMutation("dcn_mask_ignored", "DCNv2's modulation mask ignored (DCNv1 sampling)",
		func(d ops.DeformConv2d) bool { return d.Mask },
		func(b *Backend, d ops.DeformConv2d, in, out []*tensor) error {
			ones := cloneTensor(in[2])
			for i := range ones.data {
				ones.data[i] = 1
			}
			return b.deformConv2d(d, replaced(in, 2, ones), out)
		})
	addMutation("dcn_offsets_xy", "deformable convolution offsets read as (dx, dy) pairs instead of (dy, dx)", nil,
		func(b *Backend, d ops.DeformConv2d, in, out []*tensor) error {
			off := cloneTensor(in[1])
			plane := d.OutH() * d.OutW()
			for img := 0; img < d.Batch; img++ {
				for pair := 0; pair < d.OffsetGroups*d.Taps(); pair++ {
					dy := off.data[(img*2*d.OffsetGroups*d.Taps()+2*pair)*plane:][:plane]
					dx := off.data[(img*2*d.OffsetGroups*d.Taps()+2*pair+1)*plane:][:plane]
					for i := range dy {
						dy[i], dx[i] = dx[i], dy[i]
					}
				}
			}
			return b.deformConv2d(d, replaced(in, 1, off), out)
		})
	addMutation("groupnorm_groups_as_size", "GroupNorm(32) read as groups of 32 channels instead of 32 groups",
		func(g ops.GroupNorm) bool {
			return g.Groups > 0 && g.Chans%g.Groups == 0 && g.Chans/g.Groups != g.Groups
		},
		func(b *Backend, g ops.GroupNorm, in, out []*tensor) error {
			g.Groups = g.Chans / g.Groups
			return b.groupNorm(g, in, out)
		})
	addMutation("unfold_tap_major", "nn.Unfold's columns tap-major ((ky·kw + kx)·C + c) instead of channel-major (c·kh·kw + ky·kw + kx)", nil,
		func(b *Backend, u ops.Unfold, in, out []*tensor) error {
			if err := b.unfold(u, in, out); err != nil {
				return err
			}
			cols, taps := u.Cols(), u.KernelH*u.KernelW
			row := make([]float32, cols)
			for r := 0; r < len(out[0].data)/cols; r++ {
				y := out[0].data[r*cols : (r+1)*cols]
				for c := 0; c < u.InChans; c++ {
					for t := 0; t < taps; t++ {
						row[t*u.InChans+c] = y[c*taps+t]
					}
				}
				copy(y, row)
			}
			return nil
		})
	addMutation("performer_no_eps", "token_performer's D without the +1e-8", nil,
		func(b *Backend, p ops.PerformerCore, in, out []*tensor) error {
			p.Eps = 0
			return b.performerCore(p, in, out)
		})
	addMutation("performer_m_off_by_one", "token_performer with m − 1 random features (int(in_dim·kernel_ratio) off by one)",
		func(p ops.PerformerCore) bool { return p.M > 1 },
		func(b *Backend, p ops.PerformerCore, in, out []*tensor) error {
			p.M--
			w := &tensor{shape: bench.Shape{p.M, p.Emb}, dtype: bench.Float32, data: slices.Clone(in[1].data[:p.M*p.Emb])}
			return b.performerCore(p, replaced(in, 1, w), out)
		})
	addMutation("performer_qkv_order", "token_performer's fused projection split q, k, v instead of the original's k, q, v", nil,
		func(b *Backend, p ops.PerformerCore, in, out []*tensor) error {
			x := cloneTensor(in[0])
			e := p.Emb
			for r := 0; r < p.Batch*p.Tokens; r++ {
				row := x.data[r*3*e:]
				copy(row[:e], in[0].data[r*3*e+e:][:e])
				copy(row[e:2*e], in[0].data[r*3*e:][:e])
			}
			return b.performerCore(p, replaced(in, 0, x), out)
		})
}

// padAfter returns x with two zero rows appended below (when the geometry
// pads rows) and two zero columns to the right (when it pads columns), and
// the geometry of that image with one pixel less padding on those axes:
// the same output size, read one pixel further on, as padding p−1 before
// and p+1 after would.
func padAfter(u ops.Unfold, x *tensor) (*tensor, ops.Unfold) {
	dh, dw := 0, 0
	if u.PadH > 0 {
		dh = 2
	}
	if u.PadW > 0 {
		dw = 2
	}
	h, w := u.Height+dh, u.Width+dw
	y := zeroTensor(bench.Shape{u.Batch, u.InChans, h, w})
	for p := 0; p < u.Batch*u.InChans; p++ {
		for r := 0; r < u.Height; r++ {
			copy(y.data[(p*h+r)*w:][:u.Width], x.data[(p*u.Height+r)*u.Width:][:u.Width])
		}
	}
	u.Height, u.Width = h, w
	if dh > 0 {
		u.PadH--
	}
	if dw > 0 {
		u.PadW--
	}
	return y, u
}
