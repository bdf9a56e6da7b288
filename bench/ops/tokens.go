package ops

import "vitbench/bench"

// TokensPrefix puts the class token (and, for distilled DeiT, the
// distillation token) in front of the patch tokens and adds the position
// embedding, as timm's VisionTransformer._pos_embed does:
//
//	out[b, 0] = cls[0, 0] + pos[0, 0];  out[b, 1] = dist[0, 0] + pos[0, 1] (when Prefix = 2)
//	out[b, Prefix+t] = patches[b, t] + pos[0, Prefix+t]
//
// Inputs: patches [B, N, E], cls_token [1, 1, E], dist_token (Prefix = 2),
// pos_embed [1, N+Prefix, E]; output [B, N+Prefix, E].
type TokensPrefix struct {
	Batch, Patches, Dim, Prefix int
}

// OpName implements bench.Node.
func (TokensPrefix) OpName() string { return "tokens_prefix" }

// TakeToken copies token Index of x [B, T, E] to out [B, 1, E].
type TakeToken struct {
	Batch, Tokens, Dim, Index int
}

// OpName implements bench.Node.
func (TakeToken) OpName() string { return "take_token" }

// Average is out = (a + b) / 2 elementwise, for distilled DeiT's two heads.
type Average struct {
	Shape bench.Shape
}

// OpName implements bench.Node.
func (Average) OpName() string { return "average" }

// Reshape copies x to out, which has the same elements in another shape.
type Reshape struct {
	From, To bench.Shape
}

// OpName implements bench.Node.
func (Reshape) OpName() string { return "reshape" }

// TokensToImage turns tokens back into an image, T2T-ViT's
// transpose(1, 2).reshape(B, C, H, W): out[b, c, y, x] = in[b, y·W + x, c].
type TokensToImage struct {
	Batch, Chans, Height, Width int
}

// OpName implements bench.Node.
func (TokensToImage) OpName() string { return "tokens_to_image" }
