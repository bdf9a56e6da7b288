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
	if err := checkShapes("patch_embed", out, []bench.Shape{{n.Batch, tokens, n.EmbedDim}}); err != nil {
		return err
	}
	x, y := in[0].data, out[0].data
	var bias []float32
	if n.Bias {
		bias = in[2].data
	}
	rows := n.Batch * tokens
	patches, release := b.scratch(rows * k)
	defer release()
	geom := kern.UnfoldGeom{C: n.InChans, H: n.Height, W: n.Width, KH: n.PatchH, KW: n.PatchW,
		SH: n.PatchH, SW: n.PatchW, DH: 1, DW: 1, OH: gh, OW: gw}
	pb := b.packedWeight(in[1], n.EmbedDim, k, true)
	// One parallel region: each worker gathers its own rows of patches and
	// multiplies them while they are still in its cache.
	forRowTiles(b.threads, rows, pb, func(r0, r1 int) {
		for r := r0; r < r1; {
			img, tok := r/tokens, r%tokens
			end := min(r1, (img+1)*tokens)
			kern.UnfoldRows(geom, x[img*n.InChans*n.Height*n.Width:], patches[r*k:], tok, tok+end-r)
			r = end
		}
	}, patches, k, y, n.EmbedDim, kern.Epilogue{Bias: bias})
	return nil
}
