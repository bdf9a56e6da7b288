//go:build mutation

package ops

import "vitbench/internal/mutation"

func init() {
	mutation.Register(mutation.Info{Name: EncoderPreNorm, Site: "ddetr_transformer graph",
		Doc: "Deformable DETR's encoder layers pre-norm (x + attn(norm(x))) instead of post-norm (norm(x + attn(x)))"})
}
