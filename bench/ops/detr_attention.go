package ops

import "vitbench/bench"

// The nodes DETR's transformer adds (docs/reference-notes.md,
// "DETR"): nn.MultiheadAttention's core over
// separate query, key and value tensors with a key padding mask, and the
// stacking of every decoder layer's output.

// MHACore is the middle of nn.MultiheadAttention when queries, keys and
// values come from different tensors (DETR's encoder and decoder): per
// image b and head h, with q, k and v read as column slices of wider
// tensors (q [B, Queries, QLd] from column QOff, k [B, Keys, KLd] from
// KOff, v [B, Keys, VLd] from VOff, each head h·HeadDim further),
//
//	S[i, j] = scale · Σ_d q[b, i, QOff + h·HeadDim + d] · k[b, j, KOff + h·HeadDim + d]
//	S[i, j] = −∞ where mask[b, j] ≠ 0 (key_padding_mask, when Masked)
//	P = softmax(S) over keys (numerically stable)
//	out[b, i, h·HeadDim + d] = Σ_j P[i, j] · v[b, j, VOff + h·HeadDim + d]
//
// so out is [B, Queries, Heads·HeadDim]. A query whose every key is
// masked has no defined output (PyTorch gives NaN); padded images always
// leave unpadded keys.
type MHACore struct {
	Batch, Queries, Keys, Heads, HeadDim int
	Scale                                float64
	QLd, QOff, KLd, KOff, VLd, VOff      int
	Masked                               bool
}

// OpName implements bench.Node.
func (MHACore) OpName() string { return "mha_core" }

// MACs counts the two attention products.
func (a MHACore) MACs() int64 {
	return 2 * int64(a.Batch) * int64(a.Heads) * int64(a.Queries) * int64(a.Keys) * int64(a.HeadDim)
}

// ScratchBytes implements bench.ScratchNode: one block of score rows
// against every key per worker, at most every (image, head) pair's rows.
func (a MHACore) ScratchBytes(workers int) int64 {
	q, k := int64(a.Queries), int64(a.Keys)
	rows := min(bench.MulSat(int64(a.Batch), int64(a.Heads), q), bench.MulSat(int64(workers), q))
	return bench.MulSat(rows, k, 4)
}

// Concat writes Parts inputs of Elems values each one after another:
// out[p·Elems + i] = in_p[i], so out holds Parts·Elems values (DETR's
// stack of the decoder layers' outputs, hs [L, N, Q, D]).
type Concat struct{ Parts, Elems int }

// OpName implements bench.Node.
func (Concat) OpName() string { return "concat" }

// DETRQueries is the start of DETR's decoder: from query_embed.weight
// [Q, D], the query positions qpos[b] = weight for every image and the
// decoder input tgt = 0: two outputs [N, Q, D].
type DETRQueries struct{ Batch, Queries, Dim int }

// OpName implements bench.Node.
func (DETRQueries) OpName() string { return "detr_queries" }

// DETRPostProcess is DETR's PostProcess: from logits [N, Q, C+1] (the last
// column is "no object"), boxes [N, Q, 4] (cx, cy, w, h) and, when Masked,
// the image mask [N, H, W], for every query
//
//	p = softmax(logits[n, q, :]);  label = argmax_{c < C} p[c] (ties: lower c);  score = p[label]
//	box = (cx − w/2, cy − h/2, cx + w/2, cy + h/2) · (W_n, H_n, W_n, H_n)
//
// with (H_n, W_n) the image's valid size (unpadded rows of column 0 and
// columns of row 0; H and W without a mask): scores [N, Q], labels [N, Q]
// (as float32) and boxes [N, Q, 4]. Every query is kept, in query order.
type DETRPostProcess struct {
	Batch, Queries, Classes int // Classes counts the real classes, without "no object"
	Height, Width           int
	Masked                  bool
}

// OpName implements bench.Node.
func (DETRPostProcess) OpName() string { return "detr_post_process" }

// RowSlice copies rows [Off, Off+Rows) of a row-major matrix x [R, Cols]
// (a vector [R] with Cols 1): out[i, j] = x[Off + i, j], out [Rows, Cols].
// DETR's graph cuts nn.MultiheadAttention's packed in_proj_weight and
// in_proj_bias into the q, k and v blocks each input needs, so no input
// goes through the whole packed projection.
type RowSlice struct{ Rows, Cols, Off int }

// OpName implements bench.Node.
func (RowSlice) OpName() string { return "row_slice" }
