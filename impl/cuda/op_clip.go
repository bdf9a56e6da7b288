package cuda

import (
	"fmt"

	"vitbench/bench/ops"
)

// clipNode runs CLIP's nodes (clip.cu).
func (b *Backend) clipNode(node any, in, out []*tensor) (func() error, error) {
	switch n := node.(type) {
	case ops.TokenEmbed:
		rows, w := int64(n.Batch)*int64(n.Context), int64(n.Width)
		if err := checkElems("token_embed", "input", in, rows, int64(n.Vocab)*w, int64(n.Positions())*w); err != nil {
			return nil, err
		}
		if err := checkElems("token_embed", "output", out, rows*w); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("clip.cu", "token_embed_f32", rows*w, in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr,
				i32(n.Batch), i32(n.Context), i32(n.Vocab), i32(n.Width))
		}, nil
	case ops.EOTPool:
		rows, w := int64(n.Batch)*int64(n.Context), int64(n.Width)
		if err := checkElems("eot_pool", "input", in, rows*w, rows); err != nil {
			return nil, err
		}
		if err := checkElems("eot_pool", "output", out, int64(n.Batch)*w); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("clip.cu", "eot_pool_f32", int64(n.Batch)*w, in[0].ptr, in[1].ptr, out[0].ptr,
				i32(n.Batch), i32(n.Context), i32(n.Width))
		}, nil
	case ops.ClipLogits:
		e := int64(n.Dim)
		if err := checkElems("clip_logits", "input", in, int64(n.Images)*e, int64(n.Texts)*e, 1); err != nil {
			return nil, err
		}
		res := int64(n.Images) * int64(n.Texts)
		if err := checkElems("clip_logits", "output", out, res); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("clip.cu", "clip_logits_f32", res, in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr,
				i32(n.Images), i32(n.Texts), i32(n.Dim))
		}, nil
	case ops.AttnPoolTokens:
		t, c := int64(n.Tokens), int64(n.Chans)
		if err := checkElems("attn_pool_tokens", "input", in, int64(n.Batch)*t*c, (t+1)*c); err != nil {
			return nil, err
		}
		res := int64(n.Batch) * (t + 1) * c
		if err := checkElems("attn_pool_tokens", "output", out, res); err != nil {
			return nil, err
		}
		return func() error {
			return b.launch1D("clip.cu", "attn_pool_tokens_f32", res, in[0].ptr, in[1].ptr, out[0].ptr,
				i32(n.Batch), i32(n.Tokens), i32(n.Chans))
		}, nil
	}
	return nil, fmt.Errorf("cuda: clipNode given %T", node)
}
