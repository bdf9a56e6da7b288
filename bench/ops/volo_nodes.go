package ops

// The nodes of VOLO (docs/reference-notes.md, "VOLO") that its components and network
// need beyond the shared GEMM, LayerNorm, attention and convolution nodes.
// Tensors between VOLO blocks are channels-last: [B, H, W, C], which is
// also [B, H·W, C] token-major.

// AvgPoolNHWC is AvgPool2d(kernel = stride = K, ceil_mode=True, padding 0)
// on a channels-last image: the pooling in front of outlook attention's
// attention Linear. For x [B, H, W, C] and out [B, ⌈H/K⌉, ⌈W/K⌉, C]:
//
//	for b, oy, ox, c:
//	  rows = [oy·K, min(oy·K+K, H)), cols = [ox·K, min(ox·K+K, W))
//	  out[b, oy, ox, c] = Σ x[b, y, x, c] over rows×cols / (|rows|·|cols|)
//
// (a partial window at the bottom or right edge averages its valid pixels
// only, as PyTorch's ceil mode does without padding).
type AvgPoolNHWC struct {
	Batch, Height, Width, Chans, K int
}

// OpName implements bench.Node.
func (AvgPoolNHWC) OpName() string { return "avg_pool_nhwc" }

// OutH is ⌈H/K⌉.
func (a AvgPoolNHWC) OutH() int { return (a.Height + a.K - 1) / a.K }

// OutW is ⌈W/K⌉.
func (a AvgPoolNHWC) OutW() int { return (a.Width + a.K - 1) / a.K }

// OutlookCore is the middle of VOLO's OutlookAttention: the unfold of v,
// the per-window softmax attention and the fold, in one node that never
// stores the unfolded tensor. Inputs: v [B, H, W, C] (channels-last, head
// h owning channels h·D … h·D+D−1, D = C/Heads) and logits
// [B, GH, GW, Heads·K⁴] (the attention Linear's output on the pooled
// image; GH = (H+2P−K)/S+1, GW likewise). Output out [B, H, W, C]. As a
// plain loop, with K² window positions numbered i = ky·K + kx:
//
//	out = 0
//	for b, wy, wx, h:
//	  for i: A[i, :] = softmax_j(Scale · logits[b, wy, wx, h·K⁴ + i·K² + j])
//	  for i = (ky, kx): y, x = wy·S−P+ky, wx·S−P+kx; skip if outside the image
//	    for j = (jy, jx): sy, sx = wy·S−P+jy, wx·S−P+jx; skip if outside
//	      out[b, y, x, h·D+d] += A[i, j] · v[b, sy, sx, h·D+d]   (every d < D)
//
// Overlapping windows add up (F.fold sums); padding reads and writes
// nothing.
type OutlookCore struct {
	Batch, Height, Width, Dim, Heads int
	K, Pad, Stride                   int
	Scale                            float64
}

// OpName implements bench.Node.
func (OutlookCore) OpName() string { return "outlook_core" }

// GridH is the number of window rows, (H+2P−K)/S+1.
func (o OutlookCore) GridH() int { return (o.Height+2*o.Pad-o.K)/o.Stride + 1 }

// GridW is the number of window columns.
func (o OutlookCore) GridW() int { return (o.Width+2*o.Pad-o.K)/o.Stride + 1 }

// MACs counts attn @ v: K² outputs of K² terms for every window and channel.
func (o OutlookCore) MACs() int64 {
	k2 := int64(o.K * o.K)
	return int64(o.Batch) * int64(o.GridH()*o.GridW()) * k2 * k2 * int64(o.Dim)
}

// PatchRowsNHWC gathers the non-overlapping P×P patches of a
// channels-last image into rows, ordered as a Conv2d weight [O, C, P, P]
// flattens, so that a k = s = P convolution (VOLO's Downsample) is one
// GEMM on them. For x [B, H, W, C], out [B, H/P, W/P, C·P·P] (floor):
//
//	out[b, gy, gx, c·P·P + ky·P + kx] = x[b, gy·P+ky, gx·P+kx, c]
type PatchRowsNHWC struct {
	Batch, Height, Width, Chans, P int
}

// OpName implements bench.Node.
func (PatchRowsNHWC) OpName() string { return "patch_rows_nhwc" }

// AddBroadcast adds one [Elems] tensor to every image of x [B, Elems]:
// out[b, i] = x[b, i] + y[i] (VOLO's position embedding).
type AddBroadcast struct{ Batch, Elems int }

// OpName implements bench.Node.
func (AddBroadcast) OpName() string { return "add_broadcast" }

// PrependToken puts a learned token in front of every image's tokens: for
// x [B, N, E] and token [1, 1, E], out [B, N+1, E] with out[b, 0] = token
// and out[b, 1+n] = x[b, n] (VOLO's class token, without a position
// embedding).
type PrependToken struct{ Batch, Tokens, Dim int }

// OpName implements bench.Node.
func (PrependToken) OpName() string { return "prepend_token" }

// PutToken copies x [B, N, E] to out and replaces token Index of every
// image with tok [B, 1, E]: ClassBlock's cat(cls, x[:, 1:]).
type PutToken struct{ Batch, Tokens, Dim, Index int }

// OpName implements bench.Node.
func (PutToken) OpName() string { return "put_token" }

// ClassAttnCore is the middle of VOLO's ClassAttention: one query per
// image attends over all N tokens. Inputs q [B, 1, H·D] and kv
// [B, N, 2·H·D] (k in the first H·D channels, v in the rest, head-major);
// output out [B, 1, H·D]:
//
//	for b, h:
//	  s[j] = Scale · Σ_d q[b, 0, h·D+d] · kv[b, j, h·D+d]
//	  p = softmax(s)
//	  out[b, 0, h·D+d] = Σ_j p[j] · kv[b, j, H·D + h·D+d]
type ClassAttnCore struct {
	Batch, Tokens, Heads, HeadDim int
	Scale                         float64
}

// OpName implements bench.Node.
func (ClassAttnCore) OpName() string { return "class_attn_core" }

// MACs counts the scores and the weighted sum.
func (c ClassAttnCore) MACs() int64 {
	return 2 * int64(c.Batch) * int64(c.Tokens) * int64(c.Heads*c.HeadDim)
}

// AuxMerge is VOLO's eval output from the class-token logits cls
// [B, 1, Classes] and the auxiliary head's logits on every token aux
// [B, N, Classes], whose first token (the class token) is skipped:
//
//	out[b, c] = cls[b, 0, c] + 0.5 · max over n = 1 … N−1 of aux[b, n, c]
type AuxMerge struct{ Batch, Tokens, Classes int }

// OpName implements bench.Node.
func (AuxMerge) OpName() string { return "aux_merge" }
