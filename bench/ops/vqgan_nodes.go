package ops

// The nodes VQGAN adds (taming-transformers' first stage; docs/reference-notes.md,
// VQGAN): the Downsample's one-sided zero padding, the Upsample's nearest ×2
// interpolation and the codebook search of VectorQuantizer2. Its GroupNorm is
// ops.GroupNorm with Swish.

// PadRightBottom is F.pad(x, (0, 1, 0, 1)) on x [B, C, H, W]: one zero column
// on the right and one zero row at the bottom, out [B, C, H+1, W+1]:
//
//	out[b, c, y, x] = x[b, c, y, x]  for y < H and x < W, else 0
//
// taming's Downsample runs it before its 3×3 stride-2 convolution with
// padding 0 (not the same as padding 1 on every side).
type PadRightBottom struct {
	Batch, Chans, Height, Width int
}

// OpName implements bench.Node.
func (PadRightBottom) OpName() string { return "pad_right_bottom" }

// UpsampleNearest2x is F.interpolate(x, scale_factor=2, mode="nearest") on x
// [B, C, H, W]: out [B, C, 2H, 2W] with out[b, c, y, x] = x[b, c, ⌊y/2⌋, ⌊x/2⌋].
type UpsampleNearest2x struct {
	Batch, Chans, Height, Width int
}

// OpName implements bench.Node.
func (UpsampleNearest2x) OpName() string { return "upsample_nearest2x" }

// VectorQuantize is VectorQuantizer2's forward (taming-transformers, legacy
// and not alike: only gradients differ) on z [B, C, H, W] with the codebook
// e [Codes, C]. For each position n = (b, y, x), z_n = z[b, :, y, x]:
//
//	d[n, j] = (Σ_c z_n[c]² + Σ_c e[j, c]²) − 2·Σ_c z_n[c]·e[j, c]     (float32)
//	idx[n]  = the first j of the smallest d[n, j]
//	quant[b, c, y, x] = z_n[c] + (e[idx[n], c] − z_n[c])              (float32, the straight-through value)
//
// Outputs quant [B, C, H, W] and indices [B, H, W] (integers as float32,
// exact below 2²⁴). The straight-through value is not always the codebook
// row bit for bit; the expanded distance is not the direct Σ (z − e)², and
// near-ties may resolve differently under either (fixtures/FORMAT.md,
// vector_quantize, says how a near-tie is judged).
type VectorQuantize struct {
	Batch, Chans, Height, Width, Codes int
}

// OpName implements bench.Node.
func (VectorQuantize) OpName() string { return "vector_quantize" }

// MACs counts the distance products z·e (the norms add (BHW + Codes)·C).
func (v VectorQuantize) MACs() int64 {
	return int64(v.Batch) * int64(v.Height) * int64(v.Width) * int64(v.Codes) * int64(v.Chans)
}
