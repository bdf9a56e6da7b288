//go:build mutation

package ops

import "vitbench/internal/mutation"

func init() {
	mutation.Register(mutation.Info{Name: EncoderPreNorm, Site: "ddetr_transformer graph",
		Doc: "Deformable DETR's encoder layers pre-norm (x + attn(norm(x))) instead of post-norm (norm(x + attn(x)))"})
	mutation.Register(mutation.Info{Name: DETROffset, Site: "detr_transformer graph",
		Doc: "DETR's sine positions with Deformable DETR's -0.5 offset ((cumsum - 0.5) / total instead of cumsum / total)"})
	mutation.Register(mutation.Info{Name: DETRPosValues, Site: "detr_transformer graph",
		Doc: "DETR's attention values with the positions added (v = x + pos) as well as its queries and keys"})
	mutation.Register(mutation.Info{Name: DETRNoDecoderNorm, Site: "detr_transformer graph",
		Doc: "DETR's decoder outputs without the decoder's shared final LayerNorm"})
}
