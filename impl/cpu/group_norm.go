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
	if b.useBlockedGroupNorm(n, in[0].blocked) {
		src := in[0].data
		if !in[0].blocked {
			// The image blocked into the output, normalized there in place.
			b.toBlocked(n.Batch, n.Chans, pixels, src, out[0].data)
			src = out[0].data
		}
		b.groupNormBlocked(n, src, in[1].data, in[2].data, out[0].data)
		out[0].blocked = true
		return nil
	}
	out[0].blocked = false
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

// useBlockedGroupNorm reports whether the group norm n runs on (and
// writes) the blocked layout (layout_blocked.go): with whole channel
// blocks and groups that are whole within a block or whole blocks, when
// its image comes blocked, or with Swish (VQGAN's norms, whose
// convolutions then run blocked too), its NCHW image blocked first.
func (b *Backend) useBlockedGroupNorm(n ops.GroupNorm, inBlocked bool) bool {
	cg := n.Chans / max(1, n.Groups)
	return b.blockedLayout() && n.Chans%kern.BlockLanes == 0 && n.Groups > 0 && n.Chans%n.Groups == 0 &&
		(kern.BlockLanes%cg == 0 || cg%kern.BlockLanes == 0) && (inBlocked || n.Swish)
}

// groupNormBlocked is groupNorm on the blocked image x into y (which may
// be x): per image, the shifted moments of every channel over its pixels
// (kern.MomentsBlocked, float64, each lane shifted by its first pixel)
// are combined over the channels of each group,
//
//	μ = Σ_ch (n·c_ch + S1_ch) / (n·cg)
//	σ² = Σ_ch (S2_ch + 2(c_ch − μ)·S1_ch + n(c_ch − μ)²) / (n·cg)
//
// and each block plane gets the per-channel scale and shift of groupNorm
// (kern.AffineBlocked, with Swish when asked). A task is the blocks of
// whole groups: one block, or the cg/16 blocks of a wider group.
func (b *Backend) groupNormBlocked(n ops.GroupNorm, x, gamma, beta, y []float32) {
	const l = kern.BlockLanes
	pixels := n.Height * n.Width
	cg := n.Chans / n.Groups
	span := max(1, cg/l) // blocks per task
	blocks := n.Chans / l
	plane := pixels * l
	threads := b.threads
	if n.Batch*n.Chans*pixels <= groupNormSerial {
		threads = 1
	}
	parallelFor(threads, n.Batch*blocks/span, 1, func(lo, hi int) {
		s1 := make([]float64, span*l)
		s2 := make([]float64, span*l)
		shift := make([]float32, span*l)
		for task := lo; task < hi; task++ {
			b0 := task * span // first block, counted over the batch
			for k := 0; k < span; k++ {
				v := x[(b0+k)*plane : (b0+k+1)*plane]
				sh := (*[l]float32)(shift[k*l:])
				copy(sh[:], v[:l])
				p1, p2 := (*[l]float64)(s1[k*l:]), (*[l]float64)(s2[k*l:])
				*p1, *p2 = [l]float64{}, [l]float64{}
				kern.MomentsBlocked(pixels, v, sh, p1, p2)
			}
			var scale, shiftOut [l]float32
			for k := 0; k < span; k++ {
				ch0 := (b0 + k) % blocks * l // first channel of the block in its image
				for g0 := 0; g0 < l; g0 += min(cg, l) {
					// The group of channel ch0+g0: lanes g0.. of this block
					// and, for a wider group, the same lanes of the others.
					nn := float64(pixels)
					var sum float64
					first, count := k*l+g0, min(cg, l)
					if cg > l {
						first, count = 0, span*l
					}
					for i := first; i < first+count; i++ {
						sum += nn*float64(shift[i]) + s1[i]
					}
					mean := sum / (nn * float64(cg))
					var ss float64
					for i := first; i < first+count; i++ {
						d := float64(shift[i]) - mean
						ss += s2[i] + 2*d*s1[i] + nn*d*d
					}
					variance := max(ss/(nn*float64(cg)), 0)
					rstd := 1 / math.Sqrt(variance+n.Eps)
					for i := g0; i < g0+min(cg, l); i++ {
						ch := ch0 + i
						sc := float32(rstd) * gamma[ch]
						scale[i], shiftOut[i] = sc, beta[ch]-float32(mean)*sc
					}
				}
				at := (b0 + k) * plane
				kern.AffineBlocked(pixels, &scale, &shiftOut, x[at:at+plane], y[at:at+plane], n.Swish)
			}
		}
	})
}
