package cpu

import (
	"fmt"
	"math"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// groupNormSerial is the most values a group norm runs on one worker:
// below it waking a second one costs more than it saves.
const groupNormSerial = 1 << 15

// groupNorm is ops.GroupNorm: per image and group g of C/G channels,
// with the group's mean μ and biased variance σ² (kern.Moments, float64),
//
//	y[c, p] = x[c, p]·s_c + (beta[c] − μ·s_c),  s_c = gamma[c]/√(σ² + eps)
//
// (s_c and the shift in float32, one pass per channel by kern.Affine),
// then with Swish y·sigmoid(y) in the same pass (kern.AffineSiLU).
func (b *Backend) groupNorm(n ops.GroupNorm, in, out []*tensor) error {
	c := bench.Shape{n.Chans}
	x := bench.Shape{n.Batch, n.Chans, n.Height, n.Width}
	pixels := n.Height * n.Width
	if err := checkShapes("group_norm", in, []bench.Shape{x, c, c}); err != nil {
		return err
	}
	if err := checkShapes("group_norm", out, []bench.Shape{x}); err != nil {
		return err
	}
	if n.Groups <= 0 || n.Chans%n.Groups != 0 {
		return fmt.Errorf("cpu: group_norm: %d channels in %d groups", n.Chans, n.Groups)
	}
	src, gamma, beta, dst := in[0].data, in[1].data, in[2].data, out[0].data
	cg := n.Chans / n.Groups
	size := cg * pixels
	threads := b.threads
	if n.Batch*n.Chans*pixels <= groupNormSerial {
		threads = 1
	}
	parallelFor(threads, n.Batch*n.Groups, 1, func(lo, hi int) {
		for gi := lo; gi < hi; gi++ {
			v := src[gi*size : (gi+1)*size]
			mean, variance := kern.Moments(v)
			rstd := 1 / math.Sqrt(variance+n.Eps)
			g0 := (gi % n.Groups) * cg
			for ch := 0; ch < cg; ch++ {
				s := float32(rstd) * gamma[g0+ch]
				sh := beta[g0+ch] - float32(mean)*s
				row := v[ch*pixels : (ch+1)*pixels]
				o := dst[gi*size+ch*pixels : gi*size+(ch+1)*pixels]
				if n.Swish {
					kern.AffineSiLU(pixels, s, sh, row, o)
				} else {
					kern.Affine(pixels, s, sh, row, o)
				}
			}
		}
	})
	return nil
}
