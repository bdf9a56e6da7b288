package ops

// The nodes of the Deformable DETR detector around its transformer:
// ResNet-50's pooling and residual ReLU, the input projections' GroupNorm,
// masks and sine position embeddings per level, and the heads'
// box decoding and post-processing (docs/reference-notes.md, "Deformable DETR
// backbone and positions" and "Deformable DETR heads and post-processing").

// ReLU is out = max(x, 0) elementwise over Elems values.
type ReLU struct{ Elems int }

// OpName implements bench.Node.
func (ReLU) OpName() string { return "relu" }

// MaxPool2d is nn.MaxPool2d(kernel, stride, padding) on x [B, C, H, W]
// (padding reads as −∞): out [B, C, OH, OW] with
// OH = (H + 2·pad − kernel)/stride + 1.
type MaxPool2d struct {
	Batch, Chans, Height, Width int
	Kernel, Stride, Pad         int
}

// OpName implements bench.Node.
func (MaxPool2d) OpName() string { return "max_pool2d" }

// OutH is the output height.
func (m MaxPool2d) OutH() int { return (m.Height+2*m.Pad-m.Kernel)/m.Stride + 1 }

// OutW is the output width.
func (m MaxPool2d) OutW() int { return (m.Width+2*m.Pad-m.Kernel)/m.Stride + 1 }

// GroupNorm is nn.GroupNorm(groups, chans, eps) on x [B, C, H, W] with the
// affine weight and bias [C]: per image and group of C/groups channels,
//
//	μ, σ² = mean and biased variance over the group's channels and pixels
//	out[b, c, y, x] = (x[b, c, y, x] − μ) / √(σ² + eps) · weight[c] + bias[c]
//
// With Swish (VQGAN's Normalize followed by its nonlinearity) the result
// r then becomes r·sigmoid(r).
type GroupNorm struct {
	Batch, Chans, Groups, Height, Width int
	Eps                                 float64
	Swish                               bool
}

// OpName implements bench.Node.
func (GroupNorm) OpName() string { return "group_norm" }

// LevelMasks resizes the image padding mask [N, H, W] (nonzero = padded)
// to every level with F.interpolate's nearest rule
// (source index = min(⌊i · (in/out)⌋, in − 1), the ratio in float32) and
// writes the levels flattened and concatenated: out [N, S].
type LevelMasks struct {
	Batch, Height, Width int
	Levels               []Level
}

// OpName implements bench.Node.
func (LevelMasks) OpName() string { return "level_masks" }

// PositionSine is Deformable DETR's PositionEmbeddingSine (128 features a
// side, temperature 10000, normalized with its −0.5 offset) for every
// level, from the level masks [N, S] (or none: no padding), written in the
// flattened token layout out [N, S, 256]: channels 0..127 from the row
// embedding, 128..255 from the column one, each
//
//	e = (cumsum of unpadded pixels along the axis − 0.5) / (its last value + 1e-6) · 2π
//	channel 2j = sin(e / 10000^(2j/128)),  channel 2j+1 = cos(e / 10000^(2j/128))
//
// NoOffset gives the original DETR's flavour, the same without the −0.5.
type PositionSine struct {
	Batch    int
	Levels   []Level
	Masked   bool
	NoOffset bool
}

// OpName implements bench.Node.
func (PositionSine) OpName() string { return "position_sine" }

// FlattenLevels writes len(Levels) feature maps [N, C, H_l, W_l] as one
// token tensor out [N, S, C] (src.flatten(2).transpose(1, 2), concatenated).
type FlattenLevels struct {
	Batch, Chans int
	Levels       []Level
}

// OpName implements bench.Node.
func (FlattenLevels) OpName() string { return "flatten_levels" }

// BoxDecode is the detector's box head output and the decoder's box
// refinement: from the bbox MLP's output t [N, Q, 4] and the reference
// ref [N, Q, R] (R = 2 points or 4 boxes),
//
//	out[.., j] = sigmoid(t[.., j] + inverse_sigmoid(ref[.., j]))   for j < R
//	out[.., j] = sigmoid(t[.., j])                                 for R ≤ j < 4
//
// with inverse_sigmoid(x) = log(max(x, 1e-5) / max(1 − x, 1e-5)), x
// clamped to [0, 1] first: boxes (cx, cy, w, h), normalized.
type BoxDecode struct{ Batch, Queries, RefDims int }

// OpName implements bench.Node.
func (BoxDecode) OpName() string { return "box_decode" }

// PostProcess is Deformable DETR's PostProcess: from logits [N, Q, C],
// boxes [N, Q, 4] (cx, cy, w, h) and, when Masked, the image mask
// [N, H, W], per image the TopK largest sigmoid scores over all Q·C pairs
// (ties: lower index first), their labels (index mod C, as float32) and
// boxes (query index / C) as (x0, y0, x1, y1) scaled by the image's valid
// width and height (unpadded columns of row 0, unpadded rows of column 0;
// W and H without a mask): scores [N, K], labels [N, K], boxes [N, K, 4].
type PostProcess struct {
	Batch, Queries, Classes, TopK int
	Height, Width                 int
	Masked                        bool
}

// OpName implements bench.Node.
func (PostProcess) OpName() string { return "post_process" }
