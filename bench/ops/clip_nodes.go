package ops

// The nodes of OpenAI's CLIP around its transformers (docs/reference-notes.md,
// CLIP): the text tower's token embedding and end-of-text pooling, and the
// network's normalized similarity logits.

// TokenEmbed is the text tower's input: token ids text [B, L] (integers
// stored as float32, exact up to 2²⁴), the embedding table [V, W] and the
// learned positions [L, W]:
//
//	out[b, t, :] = table[text[b, t], :] + pos[t, :]
//
// An id that is not an integer in [0, V) is an error (the CUDA backend
// writes NaN for that token instead). PosRows, when not 0, is the number of
// rows of pos (at least Context): minGPT's pos_emb [block_size, W], of
// which a sequence of Context ≤ block_size tokens reads the first rows.
type TokenEmbed struct {
	Batch, Context, Vocab, Width int
	PosRows                      int
}

// Positions is the number of rows of pos.
func (t TokenEmbed) Positions() int {
	if t.PosRows > 0 {
		return t.PosRows
	}
	return t.Context
}

// OpName implements bench.Node.
func (TokenEmbed) OpName() string { return "token_embed" }

// EOTPool takes, for every sequence, the token at the end-of-text position
// — the first index of the largest id, as torch.argmax picks (the EOT id
// 49407 is the largest of CLIP's vocabulary) — from x [B, L, W] and the
// ids text [B, L]:
//
//	out[b, 0, :] = x[b, argmax_t text[b, t], :]      out [B, 1, W]
type EOTPool struct {
	Batch, Context, Width int
}

// OpName implements bench.Node.
func (EOTPool) OpName() string { return "eot_pool" }

// ClipLogits is CLIP.forward's head: from image features img [B, E], text
// features txt [T, E] and the scalar logit_scale s [],
//
//	î = img[i] / ‖img[i]‖₂;  t̂ = txt[j] / ‖txt[j]‖₂
//	out[i, j] = exp(s) · Σ_e î[e]·t̂[e]        out [B, T] (logits_per_image)
type ClipLogits struct {
	Images, Texts, Dim int
}

// OpName implements bench.Node.
func (ClipLogits) OpName() string { return "clip_logits" }

// macs counts the similarity products (the norms add 2·(B+T)·E more).
func (c ClipLogits) macs() int64 { return int64(c.Images) * int64(c.Texts) * int64(c.Dim) }
