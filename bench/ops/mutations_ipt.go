//go:build mutation

package ops

import "vitbench/internal/mutation"

func init() {
	mutation.Register(mutation.Info{Name: IPTAttnBias, Site: "ipt graphs (attention projections)",
		Doc: "IPT's nn.MultiheadAttention with biases (PyTorch's default bias=True) on its in_proj and out_proj, instead of bias=False"})
	mutation.Register(mutation.Info{Name: IPTFinalNorm, Site: "ipt graph (body)",
		Doc: "a LayerNorm after IPT's decoder (DETR's final norm) before the MLP head; IPT's body has none"})
	mutation.Register(mutation.Info{Name: IPTZeroTgt, Site: "ipt graph (body)",
		Doc: "IPT's decoder starting from zeros (DETR's tgt) instead of the encoder output"})
}
