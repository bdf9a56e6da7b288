package ops

// The small nodes of Deformable DETR's transformer (docs/reference-notes.md,
// "Deformable DETR backbone and positions", "Deformable DETR encoder and
// decoder", "Box refinement and two-stage") around its attention and feed-forward layers.

// Add is the elementwise sum out = a + b of two tensors of Elems values.
type Add struct{ Elems int }

// OpName implements bench.Node.
func (Add) OpName() string { return "add" }

// Sigmoid is out = 1 / (1 + exp(−x)) elementwise over Elems values.
type Sigmoid struct{ Elems int }

// OpName implements bench.Node.
func (Sigmoid) OpName() string { return "sigmoid" }

// LevelEmbed adds each level's learned embedding to the position
// embeddings of its rows: from pos [N, S, D] and level_embed [L, D],
//
//	out[n, s, :] = pos[n, s, :] + level_embed[l, :]   for s in level l
type LevelEmbed struct {
	Batch, Dim int
	Levels     []Level
}

// OpName implements bench.Node.
func (LevelEmbed) OpName() string { return "level_embed" }

// ValidRatios is the fraction of each level that is not padding, from a
// padding mask [N, S] (nonzero = padded), as get_valid_ratio computes it:
//
//	valid_H = #rows r with mask[n, level l, r, 0] == 0
//	valid_W = #columns c with mask[n, level l, 0, c] == 0
//	out[n, l] = (valid_W / W_l, valid_H / H_l)
//
// Without a mask (Masked false, no input) every ratio is 1.
type ValidRatios struct {
	Batch  int
	Levels []Level
	Masked bool
}

// OpName implements bench.Node.
func (ValidRatios) OpName() string { return "valid_ratios" }

// EncoderRefPoints is the encoder's reference points from the valid
// ratios vr [N, L, 2] (get_reference_points): for every pixel (row, col)
// of every level l, and every level l2,
//
//	ref = ((col + 0.5) / (vr[n, l, 0]·W_l), (row + 0.5) / (vr[n, l, 1]·H_l))
//	out[n, s, l2, :] = ref · vr[n, l2, :]
//
// so out is [N, S, L, 2].
type EncoderRefPoints struct {
	Batch  int
	Levels []Level
}

// OpName implements bench.Node.
func (EncoderRefPoints) OpName() string { return "encoder_ref_points" }

// QueryEmbed splits the learned queries query_embed [Q, 2D] into the query
// position embeddings (the first D columns) and the initial decoder input
// (the last D), each repeated over the batch: out [N, Q, D] twice.
type QueryEmbed struct{ Batch, Queries, Dim int }

// OpName implements bench.Node.
func (QueryEmbed) OpName() string { return "query_embed" }

// ScaleRefs gives each decoder query its reference on every level: from
// ref [N, Q, R] (R = 2: points; R = 4: boxes cx, cy, w, h) and the valid
// ratios vr [N, L, 2],
//
//	out[n, q, l, :] = ref[n, q, :] · (vr[n, l, 0], vr[n, l, 1] [, vr[n, l, 0], vr[n, l, 1]])
type ScaleRefs struct{ Batch, Queries, Levels, RefDims int }

// OpName implements bench.Node.
func (ScaleRefs) OpName() string { return "scale_refs" }

// MergeQKV assembles nn.MultiheadAttention's projections when queries and
// keys come from one input and values from another: from a and b, both
// [N, T, 3D] (each input through the whole packed in_proj), out [N, T, 3D]
// takes the q and k columns [0, 2D) from a and the v columns [2D, 3D)
// from b, the layout AttentionCore reads.
type MergeQKV struct{ Batch, Tokens, Dim int }

// OpName implements bench.Node.
func (MergeQKV) OpName() string { return "merge_qkv" }

// Proposals are the two-stage encoder's box proposals, one per value row
// (gen_encoder_output_proposals): for pixel (row, col) of level l, with
// the level's valid height and width from the padding mask [N, S] (the
// whole level without one),
//
//	p = ((col + 0.5)/valid_W, (row + 0.5)/valid_H, 0.05·2^l, 0.05·2^l)
//	out[n, s, :] = log(p / (1 − p))   if every p_j is in (0.01, 0.99) and s is not padding
//	             = +∞                 otherwise
//
// so out is [N, S, 4].
type Proposals struct {
	Batch  int
	Levels []Level
	Masked bool
}

// OpName implements bench.Node.
func (Proposals) OpName() string { return "proposals" }

// ZeroInvalid copies x [N, S, D], zeroing the rows whose proposal
// [N, S, 4] has an infinite coordinate (padding or out of range).
type ZeroInvalid struct{ Batch, Rows, Dim int }

// OpName implements bench.Node.
func (ZeroInvalid) OpName() string { return "zero_invalid" }

// TopKRows selects, per image, the K rows with the largest score
// (column 0 of scores [N, S, C]; equal scores: lower row first, in
// descending order) and gathers their values [N, S, W] into out [N, K, W].
type TopKRows struct{ Batch, Rows, K, Classes, Width int }

// OpName implements bench.Node.
func (TopKRows) OpName() string { return "topk_rows" }

// ProposalPosEmbed is the two-stage decoder's query embedding of the
// selected proposals (get_proposal_pos_embed): from coords [N, Q, 4] (in
// logit space), with p = sigmoid(coords)·2π and dim_t[i] = 10000^(2⌊i/2⌋/128),
//
//	out[n, q, 128·k + 2j]     = sin(p[n, q, k] / dim_t[2j])
//	out[n, q, 128·k + 2j + 1] = cos(p[n, q, k] / dim_t[2j + 1])
//
// so out is [N, Q, 512].
type ProposalPosEmbed struct{ Batch, Queries int }

// OpName implements bench.Node.
func (ProposalPosEmbed) OpName() string { return "proposal_pos_embed" }

// SplitColumns splits x [N, R, 2D] into its first and last D columns:
// two outputs [N, R, D].
type SplitColumns struct{ Batch, Rows, Dim int }

// OpName implements bench.Node.
func (SplitColumns) OpName() string { return "split_columns" }
