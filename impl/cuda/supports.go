package cuda

import (
	"fmt"

	"vitbench/bench"
)

// opsWithKernels maps every node op this backend runs to whether it needs
// cuBLAS (its products go through cuBLAS GEMMs).
var opsWithKernels = map[string]bool{
	"gemm": true, "attention_core": true, "mha_core": true, "patch_embed": true, "conv2d": true, "performer_core": true,
	"deform_conv2d": true,
	"mean_shift":    false, "pixel_shuffle": false, "chop_tiles": false, "chop_stitch": false,
	"soft_split": false, "layernorm": false, "fold": false, "avg_pool2d": false, "tokens_prefix": false,
	"take_token": false, "average": false, "reshape": false, "tokens_to_image": false,
	"ms_deform_attn_core": false, "ms_deform_attn": false, "add": false, "sigmoid": false, "level_embed": false,
	"valid_ratios": false, "encoder_ref_points": false, "query_embed": false, "scale_refs": false,
	"merge_qkv": false, "relu": false, "max_pool2d": false, "group_norm": false, "level_masks": false,
	"position_sine": false, "flatten_levels": false, "box_decode": false, "post_process": false,
	"proposals": false, "zero_invalid": false, "topk_rows": false, "proposal_pos_embed": false,
	"split_columns": false,
	"avg_pool_nhwc": false, "outlook_core": false, "patch_rows_nhwc": false, "add_broadcast": false,
	"prepend_token": false, "put_token": false, "class_attn_core": false, "aux_merge": false,
	"token_embed": false, "eot_pool": false, "clip_logits": false, "attn_pool_tokens": false,
	"concat": false, "detr_queries": false, "detr_post_process": false, "row_slice": false,
	"pad_right_bottom": false, "upsample_nearest2x": false, "vector_quantize": false,
}

// Supports implements bench.Backend: float32 for every node op above,
// with the reason otherwise — the backend's own when it is unavailable,
// cuBLAS's for the GEMM-based ops when cuBLAS did not start.
func (b *Backend) Supports(op string, dt bench.DType) error {
	if !b.info.Available {
		return b.unavailable()
	}
	needsBLAS, ok := opsWithKernels[op]
	if !ok {
		return fmt.Errorf("%s: no kernel for op %q", b.name, op)
	}
	if dt != bench.Float32 {
		return fmt.Errorf("%s: %s runs in float32 only, not %s (bf16/fp16 kernels are not written yet)", b.name, op, dt)
	}
	if needsBLAS && b.blasErr != nil {
		return fmt.Errorf("%s: %s needs cuBLAS: %s", b.name, op, oneLine(b.blasErr.Error()))
	}
	return nil
}
