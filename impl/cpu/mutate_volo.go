//go:build mutation

package cpu

import (
	"math"

	"vitbench/bench/ops"
)

// Mutations of VOLO's nodes and of average pooling.

func init() {
	addMutation("outlook_fold_average", "outlook attention's fold averages overlapping windows instead of summing them", nil,
		func(b *Backend, o ops.OutlookCore, in, out []*tensor) error {
			if err := b.outlookCore(o, in, out); err != nil {
				return err
			}
			gh, gw := o.GridH(), o.GridW()
			covering := func(p, g int) int { // windows on one axis whose targets include p
				return min(g-1, (p+o.Pad)/o.Stride) - max(0, ceilDiv(p+o.Pad-o.K+1, o.Stride)) + 1
			}
			y := out[0].data
			for bi := 0; bi < o.Batch; bi++ {
				for py := 0; py < o.Height; py++ {
					for px := 0; px < o.Width; px++ {
						if n := covering(py, gh) * covering(px, gw); n > 1 {
							row := y[((bi*o.Height+py)*o.Width+px)*o.Dim:][:o.Dim]
							for i := range row {
								row[i] /= float32(n)
							}
						}
					}
				}
			}
			return nil
		})
	addMutation("outlook_softmax_over_targets", "outlook attention's softmax over the window's targets i instead of its sources j", nil,
		outlookSoftmaxOverTargets)
	addMutation("avgpool_divisor_full_kernel", "average pooling divides every window by the whole kernel area, counting what a ceil-mode window hangs past the (padded) image",
		nil, avgPoolFullDivisor)
	addMutation("avgpool_nhwc_divisor_full_kernel", "VOLO's ceil-mode pooling divides a partial edge window by K² instead of its valid pixels",
		func(a ops.AvgPoolNHWC) bool { return a.Height%a.K != 0 || a.Width%a.K != 0 },
		func(b *Backend, a ops.AvgPoolNHWC, in, out []*tensor) error {
			if err := b.avgPoolNHWC(a, in, out); err != nil {
				return err
			}
			oh, ow, c := a.OutH(), a.OutW(), a.Chans
			for r := 0; r < a.Batch*oh; r++ {
				oy := r % oh
				for ox := 0; ox < ow; ox++ {
					area := (min(oy*a.K+a.K, a.Height) - oy*a.K) * (min(ox*a.K+a.K, a.Width) - ox*a.K)
					row := out[0].data[(r*ow+ox)*c:][:c]
					for i := range row {
						row[i] *= float32(area) / float32(a.K*a.K)
					}
				}
			}
			return nil
		})
	addMutation("aux_head_without_half", "VOLO's eval output head(cls) + max aux_head(tokens), without the 0.5 factor", nil,
		func(b *Backend, a ops.AuxMerge, in, out []*tensor) error { return auxMerge(a, in, out, 1, false) })
	addMutation("aux_head_mean", "VOLO's aux head merged by the mean over the tokens instead of the max", nil,
		func(b *Backend, a ops.AuxMerge, in, out []*tensor) error { return auxMerge(a, in, out, 0.5, true) })
}

// auxMerge is AuxMerge with the given factor, over the mean of the patch
// tokens' aux logits when mean, else their max.
func auxMerge(a ops.AuxMerge, in, out []*tensor, factor float64, mean bool) error {
	k, n := a.Classes, a.Tokens
	cls, aux, y := in[0].data, in[1].data, out[0].data
	for i := 0; i < a.Batch; i++ {
		for c := 0; c < k; c++ {
			acc := math.Inf(-1)
			if mean {
				acc = 0
			}
			for t := 1; t < n; t++ {
				v := float64(aux[(i*n+t)*k+c])
				if mean {
					acc += v / float64(n-1)
				} else {
					acc = math.Max(acc, v)
				}
			}
			y[i*k+c] = float32(float64(cls[i*k+c]) + factor*acc)
		}
	}
	return nil
}

// outlookSoftmaxOverTargets is OutlookCore with each window's attention
// normalized over its targets: A[i, j] = softmax over i of the logits.
func outlookSoftmaxOverTargets(b *Backend, o ops.OutlookCore, in, out []*tensor) error {
	gh, gw, k, k2 := o.GridH(), o.GridW(), o.K, o.K*o.K
	d := o.Dim / o.Heads
	v, logits, y := in[0].data, in[1].data, out[0].data
	clear(y)
	a := make([]float64, k2*k2)
	for bi := 0; bi < o.Batch; bi++ {
		for wy := 0; wy < gh; wy++ {
			for wx := 0; wx < gw; wx++ {
				for h := 0; h < o.Heads; h++ {
					l := logits[((bi*gh+wy)*gw+wx)*o.Heads*k2*k2+h*k2*k2:][:k2*k2]
					for j := 0; j < k2; j++ {
						m := math.Inf(-1)
						for i := 0; i < k2; i++ {
							m = math.Max(m, o.Scale*float64(l[i*k2+j]))
						}
						var z float64
						for i := 0; i < k2; i++ {
							a[i*k2+j] = math.Exp(o.Scale*float64(l[i*k2+j]) - m)
							z += a[i*k2+j]
						}
						for i := 0; i < k2; i++ {
							a[i*k2+j] /= z
						}
					}
					for i := 0; i < k2; i++ {
						ty, tx := wy*o.Stride-o.Pad+i/k, wx*o.Stride-o.Pad+i%k
						if ty < 0 || tx < 0 || ty >= o.Height || tx >= o.Width {
							continue
						}
						dst := y[((bi*o.Height+ty)*o.Width+tx)*o.Dim+h*d:][:d]
						for j := 0; j < k2; j++ {
							sy, sx := wy*o.Stride-o.Pad+j/k, wx*o.Stride-o.Pad+j%k
							if sy < 0 || sx < 0 || sy >= o.Height || sx >= o.Width {
								continue
							}
							src := v[((bi*o.Height+sy)*o.Width+sx)*o.Dim+h*d:][:d]
							for c := range dst {
								dst[c] += float32(a[i*k2+j]) * src[c]
							}
						}
					}
				}
			}
		}
	}
	return nil
}

// avgPoolFullDivisor is AvgPool2d with every window's sum divided by
// KH·KW.
func avgPoolFullDivisor(b *Backend, a ops.AvgPool2d, in, out []*tensor) error {
	oh, ow := a.OutH(), a.OutW()
	x, y := in[0].data, out[0].data
	for p := 0; p < a.Batch*a.Chans; p++ {
		src := x[p*a.Height*a.Width:]
		for oy := 0; oy < oh; oy++ {
			for ox := 0; ox < ow; ox++ {
				var s float64
				for yy := max(0, oy*a.SH-a.PH); yy < min(a.Height, oy*a.SH-a.PH+a.KH); yy++ {
					for xx := max(0, ox*a.SW-a.PW); xx < min(a.Width, ox*a.SW-a.PW+a.KW); xx++ {
						s += float64(src[yy*a.Width+xx])
					}
				}
				y[(p*oh+oy)*ow+ox] = float32(s / float64(a.KH*a.KW))
			}
		}
	}
	return nil
}
