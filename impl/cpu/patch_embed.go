package cpu

import (
	"vitbench/bench"
	"vitbench/bench/ops"
	"vitbench/impl/cpu/internal/kern"
)

// patchEmbed runs timm's PatchEmbed as a GEMM: each image's patches are
// gathered into rows of C·PH·PW values in (c, ky, kx) order, the layout of
// the conv weight [E, C, PH, PW], and out = patches · weightᵀ + bias.
func (b *Backend) patchEmbed(n ops.PatchEmbed, in, out []*tensor) error {
	gh, gw := n.GridH(), n.GridW()
	tokens, k := gh*gw, n.InChans*n.PatchH*n.PatchW
	want := []bench.Shape{{n.Batch, n.InChans, n.Height, n.Width}, {n.EmbedDim, n.InChans, n.PatchH, n.PatchW}}
	if n.Bias {
		want = append(want, bench.Shape{n.EmbedDim})
	}
	if err := checkShapes("patch_embed", in, want); err != nil {
		return err
	}
	if err := checkRowShapes("patch_embed", out, []bench.Shape{{n.Batch, tokens, n.EmbedDim}}, 0); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	var bias []float32
	if n.Bias {
		bias = in[2].data
	}
	if in[0].blocked {
		b.patchEmbedBlocked(n, in, y)
		return nil
	}
	rows := n.Batch * tokens
	geom := kern.UnfoldGeom{C: n.InChans, H: n.Height, W: n.Width, KH: n.PatchH, KW: n.PatchW,
		SH: n.PatchH, SW: n.PatchW, DH: 1, DW: 1, OH: gh, OW: gw}
	pb := b.packedWeight(in[1], n.EmbedDim, k, true)
	// The patches are packed straight from the image inside the GEMM.
	b.windowsGEMM(windowsOf{kern.NewWindowsA(geom, x)}, rows, pb, kern.Epilogue{Bias: bias}, y, nil)
	return nil
}

// patchEmbedBlockable reports whether patch embedding n can read its
// image in the blocked layout (patchEmbedBlocked): whole channel blocks
// in and out.
func patchEmbedBlockable(n ops.PatchEmbed) bool {
	return n.InChans%kern.BlockLanes == 0 && n.EmbedDim%kern.BlockLanes == 0
}

// patchEmbedBlocked runs patch embedding n on a blocked image (VOLO's
// stem leaves one): as the blocked convolution of kernel and stride the
// patch size (on cpu-bf16 its bf16 tiles) into a blocked map in scratch,
// whose pixels then go to their token rows of y, instead of turning the
// image back into NCHW first and gathering its patches from there.
func (b *Backend) patchEmbedBlocked(n ops.PatchEmbed, in []*tensor, y []float32) {
	c := ops.Conv2d{Unfold: ops.Unfold{Batch: n.Batch, InChans: n.InChans, Height: n.Height, Width: n.Width,
		KernelH: n.PatchH, KernelW: n.PatchW, StrideH: n.PatchH, StrideW: n.PatchW, DilationH: 1, DilationW: 1},
		OutChans: n.EmbedDim, Bias: n.Bias}
	fw := b.foldConv(c, in[1:], convBlocked)
	hw := n.GridH() * n.GridW()
	img := n.EmbedDim * hw
	maps, release := b.scratch(n.Batch * img)
	defer release()
	b.runBlocked(c, fw.blocked, in[0].data, maps, nil)
	for i := range n.Batch {
		src, dst := maps[i*img:(i+1)*img], y[i*img:(i+1)*img]
		parallelFor(b.threads, hw, flattenGrain(n.EmbedDim), func(p0, p1 int) {
			blockedTokens(n.EmbedDim, hw, p0, p1, src, dst)
		})
	}
}
