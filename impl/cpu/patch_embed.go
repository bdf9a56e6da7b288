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
	rows := n.Batch * tokens
	geom := kern.UnfoldGeom{C: n.InChans, H: n.Height, W: n.Width, KH: n.PatchH, KW: n.PatchW,
		SH: n.PatchH, SW: n.PatchW, DH: 1, DW: 1, OH: gh, OW: gw}
	pb := b.packedWeight(in[1], n.EmbedDim, k, true)
	// The patches are packed straight from the image inside the GEMM.
	b.windowsGEMM(windowsOf{kern.NewWindowsA(geom, x)}, rows, pb, kern.Epilogue{Bias: bias}, y, nil)
	return nil
}
