package cpu

import (
	"fmt"
	"math"
	"sort"

	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// The detector's nodes around the backbone and the transformer; see
// package ops for what each computes.

func (b *Backend) relu(n ops.ReLU, in, out []*tensor) error {
	if err := checkElems("relu", in, out, 1, n.Elems); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	threads := b.threads
	if n.Elems < 1<<16 {
		threads = 1
	}
	parallelFor(threads, n.Elems, 4096, func(lo, hi int) { kern.ReLU(hi-lo, x[lo:hi], y[lo:hi]) })
	return nil
}

// nearestIndex is F.interpolate's "nearest" source index for output
// index i when resizing in → out: min(⌊i·(in/out)⌋, in − 1), the ratio
// in float32 as PyTorch's CPU kernel computes it.
func nearestIndex(i, in, out int) int {
	if in == out {
		return i
	}
	scale := float32(in) / float32(out)
	return min(int(float32(i)*scale), in-1)
}

func (b *Backend) levelMasks(n ops.LevelMasks, in, out []*tensor) error {
	s := ops.MSDeformCore{Levels: n.Levels}.Values()
	if err := checkShapes("level_masks", in, []bench.Shape{{n.Batch, n.Height, n.Width}}); err != nil {
		return err
	}
	if err := checkShapes("level_masks", out, []bench.Shape{{n.Batch, s}}); err != nil {
		return err
	}
	m, y := in[0].data, out[0].data
	for img := 0; img < n.Batch; img++ {
		for _, lv := range n.Levels {
			for r := 0; r < lv.H; r++ {
				sr := nearestIndex(r, n.Height, lv.H)
				for c := 0; c < lv.W; c++ {
					sc := nearestIndex(c, n.Width, lv.W)
					v := float32(0)
					if m[(img*n.Height+sr)*n.Width+sc] != 0 {
						v = 1
					}
					y[img*s+lv.Start+r*lv.W+c] = v
				}
			}
		}
	}
	return nil
}

// sineFeats is the number of sine/cosine features per coordinate of
// Deformable DETR's position embeddings.
const sineFeats = 128

// sineDimT is their divisors, dim_t[i] = 10000^(2·⌊i/2⌋/128), in float32
// as PyTorch forms them.
func sineDimT() [sineFeats]float32 {
	var d [sineFeats]float32
	for i := range d {
		d[i] = float32(math.Pow(10000, float64(float32(2*(i/2))/sineFeats)))
	}
	return d
}

// validExtent counts the unpadded rows (down column 0) and columns (along
// row 0) of an h×w padding mask m (nonzero = padded), as Deformable
// DETR's get_valid_ratio does.
func validExtent(m []float32, h, w int) (rows, cols int) {
	for r := 0; r < h; r++ {
		if m[r*w] == 0 {
			rows++
		}
	}
	for c := 0; c < w; c++ {
		if m[c] == 0 {
			cols++
		}
	}
	return rows, cols
}

// sineHalf writes one half of a sine position embedding for the value e:
// o[i] = sin(e/dimT[i]) for even i, cos(e/dimT[i]) for odd i.
func sineHalf(o []float32, e float32, dimT []float32) {
	for i := 0; i+1 < len(o); i += 2 {
		o[i] = float32(math.Sin(float64(e / dimT[i])))
		o[i+1] = float32(math.Cos(float64(e / dimT[i+1])))
	}
}

func (b *Backend) positionSine(n ops.PositionSine, in, out []*tensor) error {
	const feats = sineFeats
	s := ops.MSDeformCore{Levels: n.Levels}.Values()
	var want []bench.Shape
	if n.Masked {
		want = []bench.Shape{{n.Batch, s}}
	}
	if err := checkShapes("position_sine", in, want); err != nil {
		return err
	}
	if err := checkShapes("position_sine", out, []bench.Shape{{n.Batch, s, 2 * feats}}); err != nil {
		return err
	}
	dimT := sineDimT()
	const scale = float32(2 * math.Pi)
	offset := float32(0.5) // Deformable DETR's; the original DETR has none
	if n.NoOffset {
		offset = 0
	}
	y := out[0].data
	for img := 0; img < n.Batch; img++ {
		for _, lv := range n.Levels {
			notMask := func(r, c int) float32 {
				if n.Masked && in[0].data[img*s+lv.Start+r*lv.W+c] != 0 {
					return 0
				}
				return 1
			}
			// Cumulative sums of unpadded pixels down the rows and along the columns.
			yEmb := make([]float32, lv.H*lv.W)
			xEmb := make([]float32, lv.H*lv.W)
			for r := 0; r < lv.H; r++ {
				for c := 0; c < lv.W; c++ {
					v := notMask(r, c)
					yEmb[r*lv.W+c], xEmb[r*lv.W+c] = v, v
					if r > 0 {
						yEmb[r*lv.W+c] += yEmb[(r-1)*lv.W+c]
					}
					if c > 0 {
						xEmb[r*lv.W+c] += xEmb[r*lv.W+c-1]
					}
				}
			}
			// Each half of a position's features depends on one value, ey
			// or ex: without padding, ey is the same along a row and ex
			// down a column. A half is computed once per new value (the
			// last ey, the last ex of each column) and copied otherwise.
			lastY, lastX := float32(math.NaN()), make([]float32, lv.W)
			for c := range lastX {
				lastX[c] = float32(math.NaN())
			}
			var yFeat []float32
			xFeat := make([]float32, lv.W*feats)
			for r := 0; r < lv.H; r++ {
				for c := 0; c < lv.W; c++ {
					ey := (yEmb[r*lv.W+c] - offset) / (yEmb[(lv.H-1)*lv.W+c] + 1e-6) * scale
					ex := (xEmb[r*lv.W+c] - offset) / (xEmb[r*lv.W+lv.W-1] + 1e-6) * scale
					o := y[(img*s+lv.Start+r*lv.W+c)*2*feats:]
					if ey == lastY {
						copy(o[:feats], yFeat)
					} else {
						sineHalf(o[:feats], ey, dimT[:])
						lastY, yFeat = ey, o[:feats]
					}
					if xf := xFeat[c*feats : (c+1)*feats]; ex == lastX[c] {
						copy(o[feats:2*feats], xf)
					} else {
						sineHalf(o[feats:2*feats], ex, dimT[:])
						lastX[c] = ex
						copy(xf, o[feats:2*feats])
					}
				}
			}
		}
	}
	return nil
}

// flattenLevels writes each level's map [B, C, H, W] as tokens from its
// start row on: out[img, start + p, c] = in[img, c, p] (a transpose, or,
// for a blocked map, one run of 16 channels per pixel and block).
func (b *Backend) flattenLevels(n ops.FlattenLevels, in, out []*tensor) error {
	s := ops.MSDeformCore{Levels: n.Levels}.Values()
	var want []bench.Shape
	for _, lv := range n.Levels {
		want = append(want, bench.Shape{n.Batch, n.Chans, lv.H, lv.W})
	}
	if err := checkShapes("flatten_levels", in, want); err != nil {
		return err
	}
	if err := checkShapes("flatten_levels", out, []bench.Shape{{n.Batch, s, n.Chans}}); err != nil {
		return err
	}
	y := out[0].data
	for img := 0; img < n.Batch; img++ {
		for li, lv := range n.Levels {
			hw := lv.H * lv.W
			src := in[li].data[img*n.Chans*hw : (img+1)*n.Chans*hw]
			dst := y[(img*s+lv.Start)*n.Chans:]
			blocked := in[li].blocked
			// The level's tokens in runs, one per worker piece: each
			// writes whole token rows.
			parallelFor(b.threads, hw, flattenGrain(n.Chans), func(p0, p1 int) {
				if !blocked {
					kern.Transpose(n.Chans, p1-p0, src[p0:], hw, dst[p0*n.Chans:], n.Chans)
					return
				}
				blockedTokens(n.Chans, hw, p0, p1, src, dst)
			})
		}
	}
	return nil
}

// flattenGrain is the fewest tokens of chans channels a worker piece of
// flatten_levels or tokens_to_image moves: about 16 KiB, so that a small
// level stays on one worker.
func flattenGrain(chans int) int { return max(8, 4096/max(chans, 1)) }

// inverseSigmoid is Deformable DETR's inverse_sigmoid with eps 1e-5.
func inverseSigmoid(x float32) float32 {
	x = min(max(x, 0), 1)
	return float32(math.Log(float64(max(x, 1e-5)) / float64(max(1-x, 1e-5))))
}

func (b *Backend) boxDecode(n ops.BoxDecode, in, out []*tensor) error {
	if n.RefDims != 2 && n.RefDims != 4 {
		return fmt.Errorf("cpu: box_decode: references of %d values", n.RefDims)
	}
	if err := checkShapes("box_decode", in, []bench.Shape{{n.Batch, n.Queries, 4}, {n.Batch, n.Queries, n.RefDims}}); err != nil {
		return err
	}
	if err := checkShapes("box_decode", out, []bench.Shape{{n.Batch, n.Queries, 4}}); err != nil {
		return err
	}
	t, ref, y := in[0].data, in[1].data, out[0].data
	for r := 0; r < n.Batch*n.Queries; r++ {
		for j := 0; j < 4; j++ {
			v := t[r*4+j]
			if j < n.RefDims {
				v += inverseSigmoid(ref[r*n.RefDims+j])
			}
			y[r*4+j] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	}
	return nil
}

func (b *Backend) postProcess(n ops.PostProcess, in, out []*tensor) error {
	q, c, k := n.Queries, n.Classes, n.TopK
	want := []bench.Shape{{n.Batch, q, c}, {n.Batch, q, 4}}
	if n.Masked {
		want = append(want, bench.Shape{n.Batch, n.Height, n.Width})
	}
	if err := checkShapes("post_process", in, want); err != nil {
		return err
	}
	if err := checkShapes("post_process", out, []bench.Shape{{n.Batch, k}, {n.Batch, k}, {n.Batch, k, 4}}); err != nil {
		return err
	}
	if k > q*c {
		return fmt.Errorf("cpu: post_process: top %d of %d scores", k, q*c)
	}
	logits, boxes := in[0].data, in[1].data
	scores, labels, out4 := out[0].data, out[1].data, out[2].data
	prob := make([]float32, q*c)
	idx := make([]int, q*c)
	for img := 0; img < n.Batch; img++ {
		for i, v := range logits[img*q*c : (img+1)*q*c] {
			prob[i] = float32(1 / (1 + math.Exp(-float64(v))))
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool {
			pa, pb := prob[idx[a]], prob[idx[b]]
			return pa > pb || (pa == pb && idx[a] < idx[b])
		})
		w, h := float32(n.Width), float32(n.Height)
		if n.Masked {
			vh, vw := validExtent(in[2].data[img*n.Height*n.Width:(img+1)*n.Height*n.Width], n.Height, n.Width)
			w, h = float32(vw), float32(vh)
		}
		for j := 0; j < k; j++ {
			i := idx[j]
			scores[img*k+j] = prob[i]
			labels[img*k+j] = float32(i % c)
			bx := boxes[(img*q+i/c)*4:]
			cx, cy, bw, bh := bx[0], bx[1], bx[2], bx[3]
			o := out4[(img*k+j)*4:]
			o[0], o[1], o[2], o[3] = (cx-0.5*bw)*w, (cy-0.5*bh)*h, (cx+0.5*bw)*w, (cy+0.5*bh)*h
		}
	}
	return nil
}
