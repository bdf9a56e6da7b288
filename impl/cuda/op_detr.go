package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// detrNode runs Deformable DETR's small nodes (detr.cu).
func (b *Backend) detrNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.ValidRatios:
		lv, s, err := levelsAndRows(n.Levels)
		if err != nil {
			return nil, err
		}
		var want []int64
		if n.Masked {
			want = []int64{int64(n.Batch) * s}
		}
		if err := checkElems("valid_ratios", "input", in, want...); err != nil {
			return nil, err
		}
		if err := checkElems("valid_ratios", "output", out, int64(n.Batch)*int64(len(n.Levels))*2); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "valid_ratios_f32", int64(n.Batch)*int64(len(n.Levels)), maskOf(in, n.Masked, 0),
				out[0].ptr, i32(n.Batch), lv)
		}, nil
	case ops.EncoderRefPoints:
		lv, s, err := levelsAndRows(n.Levels)
		if err != nil {
			return nil, err
		}
		l := int64(len(n.Levels))
		if err := checkElems("encoder_ref_points", "input", in, int64(n.Batch)*l*2); err != nil {
			return nil, err
		}
		if err := checkElems("encoder_ref_points", "output", out, int64(n.Batch)*s*l*2); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "encoder_ref_points_f32", int64(n.Batch)*s*l, in[0].ptr, out[0].ptr, i32(n.Batch), lv)
		}, nil
	case ops.ScaleRefs:
		if n.RefDims != 2 && n.RefDims != 4 {
			return nil, fmt.Errorf("cuda: scale_refs: references of %d values", n.RefDims)
		}
		nq, l, r := int64(n.Batch)*int64(n.Queries), int64(n.Levels), int64(n.RefDims)
		if err := checkElems("scale_refs", "input", in, nq*r, int64(n.Batch)*l*2); err != nil {
			return nil, err
		}
		if err := checkElems("scale_refs", "output", out, nq*l*r); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "scale_refs_f32", nq*l*r, in[0].ptr, in[1].ptr, out[0].ptr, i32(n.Batch), i32(n.Queries),
				i32(n.Levels), i32(n.RefDims))
		}, nil
	case ops.LevelMasks:
		lv, s, err := levelsAndRows(n.Levels)
		if err != nil {
			return nil, err
		}
		if err := checkElems("level_masks", "input", in, int64(n.Batch)*int64(n.Height)*int64(n.Width)); err != nil {
			return nil, err
		}
		if err := checkElems("level_masks", "output", out, int64(n.Batch)*s); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "level_masks_f32", int64(n.Batch)*s, in[0].ptr, out[0].ptr, i32(n.Batch), i32(n.Height),
				i32(n.Width), lv)
		}, nil
	case ops.PositionSine:
		lv, s, err := levelsAndRows(n.Levels)
		if err != nil {
			return nil, err
		}
		var want []int64
		if n.Masked {
			want = []int64{int64(n.Batch) * s}
		}
		if err := checkElems("position_sine", "input", in, want...); err != nil {
			return nil, err
		}
		rows := int64(n.Batch) * s
		if err := checkElems("position_sine", "output", out, rows*256); err != nil {
			return nil, err
		}
		return func() error {
			parts, release, err := b.scratchParts(rows * 2 * 4)
			if err != nil {
				return err
			}
			defer release()
			off := float32(0.5) // Deformable DETR's; the original DETR has none
			if n.NoOffset {
				off = 0
			}
			if err := b.launch1D("detr.cu", "sine_coords_f32", rows, maskOf(in, n.Masked, 0), parts[0], i32(n.Batch), lv, off); err != nil {
				return err
			}
			return b.launch1D("detr.cu", "position_sine_f32", rows*256, parts[0], out[0].ptr, rows, newSineTable())
		}, nil
	case ops.BoxDecode:
		if n.RefDims != 2 && n.RefDims != 4 {
			return nil, fmt.Errorf("cuda: box_decode: references of %d values", n.RefDims)
		}
		rows := int64(n.Batch) * int64(n.Queries)
		if err := checkElems("box_decode", "input", in, rows*4, rows*int64(n.RefDims)); err != nil {
			return nil, err
		}
		if err := checkElems("box_decode", "output", out, rows*4); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "box_decode_f32", rows*4, in[0].ptr, in[1].ptr, out[0].ptr, rows, i32(n.RefDims))
		}, nil
	case ops.Proposals:
		lv, s, err := levelsAndRows(n.Levels)
		if err != nil {
			return nil, err
		}
		var want []int64
		if n.Masked {
			want = []int64{int64(n.Batch) * s}
		}
		if err := checkElems("proposals", "input", in, want...); err != nil {
			return nil, err
		}
		if err := checkElems("proposals", "output", out, int64(n.Batch)*s*4); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "proposals_f32", int64(n.Batch)*s, maskOf(in, n.Masked, 0), out[0].ptr, i32(n.Batch), lv)
		}, nil
	case ops.ZeroInvalid:
		rows, d := int64(n.Batch)*int64(n.Rows), int64(n.Dim)
		if err := checkElems("zero_invalid", "input", in, rows*d, rows*4); err != nil {
			return nil, err
		}
		if err := checkElems("zero_invalid", "output", out, rows*d); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "zero_invalid_f32", rows*d, in[0].ptr, in[1].ptr, out[0].ptr, rows, i32(n.Dim))
		}, nil
	case ops.TopKRows:
		if n.K > n.Rows {
			return nil, fmt.Errorf("cuda: topk_rows: %d of %d rows", n.K, n.Rows)
		}
		bs := int64(n.Batch) * int64(n.Rows)
		if err := checkElems("topk_rows", "input", in, bs*int64(n.Classes), bs*int64(n.Width)); err != nil {
			return nil, err
		}
		if err := checkElems("topk_rows", "output", out, int64(n.Batch)*int64(n.K)*int64(n.Width)); err != nil {
			return nil, err
		}
		return func() error {
			parts, release, err := b.scratchParts(bs * 4)
			if err != nil {
				return err
			}
			defer release()
			if err := b.rankDesc(in[0].ptr, n.Classes, n.Rows, n.Batch, parts[0]); err != nil {
				return err
			}
			return b.launch1D("detr.cu", "topk_gather_f32", bs, parts[0], in[1].ptr, out[0].ptr, i32(n.Batch), i32(n.Rows), i32(n.K), i32(n.Width))
		}, nil
	case ops.ProposalPosEmbed:
		rows := int64(n.Batch) * int64(n.Queries)
		if err := checkElems("proposal_pos_embed", "input", in, rows*4); err != nil {
			return nil, err
		}
		if err := checkElems("proposal_pos_embed", "output", out, rows*512); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("detr.cu", "proposal_pos_embed_f32", rows*512, in[0].ptr, out[0].ptr, rows, newSineTable())
		}, nil
	case ops.PostProcess:
		return b.postProcess(n, in, out)
	}
	return nil, fmt.Errorf("cuda: no detector kernel for %T", node)
}

// postProcess runs ops.PostProcess: the sigmoid of every logit, their
// ranks (stable, descending) and the top K written out with their boxes.
func (b *Backend) postProcess(n ops.PostProcess, in, out []*tensor) (func() error, error) {
	qc := int64(n.Queries) * int64(n.Classes)
	if int64(n.TopK) > qc {
		return nil, fmt.Errorf("cuda: post_process: top %d of %d scores", n.TopK, qc)
	}
	bsz := int64(n.Batch)
	want := []int64{bsz * qc, bsz * int64(n.Queries) * 4}
	if n.Masked {
		want = append(want, bsz*int64(n.Height)*int64(n.Width))
	}
	if err := checkElems("post_process", "input", in, want...); err != nil {
		return nil, err
	}
	k := int64(n.TopK)
	if err := checkElems("post_process", "output", out, bsz*k, bsz*k, bsz*k*4); err != nil {
		return nil, err
	}
	return func() error {
		parts, release, err := b.scratchParts(bsz*qc*4, bsz*qc*4)
		if err != nil {
			return err
		}
		defer release()
		prob, rank := parts[0], parts[1]
		if err := b.launch1D("elementwise.cu", "sigmoid_f32", bsz*qc, in[0].ptr, prob, bsz*qc); err != nil {
			return err
		}
		if err := b.rankDesc(prob, 1, int(qc), n.Batch, rank); err != nil {
			return err
		}
		return b.launch1D("detr.cu", "post_process_f32", bsz*qc, prob, rank, in[1].ptr, maskOf(in, n.Masked, 2),
			out[0].ptr, out[1].ptr, out[2].ptr, i32(n.Batch), i32(n.Queries), i32(n.Classes), i32(n.TopK), i32(n.Height), i32(n.Width))
	}, nil
}

// rankDesc queues the stable descending ranks of batch rows of n scores
// (score i of row y at score[(y·n + i)·stride]) into rank (int32).
func (b *Backend) rankDesc(score uint64, stride, n, batch int, rank uint64) error {
	if n == 0 || batch == 0 {
		return nil
	}
	if batch > 65535 {
		return fmt.Errorf("ranking %d images exceeds the grid", batch)
	}
	return b.launch("detr.cu", "rank_desc_f32", dim3{uint32((n + 255) / 256), uint32(batch), 1}, dim3{256, 1, 1}, 0,
		score, i32(stride), i32(n), rank)
}

// levelsAndRows converts the level table and returns S.
func levelsAndRows(ls []ops.Level) (*levelsArg, int64, error) {
	lv, err := levelsOf(ls)
	if err != nil {
		return nil, 0, err
	}
	return lv, int64(ops.MSDeformCore{Levels: ls}.Values()), nil
}

// maskOf is input i's address when the node has a mask, else null.
func maskOf(in []*tensor, masked bool, i int) uint64 {
	if !masked {
		return 0
	}
	return in[i].ptr
}
