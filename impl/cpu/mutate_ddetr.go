//go:build mutation

package cpu

import (
	"math"
	"slices"

	"vitbench/bench"
	"vitbench/bench/ops"
)

// Mutations of Deformable DETR's nodes: deformable sampling, position
// embeddings, references, two-stage proposals and post-processing.

// msdaMistake is how a mutated multi-scale deformable attention computes
// its sampling locations and weights.
type msdaMistake struct {
	offsetsByHW bool // 2-d references: offsets / (H, W) instead of (W, H)
	perLevel    bool // softmax over each level's P points instead of all L·P
	boxAsPoint  bool // 4-d references sampled with the 2-d rule
	pointAsBox  bool // 2-d references sampled with the 4-d rule, as boxes of the whole map (w = h = 1)
	// pixel maps a normalized location on level lv to the one the correct
	// bilinear rule must see to sample where the mistaken rule samples
	// (nil: unchanged).
	pixel func(lv ops.Level, x, y float32) (float32, float32)
}

// alignCorners: the pixel is loc·(size − 1) instead of loc·size − 0.5.
func alignCorners(lv ops.Level, x, y float32) (float32, float32) {
	return (x*float32(lv.W-1) + 0.5) / float32(lv.W), (y*float32(lv.H-1) + 0.5) / float32(lv.H)
}

// borderPadding: grid_sample's padding_mode="border" clamps the pixel into
// the map instead of reading zeros outside it.
func borderPadding(lv ops.Level, x, y float32) (float32, float32) {
	px := min(max(x*float32(lv.W)-0.5, 0), float32(lv.W-1))
	py := min(max(y*float32(lv.H)-0.5, 0), float32(lv.H-1))
	return (px + 0.5) / float32(lv.W), (py + 0.5) / float32(lv.H)
}

func init() {
	for _, m := range []struct {
		name, doc string
		pixel     func(lv ops.Level, x, y float32) (float32, float32)
	}{
		{"sampling_align_corners", "bilinear sampling with align_corners=True (pixel = loc·(size−1)) instead of False", alignCorners},
		{"sampling_border_padding", "grid_sample with padding_mode=\"border\" instead of zero padding", borderPadding},
	} {
		mk := msdaMistake{pixel: m.pixel}
		addMutation(m.name, m.doc, nil, func(b *Backend, c ops.MSDeformCore, in, out []*tensor) error {
			loc := cloneTensor(in[1])
			movePoints(c, loc.data, mk.pixel)
			return b.msDeformCore(c, replaced(in, 1, loc), out)
		})
		addMutation(m.name, m.doc, nil, func(b *Backend, n ops.MSDeformSample, in, out []*tensor) error {
			return msdaExplicit(b, n, in, out, mk)
		})
	}
	addMutation("msda_offsets_by_hw", "MSDeformAttn offsets normalized by (H, W) instead of (W, H)",
		func(n ops.MSDeformSample) bool { return n.RefDims == 2 },
		func(b *Backend, n ops.MSDeformSample, in, out []*tensor) error {
			return msdaExplicit(b, n, in, out, msdaMistake{offsetsByHW: true})
		})
	addMutation("msda_softmax_per_level", "MSDeformAttn attention weights soft-maxed per level instead of jointly over all levels and points",
		func(n ops.MSDeformSample) bool { return len(n.Levels) > 1 },
		func(b *Backend, n ops.MSDeformSample, in, out []*tensor) error {
			return msdaExplicit(b, n, in, out, msdaMistake{perLevel: true})
		})
	addMutation("msda_boxes_sampled_as_points", "box references (cx, cy, w, h) of box refinement sampled with the 2-d point rule, ignoring w and h",
		func(n ops.MSDeformSample) bool { return n.RefDims == 4 },
		func(b *Backend, n ops.MSDeformSample, in, out []*tensor) error {
			return msdaExplicit(b, n, in, out, msdaMistake{boxAsPoint: true})
		})
	addMutation("msda_points_sampled_as_boxes", "2-d reference points sampled with the 4-d box rule (offset / P · 0.5, as boxes of the whole map) instead of offset / (W, H)",
		func(n ops.MSDeformSample) bool { return n.RefDims == 2 },
		func(b *Backend, n ops.MSDeformSample, in, out []*tensor) error {
			return msdaExplicit(b, n, in, out, msdaMistake{pointAsBox: true})
		})
	addMutation("sine_position_without_offset", "sine position embedding without Deformable DETR's −0.5 offset (DETR's form)", nil,
		func(b *Backend, n ops.PositionSine, in, out []*tensor) error {
			return positionSineOffset(n, in, out, 0)
		})
	addMutation("inverse_sigmoid_eps_1e-3", "inverse_sigmoid clamped at eps 1e-3 (DN-DETR's) instead of Deformable DETR's 1e-5", nil,
		func(b *Backend, n ops.BoxDecode, in, out []*tensor) error {
			t, ref, y := in[0].data, in[1].data, out[0].data
			for r := 0; r < n.Batch*n.Queries; r++ {
				for j := 0; j < 4; j++ {
					v := float64(t[r*4+j])
					if j < n.RefDims {
						x := math.Min(math.Max(float64(ref[r*n.RefDims+j]), 0), 1)
						v += math.Log(math.Max(x, 1e-3) / math.Max(1-x, 1e-3))
					}
					y[r*4+j] = float32(1 / (1 + math.Exp(-v)))
				}
			}
			return nil
		})
	addMutation("topk_ties_last_row_first", "two-stage top-k of equal scores takes the later row first instead of the earlier", nil,
		func(b *Backend, n ops.TopKRows, in, out []*tensor) error {
			// The correct op on rows in reverse order breaks ties the other way.
			rev := func(t *tensor, width int) *tensor {
				r := cloneTensor(t)
				for img := 0; img < n.Batch; img++ {
					for i := 0; i < n.Rows; i++ {
						copy(r.data[(img*n.Rows+i)*width:][:width], t.data[(img*n.Rows+n.Rows-1-i)*width:][:width])
					}
				}
				return r
			}
			return b.topKRows(n, []*tensor{rev(in[0], n.Classes), rev(in[1], n.Width)}, out)
		})
	addMutation("proposal_side_without_level_scale", "two-stage proposals of side 0.05 on every level instead of 0.05·2^level",
		func(n ops.Proposals) bool { return len(n.Levels) > 1 },
		func(b *Backend, n ops.Proposals, in, out []*tensor) error {
			if err := b.proposals(n, in, out); err != nil {
				return err
			}
			side := float32(math.Log(0.05 / 0.95))
			s := ops.MSDeformCore{Levels: n.Levels}.Values()
			for img := 0; img < n.Batch; img++ {
				for r := 0; r < s; r++ {
					o := out[0].data[(img*s+r)*4:][:4]
					if !math.IsInf(float64(o[0]), 0) {
						o[2], o[3] = side, side
					}
				}
			}
			return nil
		})
	addMutation("valid_ratios_swapped", "valid ratios stored (h, w) instead of (w, h)",
		func(n ops.ValidRatios) bool { return n.Masked },
		func(b *Backend, n ops.ValidRatios, in, out []*tensor) error {
			if err := b.validRatios(n, in, out); err != nil {
				return err
			}
			y := out[0].data
			for i := 0; i+1 < len(y); i += 2 {
				y[i], y[i+1] = y[i+1], y[i]
			}
			return nil
		})
	addMutation("level_embed_missing", "the encoder's positions without the per-level embedding", nil,
		func(b *Backend, n ops.LevelEmbed, in, out []*tensor) error { copy(out[0].data, in[0].data); return nil })
	addMutation("box_corners_full_size", "post-processing boxes (cx ± w, cy ± h) instead of (cx ± w/2, cy ± h/2)", nil,
		func(b *Backend, n ops.PostProcess, in, out []*tensor) error {
			boxes := cloneTensor(in[1])
			for i := 0; i < len(boxes.data); i += 4 {
				boxes.data[i+2] *= 2
				boxes.data[i+3] *= 2
			}
			return b.postProcess(n, replaced(in, 1, boxes), out)
		})
}

// movePoints applies pixel to every sampling location [N, Lq, M, L, P, 2]
// of the core c, by level.
func movePoints(c ops.MSDeformCore, loc []float32, pixel func(lv ops.Level, x, y float32) (float32, float32)) {
	l, p := len(c.Levels), c.Points
	for i := 0; i < len(loc)/2; i++ {
		lv := c.Levels[i/p%l]
		loc[2*i], loc[2*i+1] = pixel(lv, loc[2*i], loc[2*i+1])
	}
}

// msdaExplicit computes MSDeformSample the long way with the mistake mk:
// the attention weights and sampling locations as arrays, the padded value
// rows zeroed, then the core.
func msdaExplicit(b *Backend, n ops.MSDeformSample, in, out []*tensor, mk msdaMistake) error {
	c := n.MSDeformCore
	s, l, m, d, p, r := c.Values(), len(c.Levels), c.Heads, c.HeadDim, c.Points, n.RefDims
	lp := l * p
	value := &tensor{shape: bench.Shape{c.Batch, s, m, d}, dtype: bench.Float32, data: in[0].data}
	if n.Masked {
		value.data = slices.Clone(in[0].data)
		for i, v := range in[4].data {
			if v != 0 {
				clear(value.data[i*m*d : (i+1)*m*d])
			}
		}
	}
	loc := zeroTensor(bench.Shape{c.Batch, c.Queries, m, l, p, 2})
	attn := zeroTensor(bench.Shape{c.Batch, c.Queries, m, l, p})
	ref, off, logits := in[1].data, in[2].data, in[3].data
	for q := 0; q < c.Batch*c.Queries; q++ {
		rr := ref[q*l*r:]
		for head := 0; head < m; head++ {
			base := (q*m + head) * lp
			groups := [][2]int{{0, lp}}
			if mk.perLevel {
				groups = groups[:0]
				for li := 0; li < l; li++ {
					groups = append(groups, [2]int{li * p, (li + 1) * p})
				}
			}
			for _, g := range groups {
				softmaxInto(logits[base+g[0]:base+g[1]], attn.data[base+g[0]:base+g[1]])
			}
			for li, lv := range c.Levels {
				rx, ry := rr[li*r], rr[li*r+1]
				for pt := 0; pt < p; pt++ {
					j := base + li*p + pt
					ox, oy := off[2*j], off[2*j+1]
					var x, y float32
					switch {
					case r == 4 && !mk.boxAsPoint:
						x = rx + ox/float32(p)*rr[li*4+2]*0.5
						y = ry + oy/float32(p)*rr[li*4+3]*0.5
					case mk.pointAsBox:
						x, y = rx+ox/float32(p)*0.5, ry+oy/float32(p)*0.5
					case mk.offsetsByHW:
						x, y = rx+ox/float32(lv.H), ry+oy/float32(lv.W)
					default:
						x, y = rx+ox/float32(lv.W), ry+oy/float32(lv.H)
					}
					if mk.pixel != nil {
						x, y = mk.pixel(lv, x, y)
					}
					loc.data[2*j], loc.data[2*j+1] = x, y
				}
			}
		}
	}
	return b.msDeformCore(c, []*tensor{value, loc, attn}, out)
}

// softmaxInto writes softmax(x) into y.
func softmaxInto(x, y []float32) {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var z float64
	for i, v := range x {
		e := math.Exp(float64(v) - mx)
		y[i] = float32(e)
		z += e
	}
	for i := range y {
		y[i] = float32(float64(y[i]) / z)
	}
}

// positionSineOffset is PositionSine with the cumulative sums shifted by
// −offset (Deformable DETR: 0.5) before they are normalized.
func positionSineOffset(n ops.PositionSine, in, out []*tensor, offset float32) error {
	const feats = sineFeats
	s := ops.MSDeformCore{Levels: n.Levels}.Values()
	dimT := sineDimT()
	const scale = float32(2 * math.Pi)
	y := out[0].data
	for img := 0; img < n.Batch; img++ {
		for _, lv := range n.Levels {
			valid := func(r, c int) float32 {
				if n.Masked && in[0].data[img*s+lv.Start+r*lv.W+c] != 0 {
					return 0
				}
				return 1
			}
			for r := 0; r < lv.H; r++ {
				for c := 0; c < lv.W; c++ {
					var cy, cx, ty, tx float32
					for k := 0; k < lv.H; k++ {
						if k <= r {
							cy += valid(k, c)
						}
						ty += valid(k, c)
					}
					for k := 0; k < lv.W; k++ {
						if k <= c {
							cx += valid(r, k)
						}
						tx += valid(r, k)
					}
					ey := (cy - offset) / (ty + 1e-6) * scale
					ex := (cx - offset) / (tx + 1e-6) * scale
					o := y[(img*s+lv.Start+r*lv.W+c)*2*feats:]
					for i := 0; i < feats; i += 2 {
						o[i] = float32(math.Sin(float64(ey / dimT[i])))
						o[i+1] = float32(math.Cos(float64(ey / dimT[i+1])))
						o[feats+i] = float32(math.Sin(float64(ex / dimT[i])))
						o[feats+i+1] = float32(math.Cos(float64(ex / dimT[i+1])))
					}
				}
			}
		}
	}
	return nil
}
