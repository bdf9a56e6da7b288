"""Built-in fixture cases (as data) and the per-op-kind rules of fixtures/FORMAT.md:
parameter normalisation, array shapes, module construction, tolerance class and MAC count."""

import json
import os
import re

import torch

from . import clip, ddetr, deform, detector, detr, layers, mingpt, t2t, vit, volo, vqgan
from .layers import conv_out, pool_out
from . import ipt

# The built-in cases live in one file shared with the Go side (bench/cases/builtin.json): name,
# kind, op, batch, tolerance class, params, and "fixture": false for timing-only cases whose
# reference output is too large to commit.
BUILTIN_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "cases",
                            "builtin.json")
with open(BUILTIN_JSON, encoding="utf-8") as _f:
    BUILTIN = json.load(_f)
CASES = [{k: c[k] for k in ("name", "op", "params", "batch")} for c in BUILTIN]
FIXTURE = {c["name"]: c.get("fixture", True) for c in BUILTIN}
# case name -> {output name: {"axis": A, "step": K}} for the built-in cases whose fixture stores only
# every K-th index along axis A of an output (np.take(out, range(0, n, K), axis=A), axis counted with
# the batch dimension); case.json repeats the entry and still declares the full output shape.
SAMPLED = {c["name"]: c["sampled_outputs"] for c in BUILTIN if "sampled_outputs" in c}
# case name -> {array name: {"center": c, "scale": s}} for the built-in cases that synthesize some
# inputs or weights with other numbers than the role table's (synth.default_role), e.g. a zero
# class head whose scores all tie; case.json records the numbers used either way.
SYNTH_ARRAYS = {c["name"]: c["synth_arrays"] for c in BUILTIN if "synth_arrays" in c}
# The networks whose fixtures take seconds to minutes to check ("large": true): the test suites
# verify their files but leave running them to one vitbench check and the main job.
LARGE = {c["name"] for c in BUILTIN if c.get("large")}
# case name -> the generator seed its fixture uses when it is not 1: a seed whose two-stage selection
# has no near-tied scores (export.check_topk_gap).
SEEDS = {c["name"]: c["seed"] for c in BUILTIN if "seed" in c}

# op kind -> {param: default}; None marks a required parameter.  Pair-valued params are listed in PAIRS.
PARAMS = {
    "patch_embed": {"in_chans": None, "embed_dim": None, "patch_size": None, "img_size": None, "bias": True},
    "soft_split": {"in_chans": None, "img_size": None, "kernel_size": None, "stride": 1, "padding": 0,
                   "dilation": 1},
    "gemm": {"m": None, "n": None, "k": None, "trans_b": True, "bias": True},
    "layernorm": {"tokens": None, "dim": None, "eps": 1e-5},
    "t2t_module": {"img_size": None, "in_chans": 3, "embed_dim": None, "token_dim": 64, "tokens_type": None},
    "t2t_vit": {"img_size": None, "in_chans": 3, "embed_dim": None, "token_dim": 64, "tokens_type": None,
                "depth": None, "heads": None, "mlp_ratio": 4.0, "num_classes": 1000, "probe": False, "scale": "auto"},
    "token_transformer": {"tokens": None, "dim": None, "in_dim": 64, "mlp_ratio": 1.0},
    "token_performer": {"tokens": None, "dim": None, "in_dim": 64, "kernel_ratio": 0.5},
    "vit": {"img_size": None, "patch_size": None, "in_chans": 3, "embed_dim": None, "depth": None, "heads": None,
            "mlp_ratio": 4.0, "qkv_bias": True, "num_classes": 1000, "distilled": False, "eps": 1e-6,
            "probe": False},
    "fold": {"in_chans": None, "img_size": None, "kernel_size": None, "stride": 1, "padding": 0, "dilation": 1},
    # stride defaults to kernel_size, as in nn.AvgPool2d.
    "avg_pool2d": {"chans": None, "img_size": None, "kernel_size": None, "stride": "kernel", "padding": 0,
                   "ceil_mode": False, "count_include_pad": True},
    "mhsa": {"tokens": None, "dim": None, "heads": None, "qkv_bias": True, "scale": "auto"},
    "block": {"tokens": None, "dim": None, "heads": None, "qkv_bias": True, "scale": "auto", "mlp_ratio": 4.0,
              "eps": 1e-6},
    # bias defaults to "not bn" (a conv before BatchNorm has none); bn_eps is kept only with bn.
    "conv2d": {"in_chans": None, "out_chans": None, "img_size": None, "kernel_size": None, "stride": 1,
               "padding": 0, "dilation": 1, "bias": "auto", "bn": False, "bn_eps": 1e-5, "relu": False},
    # spatial_shapes: list of [H, W] per level; level_start_index defaults to [0, cumsum(H*W)[:-1]]
    # and must equal it when given; head_dim of ms_deform_attn defaults to d_model // heads.
    "ms_deform_attn_core": {"queries": None, "heads": None, "head_dim": None, "points": None,
                            "spatial_shapes": None, "level_start_index": "auto"},
    "ms_deform_attn": {"queries": None, "d_model": None, "heads": None, "points": None, "spatial_shapes": None,
                       "level_start_index": "auto", "head_dim": "auto", "ref_dims": 2, "padding_mask": False},
    "deform_conv2d": {"in_chans": None, "out_chans": None, "img_size": None, "kernel_size": None, "stride": 1,
                      "padding": 0, "dilation": 1, "groups": 1, "offset_groups": 1, "bias": True, "mask": True},
    # Deformable DETR's transformer with its query_embed; defaults are the detector's
    # (docs/reference-notes.md, "Deformable DETR").  box_refine: iterative box refinement ("Box
    # refinement and two-stage"), the decoder's own bbox_embed
    # MLPs, output last_reference.  two_stage (needs box_refine and d_model 256): queries from the
    # encoder's proposals, no query_embed; num_classes sizes its class heads and is allowed (and
    # written out) only with two_stage.
    "ddetr_transformer": {"spatial_shapes": None, "level_start_index": "auto", "d_model": 256, "heads": 8,
                          "enc_layers": 6, "dec_layers": 6, "ffn_dim": 1024, "enc_points": 4, "dec_points": 4,
                          "queries": 300, "padding_mask": False, "probe": False, "box_refine": False,
                          "two_stage": False, "num_classes": 91},
    # The whole Deformable DETR detector (ResNet-50, 4 levels; docs/reference-notes.md, "Deformable DETR"), optionally
    # with iterative box refinement (box_refine) and two-stage (two_stage, needs box_refine); img_size is the padded
    # batch image [H, W], top_k the PostProcess's k (<= queries * num_classes).
    "deformable_detr": {"img_size": None, "num_classes": 91, "queries": 300, "d_model": 256, "heads": 8,
                        "enc_layers": 6, "dec_layers": 6, "ffn_dim": 1024, "enc_points": 4, "dec_points": 4,
                        "top_k": 100, "padding_mask": False, "probe": False, "box_refine": False,
                        "two_stage": False},
    # VOLO (docs/reference-notes.md, "VOLO"; channels-last [B, H, W, C] between blocks).  kernel_size, padding
    # and stride of the outlook attention are single integers (k^4*heads attention logits).
    "outlook_attention": {"dim": None, "heads": None, "img_size": None, "kernel_size": 3, "padding": 1, "stride": 2},
    "outlooker": {"dim": None, "heads": None, "img_size": None, "kernel_size": 3, "padding": 1, "stride": 2,
                  "mlp_ratio": 3.0, "eps": 1e-5},
    "class_attention": {"tokens": None, "dim": None, "heads": None},
    "class_block": {"tokens": None, "dim": None, "heads": None, "mlp_ratio": 3.0, "eps": 1e-5},
    # The original's PatchEmbed with stem_conv=True, stem_stride=2 (proj kernel = stride = patch_size/2).
    "volo_stem": {"img_size": None, "in_chans": 3, "hidden_dim": 64, "embed_dim": None, "patch_size": 8},
    # layers, embed_dims, heads: lists of 4 ints (embed_dims[1:] equal).
    "volo": {"img_size": None, "layers": None, "embed_dims": None, "heads": None, "mlp_ratio": 3.0,
             "stem_hidden_dim": 64, "num_classes": 1000, "in_chans": 3, "probe": False},
    # The original DETR's transformer (detr.py): sine positions of the padding mask, post-norm
    # nn.MultiheadAttention encoder and decoder; feature_size is the C5 map [H, W].
    "detr_transformer": {"feature_size": None, "d_model": 256, "heads": 8, "enc_layers": 6, "dec_layers": 6,
                         "ffn_dim": 2048, "queries": 100, "padding_mask": False},
    # The whole DETR detector (detr.py): ResNet-50 (depth 50) or -101, dilate = DC5; img_size is the
    # padded batch image [H, W].
    "detr": {"img_size": None, "depth": 50, "dilate": False, "num_classes": 91, "queries": 100, "d_model": 256,
             "heads": 8, "enc_layers": 6, "dec_layers": 6, "ffn_dim": 2048, "padding_mask": False},
    # OpenAI CLIP (clip.py): the ViT image tower and the text tower with VisionTransformer's and the text
    # transformer's arguments, the network with CLIP's constructor arguments (vision_layers an int for a
    # ViT tower, a list of 4 block counts for a ResNet one, which takes no vision_patch_size; vision_heads
    # defaults to vision_width // 64, or vision_width * 32 // 64 for a ResNet, as CLIP computes it) and
    # texts, the number of token sequences compared.
    "clip_visual": {"input_resolution": None, "patch_size": None, "width": None, "layers": None, "heads": None,
                    "output_dim": None},
    "clip_text": {"context_length": None, "vocab_size": None, "width": None, "heads": None, "layers": None,
                  "embed_dim": None},
    "clip": {"embed_dim": None, "image_resolution": None, "vision_layers": None, "vision_width": None,
             "vision_patch_size": "auto", "vision_heads": "auto", "context_length": None, "vocab_size": None,
             "transformer_width": None, "transformer_heads": None, "transformer_layers": None, "texts": None},
    # CLIP's ModifiedResNet image tower (RN50: layers [3, 4, 6, 3], width 64, heads 32, output_dim 1024).
    "clip_resnet": {"layers": None, "output_dim": None, "heads": None, "input_resolution": None, "width": None},
    # VQGAN (vqgan.py): components on one [B, C, H, W] map; the networks take taming's ddconfig (double_z
    # false), vqgan also embed_dim and n_embed; img_size (the image) defaults to resolution, z_size (the
    # decoder's latent) to resolution / 2^(levels - 1).
    "group_norm": {"chans": None, "img_size": None, "groups": 32, "eps": 1e-6, "swish": False},
    "vq_resnet_block": {"in_chans": None, "out_chans": None, "img_size": None},
    "vq_attn_block": {"chans": None, "img_size": None},
    "vq_downsample": {"chans": None, "img_size": None},
    "vq_upsample": {"chans": None, "img_size": None},
    "vector_quantize": {"chans": None, "codes": None, "img_size": None},
    "vq_encoder": dict({k: None for k in vqgan.DDCONFIG}, img_size="auto"),
    "vq_decoder": dict({k: None for k in vqgan.DDCONFIG}, z_size="auto"),
    "vqgan": dict({k: None for k in vqgan.DDCONFIG}, embed_dim=None, n_embed=None, img_size="auto"),
    # taming's minGPT (mingpt.py) over tokens <= block_size code indices.
    "mingpt": {"vocab_size": None, "block_size": None, "n_layer": None, "n_head": None, "n_embd": None, "tokens": None},
}
# Params that are a list of integers (VQGAN's ch_mult, non-empty, and attn_resolutions).
INT_LISTS = {(op, k) for op in vqgan.NETWORKS for k in ("ch_mult", "attn_resolutions")}
# Params written out only when true: normalize_params drops them when false (their default), so the
# normalised params of a case that does not use them (and the committed case.json files made before
# they existed) stay as they were.
OMIT_FALSE = {("ddetr_transformer", "box_refine"), ("deformable_detr", "box_refine"),
              ("ddetr_transformer", "two_stage"), ("deformable_detr", "two_stage")}
PAIRS = {"patch_size", "img_size", "kernel_size", "stride", "padding", "dilation", "feature_size", "z_size"}
# Params that stay a single integer even though other op kinds take a pair for the name.
SCALAR = {("vit", "patch_size"), ("volo_stem", "patch_size"), ("clip_visual", "patch_size")} | {
    (op, k) for op in ("outlook_attention", "outlooker") for k in ("kernel_size", "padding", "stride")}
# Params that are a list of 4 positive integers (one per VOLO stage).
STAGE_LISTS = {("volo", "layers"), ("volo", "embed_dims"), ("volo", "heads"), ("clip_resnet", "layers")}
TOLERANCE = {"patch_embed": "gemm", "soft_split": "exact", "gemm": "gemm", "conv2d": "gemm",
             "layernorm": "elementwise", "mhsa": "gemm", "block": "gemm", "fold": "elementwise",
             "avg_pool2d": "elementwise", "vit": "network", "token_transformer": "gemm",
             "token_performer": "gemm", "t2t_module": "gemm", "t2t_vit": "network",
             "ms_deform_attn_core": "sampling", "ms_deform_attn": "sampling", "deform_conv2d": "sampling",
             "ddetr_transformer": "detector", "deformable_detr": "detector",
             "outlook_attention": "gemm", "outlooker": "gemm", "class_attention": "gemm", "class_block": "gemm",
             "volo_stem": "gemm", "volo": "network", "clip_visual": "network", "clip_text": "network",
             "clip_resnet": "network",
             "clip": "network", "detr_transformer": "detector",
             "detr": "detector", "group_norm": "elementwise", "vq_resnet_block": "gemm", "vq_attn_block": "gemm",
             "vq_downsample": "gemm", "vq_upsample": "gemm", "vector_quantize": "gemm", "vq_encoder": "network",
             "vq_decoder": "network", "vqgan": "network", "mingpt": "network"}
KIND = {"vit": "network", "t2t_vit": "network", "ddetr_transformer": "network",
        "deformable_detr": "network", "volo": "network", "clip_visual": "network", "clip_text": "network",
        "clip_resnet": "network",
        "clip": "network", "detr_transformer": "network",
        "detr": "network", "vq_encoder": "network", "vq_decoder": "network",
        "vqgan": "network", "mingpt": "network"}  # every other op kind is a component
# The reference class of each op kind as case.json names it (``module``).  The op kinds that existed when
# the modules were split into families keep the re-exporting ``modules`` path, so their fixtures stay byte
# for byte; a new op kind names its family module.
MODULE_PATH = {"patch_embed": "reference.vitbench_ref.modules.PatchEmbed",
               "soft_split": "reference.vitbench_ref.modules.SoftSplit",
               "gemm": "reference.vitbench_ref.modules.Gemm",
               "conv2d": "reference.vitbench_ref.modules.ConvBNAct",
               "layernorm": "torch.nn.LayerNorm",
               "t2t_module": "reference.vitbench_ref.modules.T2TModule",
               "t2t_vit": "reference.vitbench_ref.modules.T2TViT",
               "token_transformer": "reference.vitbench_ref.modules.TokenTransformer",
               "token_performer": "reference.vitbench_ref.modules.TokenPerformer",
               "vit": "reference.vitbench_ref.modules.VisionTransformer",
               "fold": "reference.vitbench_ref.modules.Fold",
               "avg_pool2d": "torch.nn.AvgPool2d",
               "mhsa": "reference.vitbench_ref.modules.Attention",
               "block": "reference.vitbench_ref.modules.Block",
               "ms_deform_attn_core": "reference.vitbench_ref.modules.MSDeformAttnCore",
               "ms_deform_attn": "reference.vitbench_ref.modules.MSDeformAttn",
               "deform_conv2d": "reference.vitbench_ref.modules.DeformConv2d",
               "ddetr_transformer": "reference.vitbench_ref.modules.DDETRTransformer",
               "deformable_detr": "reference.vitbench_ref.modules.DeformableDETR",
               "outlook_attention": "reference.vitbench_ref.volo.OutlookAttention",
               "outlooker": "reference.vitbench_ref.volo.Outlooker",
               "class_attention": "reference.vitbench_ref.volo.ClassAttention",
               "class_block": "reference.vitbench_ref.volo.ClassBlock",
               "volo_stem": "reference.vitbench_ref.volo.VOLOStem",
               "volo": "reference.vitbench_ref.volo.VOLO",
               "clip_visual": "reference.vitbench_ref.clip.CLIPVisual",
               "clip_text": "reference.vitbench_ref.clip.CLIPText",
               "clip": "reference.vitbench_ref.clip.CLIP",
               "clip_resnet": "reference.vitbench_ref.clip.CLIPResNet",
               "detr_transformer": "reference.vitbench_ref.detr.DETRTransformer",
               "detr": "reference.vitbench_ref.detr.DETR",
               "group_norm": "reference.vitbench_ref.vqgan.GroupNormAct",
               "vq_resnet_block": "reference.vitbench_ref.vqgan.ResnetBlock",
               "vq_attn_block": "reference.vitbench_ref.vqgan.AttnBlock",
               "vq_downsample": "reference.vitbench_ref.vqgan.Downsample",
               "vq_upsample": "reference.vitbench_ref.vqgan.Upsample",
               "vector_quantize": "reference.vitbench_ref.vqgan.VectorQuantizer",
               "vq_encoder": "reference.vitbench_ref.vqgan.VQEncoder",
               "vq_decoder": "reference.vitbench_ref.vqgan.VQDecoder",
               "vqgan": "reference.vitbench_ref.vqgan.VQModel",
               "mingpt": "reference.vitbench_ref.mingpt.GPT"}
BOOLS = {"bias", "trans_b", "bn", "relu", "qkv_bias", "ceil_mode", "count_include_pad", "distilled", "probe",
         "mask", "padding_mask", "box_refine", "two_stage", "dilate", "swish"}
FLOATS = {"bn_eps", "eps", "mlp_ratio", "scale", "kernel_ratio"}
# IPT (ipt.py): option.py's names, validated and completed by ipt.normalize.
PARAMS.update({op: dict(ipt.PARAMS[op]) for op in ipt.OPS})
TOLERANCE.update(ipt.TOLERANCE)
KIND.update({"ipt": "network", "ipt_chop": "network"})
MODULE_PATH.update({op: "reference.vitbench_ref.ipt." + cls for op, cls in ipt.CLASSES.items()})


def _as_int(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("%s must be an integer, got %r" % (what, v))
    return v


def normalize_params(op, params):
    """Validate ``params`` for op kind ``op`` and return them complete, with every default filled
    in and every pair written as ``[h, w]``.  Unknown keys, missing required keys and
    non-positive sizes raise ValueError (as the Go side does for unknown keys)."""
    if op in ipt.OPS:
        return ipt.normalize(op, params)
    if op not in PARAMS:
        raise ValueError("unknown op kind %r (known: %s)" % (op, ", ".join(sorted(PARAMS))))
    spec = PARAMS[op]
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise ValueError("%s: unknown params %s" % (op, unknown))
    out = {}
    for key, default in spec.items():
        if key not in params:
            if default is None:
                raise ValueError("%s: missing required param %r" % (op, key))
            v = default
        else:
            v = params[key]
        if key == "stride" and v == "kernel":
            v = params["kernel_size"]
        if key == "spatial_shapes":
            v = _spatial_shapes(op, v)
        elif key == "level_start_index":
            if v != "auto":
                if not isinstance(v, list):
                    raise ValueError("%s: level_start_index must be a list of integers" % op)
                v = [_as_int(i, "level_start_index") for i in v]
        elif (op, key) in INT_LISTS:
            if not isinstance(v, list) or (key == "ch_mult" and not v):
                raise ValueError("%s: %s must be a list of integers, got %r" % (op, key, v))
            v = [_as_int(i, key) for i in v]
            if v and min(v) < 1:
                raise ValueError("%s: %s entries must be >= 1, got %r" % (op, key, v))
        elif key == "img_size" and v == "auto":
            v = [_as_int(params["resolution"], "resolution")] * 2
        elif key == "z_size" and v == "auto":
            r = _as_int(params["resolution"], "resolution") // 2 ** (len(params["ch_mult"]) - 1)
            v = [r, r]
        elif key == "vision_heads" and v == "auto":
            width = _as_int(params["vision_width"], "vision_width")
            v = width * 32 // 64 if isinstance(params.get("vision_layers"), list) else width // 64
        elif op == "clip" and key == "vision_layers" and isinstance(v, list):
            if len(v) != 4 or min(_as_int(i, key) for i in v) < 1:
                raise ValueError("clip: vision_layers must be an int (ViT) or 4 block counts >= 1 (ResNet), got %r" % v)
        elif op == "clip" and key == "vision_patch_size":
            if isinstance(params.get("vision_layers"), list) != (v == "auto"):
                raise ValueError("clip: vision_patch_size is required with a ViT tower (vision_layers an int) "
                                 "and not allowed with a ResNet one")
            if v == "auto":
                continue
            v = _as_int(v, key)
        elif key == "head_dim" and v == "auto":
            v = None  # filled in below from d_model and heads
        elif (op, key) in STAGE_LISTS:
            if not isinstance(v, list) or len(v) != 4:
                raise ValueError("%s: %s must be a list of 4 integers (one per stage), got %r" % (op, key, v))
            v = [_as_int(i, key) for i in v]
            if min(v) < 1:
                raise ValueError("%s: %s entries must be >= 1, got %r" % (op, key, v))
        elif key == "ref_dims":
            if _as_int(v, key) not in (2, 4):
                raise ValueError("%s: ref_dims must be 2 or 4, got %r" % (op, v))
        elif key in PAIRS and (op, key) not in SCALAR:
            if isinstance(v, list):
                if len(v) != 2:
                    raise ValueError("%s: %s must be an int or [h, w]" % (op, key))
                v = [_as_int(v[0], key), _as_int(v[1], key)]
            else:
                v = [_as_int(v, key)] * 2
            low = 0 if key == "padding" else 1
            if min(v) < low:
                raise ValueError("%s: %s out of range: %r" % (op, key, v))
        elif key == "bias" and v == "auto":
            v = not params.get("bn", False)
        elif key == "scale" and v == "auto" and op == "t2t_vit":
            v = None  # the blocks' head_dim ** -0.5; pretrained checkpoints use embed_dim ** -0.5
        elif key == "scale" and v == "auto":
            if params["dim"] % params["heads"]:
                raise ValueError("%s: dim %r is not a multiple of heads %r" % (op, params["dim"], params["heads"]))
            v = None  # head_dim ** -0.5, left implicit as in the Go params
        elif key in FLOATS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError("%s: %s must be a positive number" % (op, key))
            v = float(v)
        elif key == "tokens_type":
            if v not in ("performer", "transformer"):
                raise ValueError("%s: tokens_type must be performer or transformer" % op)
        elif key in BOOLS:
            if not isinstance(v, bool):
                raise ValueError("%s: %s must be true or false" % (op, key))
        else:
            v = _as_int(v, key)
            if v < (0 if key == "padding" else 1):
                raise ValueError("%s: %s must be >= %d" % (op, key, 0 if key == "padding" else 1))
        out[key] = v
    if out.get("scale", 0) is None:
        del out["scale"]
    for key in [k for k in out if (op, k) in OMIT_FALSE and out[k] is False]:
        del out[key]
    if op == "conv2d" and not out["bn"]:
        if "bn_eps" in params:
            raise ValueError("conv2d: bn_eps needs bn")
        del out["bn_eps"]
    if op in ("ms_deform_attn_core", "ms_deform_attn", "ddetr_transformer"):
        expected = deform.level_start_index(out["spatial_shapes"])
        if out["level_start_index"] == "auto":
            out["level_start_index"] = expected
        elif out["level_start_index"] != expected:
            raise ValueError("%s: level_start_index %r does not match spatial_shapes (expected %r)"
                             % (op, out["level_start_index"], expected))
    if op == "ms_deform_attn":
        d, m = out["d_model"], out["heads"]
        if d % m:
            raise ValueError("ms_deform_attn: d_model %d is not a multiple of heads %d" % (d, m))
        if out["head_dim"] is None:
            out["head_dim"] = d // m
        elif m * out["head_dim"] != d:
            raise ValueError("ms_deform_attn: heads %d * head_dim %d != d_model %d" % (m, out["head_dim"], d))
    if op in ("ddetr_transformer", "deformable_detr") and out["d_model"] % out["heads"]:
        raise ValueError("%s: d_model %d is not a multiple of heads %d" % (op, out["d_model"], out["heads"]))
    if op == "ddetr_transformer" and not out.get("two_stage"):
        # num_classes sizes only the two-stage class heads: not allowed, and not written out, without.
        if "num_classes" in params:
            raise ValueError("ddetr_transformer: num_classes needs two_stage (it sizes the two-stage class heads)")
        del out["num_classes"]
    if op in ("ddetr_transformer", "deformable_detr") and out.get("two_stage"):
        if not out.get("box_refine"):
            raise ValueError("%s: two_stage needs box_refine (the released two-stage model refines its boxes)" % op)
        if out["d_model"] != 256:
            raise ValueError("%s: two_stage needs d_model 256: the proposal embedding has 4 * 128 features "
                             "(pos_trans is Linear(2 d_model, 2 d_model)), got d_model %d" % (op, out["d_model"]))
        levels = out["spatial_shapes"] if op == "ddetr_transformer" else ddetr.ddetr_level_shapes(out["img_size"])
        s_ = sum(h * w for h, w in levels)
        if out["queries"] > s_:
            raise ValueError("%s: two_stage selects queries %d of the %d encoder rows" % (op, out["queries"], s_))
    if op == "deformable_detr":
        if out["d_model"] % 32:
            raise ValueError("deformable_detr: d_model %d is not a multiple of 32 (GroupNorm(32, d_model))"
                             % out["d_model"])
        if out["top_k"] > out["queries"] * out["num_classes"]:
            raise ValueError("deformable_detr: top_k %d exceeds queries * num_classes = %d"
                             % (out["top_k"], out["queries"] * out["num_classes"]))
    if op in volo.OPS:
        _check_volo(op, out)
    if op in clip.OPS:
        clip.check(op, out)
    if op in vqgan.OPS:
        vqgan.check(op, out)
    if op in mingpt.OPS:
        mingpt.check(op, out)
    if op in detr.OPS:
        detr.check(op, out)
    if op == "deform_conv2d":
        for key in ("in_chans", "out_chans"):
            if out[key] % out["groups"]:
                raise ValueError("deform_conv2d: %s %d is not a multiple of groups %d" % (key, out[key], out["groups"]))
        if out["in_chans"] % out["offset_groups"]:
            raise ValueError("deform_conv2d: in_chans %d is not a multiple of offset_groups %d"
                             % (out["in_chans"], out["offset_groups"]))
        ho, wo = conv_out(out)
        if ho < 1 or wo < 1:
            raise ValueError("deform_conv2d: no output pixel (Ho=%d, Wo=%d)" % (ho, wo))
    return out


def outlook_grid(size, s):
    """The outlook attention's window count along one axis: ceil(size / s) (the AvgPool2d ceil-mode
    grid the original reshapes the Unfold output to), which the case rules require to equal the
    Unfold count (size + 2p - k)//s + 1."""
    return -(-size // s)


def _check_volo(op, out):
    """The validity rules of the VOLO op kinds (normalised params ``out``); ValueError otherwise."""
    if op in ("outlook_attention", "outlooker", "class_attention", "class_block") and out["dim"] % out["heads"]:
        raise ValueError("%s: dim %d is not a multiple of heads %d" % (op, out["dim"], out["heads"]))
    if op in ("outlook_attention", "outlooker"):
        k, p_, s_ = out["kernel_size"], out["padding"], out["stride"]
        for axis, size in zip("HW", out["img_size"]):
            unfold = (size + 2 * p_ - k) // s_ + 1
            if unfold != outlook_grid(size, s_):
                raise ValueError("%s: kernel_size %d, padding %d, stride %d give %d windows along %s = %d, but the "
                                 "pooled attention grid has ceil(%d/%d) = %d (they must be equal)"
                                 % (op, k, p_, s_, unfold, axis, size, size, s_, outlook_grid(size, s_)))
    if op == "volo_stem":
        if out["patch_size"] % 2:
            raise ValueError("volo_stem: patch_size %d is not even (the proj kernel is patch_size / 2 after the "
                             "stride-2 stem)" % out["patch_size"])
        h8, w8 = volo.stem_grid(out["img_size"], out["patch_size"])
        if h8 < 1 or w8 < 1:
            raise ValueError("volo_stem: image %r gives no output pixel" % (out["img_size"],))
    if op == "volo":
        dims, heads = out["embed_dims"], out["heads"]
        if not dims[1] == dims[2] == dims[3]:
            raise ValueError("volo: embed_dims[1:] must be equal (only stage 0 is followed by a downsample), got %r"
                             % (dims,))
        for i in range(4):
            if dims[i] % heads[i]:
                raise ValueError("volo: embed_dims[%d] = %d is not a multiple of heads[%d] = %d"
                                 % (i, dims[i], i, heads[i]))
        h, w = out["img_size"]
        h8, w8 = volo.stem_grid(out["img_size"])
        if h8 < 2 or w8 < 2:
            raise ValueError("volo: image %r too small (the stem gives %dx%d, the downsample needs 2x2)"
                             % (out["img_size"], h8, w8))
        if (h // 16, w // 16) != (h8 // 2, w8 // 2):
            raise ValueError("volo: pos_embed grid (H//16, W//16) = (%d, %d) differs from the token grid "
                             "(H8//2, W8//2) = (%d, %d) for image %r" % (h // 16, w // 16, h8 // 2, w8 // 2, [h, w]))


def _spatial_shapes(op, v):
    """Validate a ``spatial_shapes`` param: a non-empty list of [H, W] pairs of positive ints."""
    if not isinstance(v, list) or not v:
        raise ValueError("%s: spatial_shapes must be a non-empty list of [H, W] pairs" % op)
    out = []
    for hw in v:
        if not isinstance(hw, list) or len(hw) != 2:
            raise ValueError("%s: spatial_shapes entries must be [H, W] pairs, got %r" % (op, hw))
        h, w = _as_int(hw[0], "spatial_shapes"), _as_int(hw[1], "spatial_shapes")
        if h < 1 or w < 1:
            raise ValueError("%s: spatial_shapes entry out of range: %r" % (op, hw))
        out.append([h, w])
    return out


def shapes(op, p, batch):
    """Return ``(inputs, weights, outputs)``: dicts of array name -> shape (lists) for normalised
    params ``p`` at ``batch``, as FORMAT.md derives them."""
    b = int(batch)
    if op == "patch_embed":
        (h, w), (ph, pw) = p["img_size"], p["patch_size"]
        n = (h // ph) * (w // pw)
        if n < 1:
            raise ValueError("patch_embed: image %r smaller than patch %r" % (p["img_size"], p["patch_size"]))
        weights = {"proj.weight": [p["embed_dim"], p["in_chans"], ph, pw]}
        if p["bias"]:
            weights["proj.bias"] = [p["embed_dim"]]
        return ({"x": [b, p["in_chans"], h, w]}, weights, {"out": [b, n, p["embed_dim"]]})
    if op == "soft_split":
        (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
        (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
        ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        if ho < 1 or wo < 1:
            raise ValueError("soft_split: no complete window (Ho=%d, Wo=%d)" % (ho, wo))
        c = p["in_chans"]
        return ({"x": [b, c, h, w]}, {}, {"out": [b, ho * wo, c * kh * kw]})
    if op == "conv2d":
        (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
        (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
        ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        if ho < 1 or wo < 1:
            raise ValueError("conv2d: no complete window (Ho=%d, Wo=%d)" % (ho, wo))
        o = p["out_chans"]
        weights = {"conv.weight": [o, p["in_chans"], kh, kw]}
        if p["bias"]:
            weights["conv.bias"] = [o]
        if p["bn"]:
            for name in ("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"):
                weights[name] = [o]
        return ({"x": [b, p["in_chans"], h, w]}, weights, {"out": [b, o, ho, wo]})
    if op in ("fold", "avg_pool2d"):
        (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
        (sh, sw), (ph, pw) = p["stride"], p["padding"]
        if op == "fold":
            (dh, dw) = p["dilation"]
            ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
            wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
            if ho < 1 or wo < 1:
                raise ValueError("fold: no complete window (Ho=%d, Wo=%d)" % (ho, wo))
            c = p["in_chans"]
            return ({"x": [b, ho * wo, c * kh * kw]}, {}, {"out": [b, c, h, w]})
        if 2 * ph > kh or 2 * pw > kw:
            raise ValueError("avg_pool2d: padding must be at most half the kernel")
        ho, wo = (pool_out(h, kh, sh, ph, p["ceil_mode"]), pool_out(w, kw, sw, pw, p["ceil_mode"]))
        return ({"x": [b, p["chans"], h, w]}, {}, {"out": [b, p["chans"], ho, wo]})
    if op == "vit":
        (h, w), ps, e = p["img_size"], p["patch_size"], p["embed_dim"]
        n = (h // ps) * (w // ps)
        if n < 1 or e % p["heads"]:
            raise ValueError("vit: no whole patch, or embed_dim not a multiple of heads")
        t, hid = n + (2 if p["distilled"] else 1), int(e * p["mlp_ratio"])
        weights = {"patch_embed.proj.weight": [e, p["in_chans"], ps, ps], "patch_embed.proj.bias": [e],
                   "cls_token": [1, 1, e]}
        if p["distilled"]:
            weights["dist_token"] = [1, 1, e]
        weights["pos_embed"] = [1, t, e]
        for i in range(p["depth"]):
            pre = "blocks.%d." % i
            weights.update({pre + "norm1.weight": [e], pre + "norm1.bias": [e], pre + "attn.qkv.weight": [3 * e, e]})
            if p["qkv_bias"]:
                weights[pre + "attn.qkv.bias"] = [3 * e]
            weights.update({pre + "attn.proj.weight": [e, e], pre + "attn.proj.bias": [e],
                            pre + "norm2.weight": [e], pre + "norm2.bias": [e],
                            pre + "mlp.fc1.weight": [hid, e], pre + "mlp.fc1.bias": [hid],
                            pre + "mlp.fc2.weight": [e, hid], pre + "mlp.fc2.bias": [e]})
        weights.update({"norm.weight": [e], "norm.bias": [e], "head.weight": [p["num_classes"], e],
                        "head.bias": [p["num_classes"]]})
        if p["distilled"]:
            weights.update({"head_dist.weight": [p["num_classes"], e], "head_dist.bias": [p["num_classes"]]})
        outs = {"logits": [b, p["num_classes"]]}
        if p["probe"]:
            outs["stages.embed"] = [b, t, e]
            outs["stages.block0"] = [b, t, e]
            outs["stages.block%d" % (p["depth"] - 1)] = [b, t, e]
        return ({"x": [b, p["in_chans"], h, w]}, weights, outs)
    if op in ("t2t_module", "t2t_vit"):
        mod = t2t.T2TModule(p["img_size"], p["tokens_type"], p["embed_dim"], p["token_dim"], p["in_chans"])
        if op == "t2t_module":
            net = mod
            prefix = ""
        else:
            net = t2t.T2TViT(p["img_size"], p["tokens_type"], p["embed_dim"], p["depth"], p["heads"],
                                 p["mlp_ratio"], p["num_classes"], p["token_dim"], p["in_chans"], p["probe"])
        weights = {k: list(v.shape) for k, v in net.state_dict().items()}
        gh, gw = mod.grids[2]
        h, w = p["img_size"]
        if op == "t2t_module":
            return ({"x": [b, p["in_chans"], h, w]}, weights, {"out": [b, gh * gw, p["embed_dim"]]})
        outs = {"logits": [b, p["num_classes"]]}
        if p["probe"]:
            for k in ("stages.embed", "stages.block0", "stages.block%d" % (p["depth"] - 1)):
                outs[k] = [b, gh * gw + 1, p["embed_dim"]]
        return ({"x": [b, p["in_chans"], h, w]}, weights, outs)
    if op in ("token_transformer", "token_performer"):
        t, d, e = p["tokens"], p["dim"], p["in_dim"]
        weights = {"norm1.weight": [d], "norm1.bias": [d]}
        if op == "token_performer":
            h = e
            weights.update({"kqv.weight": [3 * e, d], "kqv.bias": [3 * e], "proj.weight": [e, e], "proj.bias": [e],
                            "norm2.weight": [e], "norm2.bias": [e], "mlp.0.weight": [h, e], "mlp.0.bias": [h],
                            "mlp.2.weight": [e, h], "mlp.2.bias": [e], "w": [int(e * p["kernel_ratio"]), e]})
        else:
            h = int(e * p["mlp_ratio"])
            weights.update({"attn.qkv.weight": [3 * e, d], "attn.proj.weight": [e, e], "attn.proj.bias": [e],
                            "norm2.weight": [e], "norm2.bias": [e], "mlp.fc1.weight": [h, e], "mlp.fc1.bias": [h],
                            "mlp.fc2.weight": [e, h], "mlp.fc2.bias": [e]})
        return ({"x": [b, t, d]}, weights, {"out": [b, t, e]})
    if op == "layernorm":
        return ({"x": [b, p["tokens"], p["dim"]]}, {"weight": [p["dim"]], "bias": [p["dim"]]},
                {"out": [b, p["tokens"], p["dim"]]})
    if op in ("mhsa", "block"):
        e, t = p["dim"], p["tokens"]
        if e % p["heads"]:
            raise ValueError("%s: dim %d is not a multiple of heads %d" % (op, e, p["heads"]))
        pre = "attn." if op == "block" else ""
        attn = {pre + "qkv.weight": [3 * e, e]}
        if p["qkv_bias"]:
            attn[pre + "qkv.bias"] = [3 * e]
        attn.update({pre + "proj.weight": [e, e], pre + "proj.bias": [e]})
        weights = attn
        if op == "block":
            h = int(e * p["mlp_ratio"])
            weights = {"norm1.weight": [e], "norm1.bias": [e]}
            weights.update(attn)
            weights.update({"norm2.weight": [e], "norm2.bias": [e], "mlp.fc1.weight": [h, e], "mlp.fc1.bias": [h],
                            "mlp.fc2.weight": [e, h], "mlp.fc2.bias": [e]})
        return ({"x": [b, t, e]}, weights, {"out": [b, t, e]})
    if op in ("ms_deform_attn_core", "ms_deform_attn"):
        shp = p["spatial_shapes"]
        s_, nl, lq, m, pts = sum(h * w for h, w in shp), len(shp), p["queries"], p["heads"], p["points"]
        if op == "ms_deform_attn_core":
            d = p["head_dim"]
            return ({"value": [b, s_, m, d], "sampling_locations": [b, lq, m, nl, pts, 2],
                     "attention_weights": [b, lq, m, nl, pts]}, {}, {"out": [b, lq, m * d]})
        d = p["d_model"]
        inputs = {"query": [b, lq, d], "reference_points": [b, lq, nl, p["ref_dims"]], "input_flatten": [b, s_, d]}
        if p["padding_mask"]:
            inputs["padding_mask"] = [b, s_]
        weights = {"sampling_offsets.weight": [m * nl * pts * 2, d], "sampling_offsets.bias": [m * nl * pts * 2],
                   "attention_weights.weight": [m * nl * pts, d], "attention_weights.bias": [m * nl * pts],
                   "value_proj.weight": [d, d], "value_proj.bias": [d],
                   "output_proj.weight": [d, d], "output_proj.bias": [d]}
        return inputs, weights, {"out": [b, lq, d]}
    if op == "ddetr_transformer":
        return ddetr_shapes(p, b)
    if op == "deformable_detr":
        return detr_shapes(p, b)
    if op in volo.OPS:
        return volo_shapes(op, p, b)
    if op in clip.OPS:
        return clip.shapes(op, p, b)
    if op in vqgan.OPS:
        return vqgan.shapes(op, p, b)
    if op in mingpt.OPS:
        return mingpt.shapes(op, p, b)
    if op in detr.OPS:
        return detr.shapes(op, p, b)
    if op in ipt.OPS:
        return ipt.shapes(op, p, b)
    if op == "deform_conv2d":
        ho, wo = conv_out(p)
        if ho < 1 or wo < 1:
            raise ValueError("deform_conv2d: no output pixel (Ho=%d, Wo=%d)" % (ho, wo))
        (h, w), (kh, kw), g = p["img_size"], p["kernel_size"], p["offset_groups"]
        inputs = {"x": [b, p["in_chans"], h, w], "offset": [b, 2 * g * kh * kw, ho, wo]}
        if p["mask"]:
            inputs["mask"] = [b, g * kh * kw, ho, wo]
        weights = {"weight": [p["out_chans"], p["in_chans"] // p["groups"], kh, kw]}
        if p["bias"]:
            weights["bias"] = [p["out_chans"]]
        return inputs, weights, {"out": [b, p["out_chans"], ho, wo]}
    if op == "gemm":
        m, n, k = p["m"], p["n"], p["k"]
        weights = {"weight": [n, k] if p["trans_b"] else [k, n]}
        if p["bias"]:
            weights["bias"] = [n]
        return ({"x": [b, m, k]}, weights, {"out": [b, m, n]})
    raise ValueError("unknown op kind %r" % op)


def _outlooker_weights(prefix, c, heads, k, hidden, block):
    """The weights of an OutlookAttention (``block`` False) or an Outlooker (True) under ``prefix``."""
    attn = "attn." if block else ""
    w = {}
    if block:
        w.update({prefix + "norm1.weight": [c], prefix + "norm1.bias": [c]})
    w.update({prefix + attn + "v.weight": [c, c], prefix + attn + "attn.weight": [k ** 4 * heads, c],
              prefix + attn + "attn.bias": [k ** 4 * heads], prefix + attn + "proj.weight": [c, c],
              prefix + attn + "proj.bias": [c]})
    if block:
        w.update(_norm_mlp_weights(prefix, c, hidden))
    return w


def _norm_mlp_weights(prefix, c, hidden):
    return {prefix + "norm2.weight": [c], prefix + "norm2.bias": [c], prefix + "mlp.fc1.weight": [hidden, c],
            prefix + "mlp.fc1.bias": [hidden], prefix + "mlp.fc2.weight": [c, hidden], prefix + "mlp.fc2.bias": [c]}


def _class_weights(prefix, c, hidden, block):
    """The weights of a ClassAttention (``block`` False) or a ClassBlock (True) under ``prefix``."""
    attn = "attn." if block else ""
    w = {}
    if block:
        w.update({prefix + "norm1.weight": [c], prefix + "norm1.bias": [c]})
    w.update({prefix + attn + "kv.weight": [2 * c, c], prefix + attn + "q.weight": [c, c],
              prefix + attn + "proj.weight": [c, c], prefix + attn + "proj.bias": [c]})
    if block:
        w.update(_norm_mlp_weights(prefix, c, hidden))
    return w


def _stem_weights(prefix, cin, hid, e, patch):
    w = {prefix + "conv.0.weight": [hid, cin, 7, 7]}
    for conv, bn in ((None, 1), (3, 4), (6, 7)):
        if conv is not None:
            w[prefix + "conv.%d.weight" % conv] = [hid, hid, 3, 3]
        for n in ("weight", "bias", "running_mean", "running_var"):
            w[prefix + "conv.%d.%s" % (bn, n)] = [hid]
    w.update({prefix + "proj.weight": [e, hid, patch // 2, patch // 2], prefix + "proj.bias": [e]})
    return w


def volo_shapes(op, p, b):
    """``(inputs, weights, outputs)`` of the VOLO op kinds (channels-last activations; the stem and
    the network take an NCHW image ``x``).  Weight names and order are the original modules'
    state_dict (BatchNorm's ``num_batches_tracked`` excluded)."""
    if op in ("outlook_attention", "outlooker"):
        (h, w), c = p["img_size"], p["dim"]
        hidden = int(c * p["mlp_ratio"]) if op == "outlooker" else 0
        weights = _outlooker_weights("", c, p["heads"], p["kernel_size"], hidden, op == "outlooker")
        return {"x": [b, h, w, c]}, weights, {"out": [b, h, w, c]}
    if op in ("class_attention", "class_block"):
        n, c = p["tokens"], p["dim"]
        hidden = int(c * p["mlp_ratio"]) if op == "class_block" else 0
        weights = _class_weights("", c, hidden, op == "class_block")
        return {"x": [b, n, c]}, weights, {"out": [b, 1 if op == "class_attention" else n, c]}
    if op == "volo_stem":
        h8, w8 = volo.stem_grid(p["img_size"], p["patch_size"])
        e = p["embed_dim"]
        return ({"x": [b, p["in_chans"]] + p["img_size"]},
                _stem_weights("", p["in_chans"], p["hidden_dim"], e, p["patch_size"]), {"out": [b, h8, w8, e]})
    if op == "volo":
        h8, w8 = volo.stem_grid(p["img_size"])
        h16, w16 = h8 // 2, w8 // 2
        dims, heads, layers, ratio, nc = p["embed_dims"], p["heads"], p["layers"], p["mlp_ratio"], p["num_classes"]
        c0, c1 = dims[0], dims[3]
        weights = _stem_weights("patch_embed.", p["in_chans"], p["stem_hidden_dim"], c0, 8)
        weights["pos_embed"] = [1, h16, w16, c1]
        for i in range(layers[0]):
            weights.update(_outlooker_weights("network.0.%d." % i, c0, heads[0], 3, int(c0 * ratio), True))
        weights.update({"network.1.proj.weight": [c1, c0, 2, 2], "network.1.proj.bias": [c1]})
        hid1 = int(c1 * ratio)
        for stage in (1, 2, 3):
            for i in range(layers[stage]):
                pre = "network.%d.%d." % (stage + 1, i)
                weights.update({pre + "norm1.weight": [c1], pre + "norm1.bias": [c1],
                                pre + "attn.qkv.weight": [3 * c1, c1], pre + "attn.proj.weight": [c1, c1],
                                pre + "attn.proj.bias": [c1]})
                weights.update(_norm_mlp_weights(pre, c1, hid1))
        weights["cls_token"] = [1, 1, c1]
        for i in range(2):
            weights.update(_class_weights("post_network.%d." % i, c1, hid1, True))
        weights.update({"aux_head.weight": [nc, c1], "aux_head.bias": [nc], "norm.weight": [c1], "norm.bias": [c1],
                        "head.weight": [nc, c1], "head.bias": [nc]})
        outs = {"logits": [b, nc]}
        if p["probe"]:
            outs.update({"stages.stem": [b, h8, w8, c0], "stages.outlookers": [b, h8, w8, c0],
                         "stages.transformers": [b, h16, w16, c1], "stages.post": [b, 1 + h16 * w16, c1]})
        return {"x": [b, p["in_chans"]] + p["img_size"]}, weights, outs
    raise ValueError("not a VOLO op kind: %r" % op)


def param_count(op, p):
    """The learnable parameter count of an op kind's module from :func:`shapes`: every weight
    except BatchNorm's running statistics (buffers)."""
    _, ws, _ = shapes(op, p, 1)
    total = 0
    for name, shp in ws.items():
        if name.endswith("running_mean") or name.endswith("running_var"):
            continue
        n = 1
        for d in shp:
            n *= d
        total += n
    return total


def _msdeform_weights(prefix, d, m, nl, pts):
    o = m * nl * pts
    return {prefix + "sampling_offsets.weight": [2 * o, d], prefix + "sampling_offsets.bias": [2 * o],
            prefix + "attention_weights.weight": [o, d], prefix + "attention_weights.bias": [o],
            prefix + "value_proj.weight": [d, d], prefix + "value_proj.bias": [d],
            prefix + "output_proj.weight": [d, d], prefix + "output_proj.bias": [d]}


def _bbox_embed_weights(prefix, n, d):
    """The weights of ``n`` box MLPs (d -> d -> d -> 4) ``{prefix}{i}.layers.{0,1,2}.{weight,bias}``."""
    out = {}
    for i in range(n):
        for j, (o, ii) in enumerate(((d, d), (d, d), (4, d))):
            out.update({"%s%d.layers.%d.weight" % (prefix, i, j): [o, ii], "%s%d.layers.%d.bias" % (prefix, i, j): [o]})
    return out


def _class_embed_weights(prefix, n, d, c):
    """The weights of ``n`` class heads Linear(d, c) ``{prefix}{i}.{weight,bias}``."""
    out = {}
    for i in range(n):
        out.update({"%s%d.weight" % (prefix, i): [c, d], "%s%d.bias" % (prefix, i): [c]})
    return out


def ddetr_shapes(p, b):
    """``(inputs, weights, outputs)`` of ``ddetr_transformer``: inputs ``src``, ``pos`` [B, S, d]
    and, with padding_mask, ``padding_mask [B, S]``; the weights are the state_dict of the full
    Deformable DETR detector restricted to ``transformer.*`` and ``query_embed.weight``.  With
    box_refine the decoder's box MLPs ``transformer.decoder.bbox_embed.{i}.layers.{0,1,2}.*`` (one
    independent MLP per decoder layer) are weights too, and the output ``last_reference [B, Q, 4]``
    (the reference boxes after the last layer's refinement) is added.

    With two_stage: no ``transformer.reference_points.*`` and no ``query_embed.weight``; instead
    ``transformer.enc_output.*`` [d, d], ``transformer.enc_output_norm.*`` [d],
    ``transformer.pos_trans.*`` [2d, 2d], ``transformer.pos_trans_norm.*`` [2d], and dec_layers + 1
    class heads ``transformer.decoder.class_embed.{i}.*`` [num_classes, d] and box MLPs
    ``transformer.decoder.bbox_embed.{i}.*`` (index dec_layers scores the encoder's proposals);
    ``reference_points`` is [B, Q, 4] (the selected proposal boxes), and the output
    ``proposal_logits [B, Q, num_classes]`` (the selected proposals' class logits, in query order)
    is added."""
    shp = p["spatial_shapes"]
    s_, nl = sum(h * w for h, w in shp), len(shp)
    d, m, f, q = p["d_model"], p["heads"], p["ffn_dim"], p["queries"]
    inputs = {"src": [b, s_, d], "pos": [b, s_, d]}
    if p["padding_mask"]:
        inputs["padding_mask"] = [b, s_]

    def norm(name):
        return {name + ".weight": [d], name + ".bias": [d]}

    def ffn(pre):
        return {pre + "linear1.weight": [f, d], pre + "linear1.bias": [f],
                pre + "linear2.weight": [d, f], pre + "linear2.bias": [d]}

    weights = {"transformer.level_embed": [nl, d]}
    for i in range(p["enc_layers"]):
        pre = "transformer.encoder.layers.%d." % i
        weights.update(_msdeform_weights(pre + "self_attn.", d, m, nl, p["enc_points"]))
        weights.update(norm(pre + "norm1"))
        weights.update(ffn(pre))
        weights.update(norm(pre + "norm2"))
    for i in range(p["dec_layers"]):
        pre = "transformer.decoder.layers.%d." % i
        weights.update(_msdeform_weights(pre + "cross_attn.", d, m, nl, p["dec_points"]))
        weights.update(norm(pre + "norm1"))
        weights.update({pre + "self_attn.in_proj_weight": [3 * d, d], pre + "self_attn.in_proj_bias": [3 * d],
                        pre + "self_attn.out_proj.weight": [d, d], pre + "self_attn.out_proj.bias": [d]})
        weights.update(norm(pre + "norm2"))
        weights.update(ffn(pre))
        weights.update(norm(pre + "norm3"))
    two = bool(p.get("two_stage"))
    if two:
        weights.update({"transformer.enc_output.weight": [d, d], "transformer.enc_output.bias": [d]})
        weights.update(norm("transformer.enc_output_norm"))
        weights.update({"transformer.pos_trans.weight": [2 * d, 2 * d], "transformer.pos_trans.bias": [2 * d],
                        "transformer.pos_trans_norm.weight": [2 * d], "transformer.pos_trans_norm.bias": [2 * d]})
    heads_n = p["dec_layers"] + 1 if two else p["dec_layers"]
    if p.get("box_refine"):
        weights.update(_bbox_embed_weights("transformer.decoder.bbox_embed.", heads_n, d))
    if two:
        weights.update(_class_embed_weights("transformer.decoder.class_embed.", heads_n, d, p["num_classes"]))
    else:
        weights.update({"transformer.reference_points.weight": [2, d], "transformer.reference_points.bias": [2],
                        "query_embed.weight": [q, 2 * d]})
    outs = {"memory": [b, s_, d], "hs": [b, q, d], "reference_points": [b, q, 4 if two else 2]}
    if p.get("box_refine"):
        outs["last_reference"] = [b, q, 4]
    if two:
        outs["proposal_logits"] = [b, q, p["num_classes"]]
    if p["probe"]:
        for i in ddetr.probe_layers(p["enc_layers"]):
            outs["stages.enc%d" % i] = [b, s_, d]
        for i in ddetr.probe_layers(p["dec_layers"]):
            outs["stages.dec%d" % i] = [b, q, d]
    return inputs, weights, outs


def detr_transformer_params(p):
    """The ``ddetr_transformer`` params of a ``deformable_detr`` case's transformer (its level shapes
    from ``img_size``, :func:`ddetr.ddetr_level_shapes`)."""
    shp = ddetr.ddetr_level_shapes(p["img_size"])
    keys = ("d_model", "heads", "enc_layers", "dec_layers", "ffn_dim", "enc_points", "dec_points", "queries",
            "padding_mask")
    out = dict({k: p[k] for k in keys}, spatial_shapes=shp, level_start_index=deform.level_start_index(shp),
               probe=False)
    if p.get("box_refine"):
        out["box_refine"] = True
    if p.get("two_stage"):
        out.update(two_stage=True, num_classes=p["num_classes"])
    return out


def detr_shapes(p, b):
    """``(inputs, weights, outputs)`` of ``deformable_detr``.  Inputs ``images [N, 3, H, W]`` and, with
    padding_mask, ``image_mask [N, H, W]``.  Weights: the original detector's state_dict, in module
    order: ``backbone.0.body.*`` (every ResNet-50 conv weight and its FrozenBatchNorm2d's weight,
    bias, running_mean, running_var), ``input_proj.{l}.{0,1}.{weight,bias}``, ``transformer.*`` and
    ``query_embed.weight`` (as ``ddetr_transformer``), ``class_embed.{i}.*`` and
    ``bbox_embed.{i}.layers.{0,1,2}.*`` for every decoder layer i (one shared module repeated: the
    LAST copy is the one a loaded module holds).

    With box_refine the heads are dec_layers independent clones, and the transformer's keys include
    ``transformer.decoder.bbox_embed.{i}.*``: the SAME modules as the top-level ``bbox_embed.{i}.*``
    (the original sets ``transformer.decoder.bbox_embed = bbox_embed``), listed twice by the
    state_dict.  Loading a state_dict whose two copies differ (synthesized weights) leaves the
    top-level ``bbox_embed.{i}.*`` values in the modules (loaded after the transformer's), so a
    backend must use ``bbox_embed.{i}.*`` both for the refinement of decoder layer i and for the box
    head, and ``class_embed.{dec_layers-1}.*`` for the logits.

    With two_stage there is no ``query_embed.weight``, the transformer's keys are two-stage
    ``ddetr_transformer``'s, and class_embed / bbox_embed have dec_layers + 1 entries, the SAME
    modules as ``transformer.decoder.class_embed.{i}`` / ``transformer.decoder.bbox_embed.{i}``: the
    top-level values are the ones a loaded module holds (index dec_layers: the encoder's heads)."""
    h, w = p["img_size"]
    d, c, q, k = p["d_model"], p["num_classes"], p["queries"], p["top_k"]
    inputs = {"images": [b, 3, h, w]}
    if p["padding_mask"]:
        inputs["image_mask"] = [b, h, w]
    weights = {}
    for cv in detector.resnet50_layout(p["img_size"]):
        weights["backbone.0.body.%s.weight" % cv["conv"]] = [cv["cout"], cv["cin"], cv["k"], cv["k"]]
        for name in ("weight", "bias", "running_mean", "running_var"):
            weights["backbone.0.body.%s.%s" % (cv["bn"], name)] = [cv["cout"]]
    for lvl, (cin, kk) in enumerate(((512, 1), (1024, 1), (2048, 1), (2048, 3))):
        weights.update({"input_proj.%d.0.weight" % lvl: [d, cin, kk, kk], "input_proj.%d.0.bias" % lvl: [d],
                        "input_proj.%d.1.weight" % lvl: [d], "input_proj.%d.1.bias" % lvl: [d]})
    tp = detr_transformer_params(p)
    weights.update(ddetr_shapes(tp, b)[1])
    heads_n = p["dec_layers"] + 1 if p.get("two_stage") else p["dec_layers"]
    weights.update(_class_embed_weights("class_embed.", heads_n, d, c))
    weights.update(_bbox_embed_weights("bbox_embed.", heads_n, d))
    outs = {"pred_logits": [b, q, c], "pred_boxes": [b, q, 4], "scores": [b, k], "labels": [b, k],
            "boxes": [b, k, 4]}
    if p.get("two_stage"):
        outs["proposal_logits"] = [b, q, c]
    if p["probe"]:
        (h3, w3), _, (h5, w5), _ = tp["spatial_shapes"]
        s_ = sum(hh * ww for hh, ww in tp["spatial_shapes"])
        outs.update({"stages.c3": [b, 512, h3, w3], "stages.c5": [b, 2048, h5, w5], "stages.src": [b, s_, d],
                     "stages.memory": [b, s_, d], "stages.hs": [b, q, d]})
    return inputs, weights, outs


def build_module(op, p):
    """Construct the reference module (eval mode) for normalised params ``p``."""
    if op == "patch_embed":
        return layers.PatchEmbed(p["in_chans"], p["embed_dim"], p["patch_size"], p["img_size"], p["bias"])
    if op == "soft_split":
        return t2t.SoftSplit(p["kernel_size"], p["stride"], p["padding"], p["dilation"])
    if op == "gemm":
        return layers.Gemm(p["k"], p["n"], p["trans_b"], p["bias"])
    if op == "vit":
        return vit.VisionTransformer(p["img_size"], p["patch_size"], p["embed_dim"], p["depth"], p["heads"],
                                         p["mlp_ratio"], p["qkv_bias"], p["num_classes"], p["distilled"], p["eps"],
                                         p["in_chans"], p["probe"])
    if op == "t2t_module":
        return t2t.T2TModule(p["img_size"], p["tokens_type"], p["embed_dim"], p["token_dim"], p["in_chans"])
    if op == "t2t_vit":
        return t2t.T2TViT(p["img_size"], p["tokens_type"], p["embed_dim"], p["depth"], p["heads"], p["mlp_ratio"],
                              p["num_classes"], p["token_dim"], p["in_chans"], p["probe"], p.get("scale"))
    if op == "token_transformer":
        return t2t.TokenTransformer(p["dim"], p["in_dim"], p["mlp_ratio"])
    if op == "token_performer":
        return t2t.TokenPerformer(p["dim"], p["in_dim"], p["kernel_ratio"])
    if op == "fold":
        return layers.Fold(p["img_size"], p["kernel_size"], p["stride"], p["padding"], p["dilation"])
    if op == "avg_pool2d":
        return torch.nn.AvgPool2d(p["kernel_size"], p["stride"], p["padding"], p["ceil_mode"],
                                  p["count_include_pad"])
    if op == "layernorm":
        return torch.nn.LayerNorm(p["dim"], eps=p["eps"])
    if op == "mhsa":
        return layers.Attention(p["dim"], p["heads"], p["qkv_bias"], p.get("scale"))
    if op == "block":
        return layers.Block(p["dim"], p["heads"], p["mlp_ratio"], p["qkv_bias"], p.get("scale"), p["eps"])
    if op == "conv2d":
        return layers.ConvBNAct(p["in_chans"], p["out_chans"], p["kernel_size"], p["stride"], p["padding"],
                                 p["dilation"], p["bias"], p["bn"], p.get("bn_eps", 1e-5), p["relu"])
    if op == "ms_deform_attn_core":
        return deform.MSDeformAttnCore(p["spatial_shapes"])
    if op == "ms_deform_attn":
        return deform.MSDeformAttn(p["d_model"], p["heads"], p["points"], p["spatial_shapes"], p["head_dim"])
    if op == "ddetr_transformer":
        return ddetr.DDETRTransformer(p["spatial_shapes"], p["d_model"], p["heads"], p["enc_layers"], p["dec_layers"],
                                        p["ffn_dim"], p["enc_points"], p["dec_points"], p["queries"], p["probe"],
                                        p.get("box_refine", False), p.get("two_stage", False),
                                        p.get("num_classes", 91))
    if op == "deform_conv2d":
        return deform.DeformConv2d(p["in_chans"], p["out_chans"], p["kernel_size"], p["stride"], p["padding"],
                                    p["dilation"], p["groups"], p["bias"])
    if op == "deformable_detr":
        return ddetr.DeformableDETR(p["img_size"], p["num_classes"], p["queries"], p["d_model"], p["heads"],
                                      p["enc_layers"], p["dec_layers"], p["ffn_dim"], p["enc_points"], p["dec_points"],
                                      p["top_k"], p["probe"], p.get("box_refine", False), p.get("two_stage", False))
    if op in ("outlook_attention", "outlooker"):
        args = (p["dim"], p["heads"], p["kernel_size"], p["padding"], p["stride"])
        if op == "outlook_attention":
            return volo.OutlookAttention(*args)
        return volo.Outlooker(*args, mlp_ratio=p["mlp_ratio"], eps=p["eps"])
    if op == "class_attention":
        return volo.ClassAttention(p["dim"], p["heads"])
    if op == "class_block":
        return volo.ClassBlock(p["dim"], p["heads"], p["mlp_ratio"], p["eps"])
    if op == "volo_stem":
        return volo.VOLOStem(p["in_chans"], p["hidden_dim"], p["embed_dim"], p["patch_size"])
    if op in clip.OPS:
        return clip.build(op, p)
    if op in vqgan.OPS:
        return vqgan.build(op, p)
    if op in mingpt.OPS:
        return mingpt.build(op, p)
    if op in detr.OPS:
        return detr.build(op, p)
    if op in ipt.OPS:
        return ipt.build(op, p)
    if op == "volo":
        return volo.VOLO(p["img_size"], p["layers"], p["embed_dims"], p["heads"], p["mlp_ratio"], p["stem_hidden_dim"],
                         p["num_classes"], p["in_chans"], p["probe"])
    raise ValueError("unknown op kind %r" % op)


def volo_macs(op, p, batch):
    """MACs of the VOLO op kinds (B = batch; Linear = rows * in * out; LayerNorm, softmax, GELU,
    pooling, fold and residual adds are not counted):

    outlook_attention: B*H*W*C*C (v) + B*h'*w'*C*k^4*heads (attn Linear on the pooled grid,
    h' = ceil(H/s)) + B*h'*w'*k^4*C (attn @ v) + B*H*W*C*C (proj); outlooker adds
    2*B*H*W*C*hidden (mlp).  class_attention: B*N*C*2C (kv) + B*C*C (q) + 2*B*N*C (scores and
    weighted sum) + B*C*C (proj); class_block adds 2*B*C*hidden.  volo_stem: every conv
    B*Cout*Ho*Wo*Cin*kh*kw.  volo: stem + layers[0] outlookers at H8 x W8 + downsample
    B*H16*W16*C1*C0*4 + the transformer blocks (``block``'s formula at H16*W16 tokens) + two class
    blocks (N = 1 + H16*W16) + head B*C1*classes + aux_head B*H16*W16*C1*classes."""
    b = batch
    if op in ("outlook_attention", "outlooker"):
        (h, w), c, k, s_ = p["img_size"], p["dim"], p["kernel_size"], p["stride"]
        hw2 = outlook_grid(h, s_) * outlook_grid(w, s_)
        m = 2 * b * h * w * c * c + b * hw2 * c * k ** 4 * p["heads"] + b * hw2 * k ** 4 * c
        if op == "outlooker":
            m += 2 * b * h * w * c * int(c * p["mlp_ratio"])
        return m
    if op in ("class_attention", "class_block"):
        n, c = p["tokens"], p["dim"]
        m = b * n * c * 2 * c + 2 * b * c * c + 2 * b * n * c
        if op == "class_block":
            m += 2 * b * c * int(c * p["mlp_ratio"])
        return m
    if op == "volo_stem":
        h, w = p["img_size"]
        h2, w2 = (h - 1) // 2 + 1, (w - 1) // 2 + 1
        h8, w8 = volo.stem_grid(p["img_size"], p["patch_size"])
        cin, hid, e, k = p["in_chans"], p["hidden_dim"], p["embed_dim"], p["patch_size"] // 2
        return b * hid * h2 * w2 * (cin * 49 + 2 * hid * 9) + b * e * h8 * w8 * hid * k * k
    if op == "volo":
        dims, heads, layers, ratio = p["embed_dims"], p["heads"], p["layers"], p["mlp_ratio"]
        c0, c1 = dims[0], dims[3]
        h8, w8 = volo.stem_grid(p["img_size"])
        t = (h8 // 2) * (w8 // 2)
        m = volo_macs("volo_stem", {"img_size": p["img_size"], "in_chans": p["in_chans"],
                                    "hidden_dim": p["stem_hidden_dim"], "embed_dim": c0, "patch_size": 8}, b)
        m += layers[0] * volo_macs("outlooker", {"img_size": [h8, w8], "dim": c0, "heads": heads[0], "kernel_size": 3,
                                                 "stride": 2, "mlp_ratio": ratio}, b)
        m += b * t * c1 * c0 * 4
        for stage in (1, 2, 3):
            m += layers[stage] * macs("block", {"tokens": t, "dim": c1, "heads": heads[stage], "mlp_ratio": ratio}, b)
        m += 2 * volo_macs("class_block", {"tokens": 1 + t, "dim": c1, "mlp_ratio": ratio}, b)
        return m + b * c1 * p["num_classes"] + b * t * c1 * p["num_classes"]
    raise ValueError("not a VOLO op kind: %r" % op)


def macs(op, p, batch):
    """Multiply-accumulates of one forward pass: patch_embed B*N*E*C*ph*pw; soft_split 0;
    gemm B*M*N*K; ms_deform_attn_core N*Lq*M*L*P*D*5 (a bilinear sample counted as 5 MACs per
    channel); ms_deform_attn adds its four Linears; deform_conv2d B*Cout*Ho*Wo*(Cin/groups)*kh*kw.

    ddetr_transformer (N = batch, S = sum H*W, Q = queries, d = d_model, F = ffn_dim):
    enc_layers * [ms_deform_attn(queries = S, points = enc_points) + 2*N*S*d*F]
    + dec_layers * [ms_deform_attn(queries = Q, points = dec_points; its value_proj over all S)
                    + 2*N*Q*d*3d (the packed in_proj applied to tgt + query_pos and to tgt)
                    + N*Q*d*d (out_proj) + 2*N*Q*Q*d (scores and weighted sum) + 2*N*Q*d*F]
    + N*Q*d*2 (reference_points Linear; not with two_stage)
    + with box_refine, dec_layers * N*Q*(2*d*d + 4*d) (the refinement MLP of every decoder layer)
    + with two_stage (C = num_classes): N*S*d*d (enc_output) + N*S*d*C (the encoder's class head on
      every memory row) + N*S*(2*d*d + 4*d) (its box MLP on every memory row) + N*Q*(2d)*(2d)
      (pos_trans).  LayerNorms, the proposals, top-k and the sine embedding are not counted.

    deformable_detr (N = batch, d = d_model, Q = queries, C = num_classes): every convolution
    N*Cout*Ho*Wo*Cin*kh*kw (the 53 convs of the ResNet-50 body, downsamples included, and the four
    input_proj convs: 1x1 from 512/1024/2048 channels on C3-C5, 3x3 s2 from 2048 on C5)
    + the ddetr_transformer MACs of its transformer (level shapes from img_size)
    + class_embed N*Q*d*C + bbox_embed N*Q*(d*d*2 + d*4) (the last decoder layer's heads only; with
    box_refine the transformer's MACs include the refinement MLPs and this heads term is unchanged).
    FrozenBN, GroupNorm, the position embedding, sigmoid/top-k post-processing: not counted.

    The VOLO op kinds: :func:`volo_macs`; the CLIP op kinds: :func:`clip.macs`."""
    if op in volo.OPS:
        return volo_macs(op, p, batch)
    if op in clip.OPS:
        return clip.macs(op, p, batch)
    if op in mingpt.OPS:
        return mingpt.macs(op, p, batch)
    if op in detr.OPS:
        return detr.macs(op, p, batch)
    if op in ipt.OPS:
        return ipt.macs(op, p, batch)
    if op == "deformable_detr":
        n, d, q, c = batch, p["d_model"], p["queries"], p["num_classes"]
        total = 0
        for cv in detector.resnet50_layout(p["img_size"]):
            ho, wo = cv["out"]
            total += n * cv["cout"] * ho * wo * cv["cin"] * cv["k"] * cv["k"]
        tp = detr_transformer_params(p)
        for lvl, (cin, kk) in enumerate(((512, 1), (1024, 1), (2048, 1), (2048, 3))):
            ho, wo = tp["spatial_shapes"][lvl]
            total += n * d * ho * wo * cin * kk * kk
        total += macs("ddetr_transformer", tp, n)
        return total + n * q * d * c + n * q * (d * d * 2 + d * 4)
    if op == "ddetr_transformer":
        n, d, f, q = batch, p["d_model"], p["ffn_dim"], p["queries"]
        s_ = sum(h * w for h, w in p["spatial_shapes"])
        att = {"d_model": d, "heads": p["heads"], "head_dim": d // p["heads"], "spatial_shapes": p["spatial_shapes"]}
        enc = macs("ms_deform_attn", dict(att, queries=s_, points=p["enc_points"]), n) + 2 * n * s_ * d * f
        dec = (macs("ms_deform_attn", dict(att, queries=q, points=p["dec_points"]), n)
               + 2 * n * q * d * 3 * d + n * q * d * d + 2 * n * q * q * d + 2 * n * q * d * f)
        if p.get("box_refine"):
            dec += n * q * (2 * d * d + 4 * d)
        total = p["enc_layers"] * enc + p["dec_layers"] * dec
        if p.get("two_stage"):
            return (total + n * s_ * d * d + n * s_ * d * p["num_classes"] + n * s_ * (2 * d * d + 4 * d)
                    + n * q * (2 * d) * (2 * d))
        return total + n * q * d * 2
    if op in ("ms_deform_attn_core", "ms_deform_attn"):
        nl, lq, m, pts = len(p["spatial_shapes"]), p["queries"], p["heads"], p["points"]
        core = batch * lq * m * nl * pts * p["head_dim"] * 5
        if op == "ms_deform_attn_core":
            return core
        d, s_ = p["d_model"], sum(h * w for h, w in p["spatial_shapes"])
        return (batch * s_ * d * d + batch * lq * d * (m * nl * pts * 2) + batch * lq * d * (m * nl * pts)
                + batch * lq * d * d + core)
    if op == "deform_conv2d":
        ho, wo = conv_out(p)
        kh, kw = p["kernel_size"]
        return batch * p["out_chans"] * ho * wo * (p["in_chans"] // p["groups"]) * kh * kw
    if op == "patch_embed":
        _, _, out = shapes(op, p, batch)
        b, n, e = out["out"]
        ph, pw = p["patch_size"]
        return b * n * e * p["in_chans"] * ph * pw
    if op == "gemm":
        return batch * p["m"] * p["n"] * p["k"]
    if op == "vit":
        (h, w), ps, e = p["img_size"], p["patch_size"], p["embed_dim"]
        n = (h // ps) * (w // ps)
        t = n + (2 if p["distilled"] else 1)
        blk = macs("block", {"tokens": t, "dim": e, "heads": p["heads"], "mlp_ratio": p["mlp_ratio"]}, batch)
        heads = 2 if p["distilled"] else 1
        return batch * n * e * p["in_chans"] * ps * ps + p["depth"] * blk + heads * batch * e * p["num_classes"]
    if op in ("t2t_module", "t2t_vit"):
        mod = t2t.T2TModule(p["img_size"], p["tokens_type"], p["embed_dim"], p["token_dim"], p["in_chans"])
        lop = "token_" + p["tokens_type"]
        (h0, w0), (h1, w1), (h2, w2) = mod.grids
        c = p["token_dim"]
        m = (macs(lop, {"tokens": h0 * w0, "dim": p["in_chans"] * 49, "in_dim": c, "mlp_ratio": 1.0,
                        "kernel_ratio": 0.5}, batch)
             + macs(lop, {"tokens": h1 * w1, "dim": c * 9, "in_dim": c, "mlp_ratio": 1.0, "kernel_ratio": 0.5}, batch)
             + batch * h2 * w2 * c * 9 * p["embed_dim"])
        if op == "t2t_vit":
            blk = macs("block", {"tokens": h2 * w2 + 1, "dim": p["embed_dim"], "heads": p["heads"],
                                 "mlp_ratio": p["mlp_ratio"]}, batch)
            m += p["depth"] * blk + batch * p["embed_dim"] * p["num_classes"]
        return m
    if op in ("token_transformer", "token_performer"):
        bt, d, e = batch * p["tokens"], p["dim"], p["in_dim"]
        if op == "token_performer":
            return bt * d * 3 * e + bt * e * e + 2 * bt * e * e + bt * int(e * p["kernel_ratio"]) * e * 4
        h = int(e * p["mlp_ratio"])
        return bt * d * 3 * e + bt * e * e + 2 * bt * e * h + 2 * batch * p["tokens"] * p["tokens"] * e
    if op in ("mhsa", "block"):
        rows, e = batch * p["tokens"], p["dim"]
        m = rows * e * 3 * e + rows * e * e + 2 * batch * p["tokens"] * p["tokens"] * e
        if op == "block":
            m += 2 * rows * e * int(e * p["mlp_ratio"])
        return m
    if op == "conv2d":
        _, _, out = shapes(op, p, batch)
        b, o, ho, wo = out["out"]
        kh, kw = p["kernel_size"]
        return b * o * ho * wo * p["in_chans"] * kh * kw
    return 0


def check_sampled(op, params, batch, sampled):
    """Validate a ``sampled_outputs`` entry {output name: {"axis": A, "step": K}} against the
    (normalised) case: known output names, 0 <= A < ndim (axis counted with the batch dimension),
    K >= 1, no other keys.  Returns it unchanged."""
    if not isinstance(sampled, dict) or not sampled:
        raise ValueError("sampled_outputs must be a non-empty object {output: {axis, step}}")
    outs = shapes(op, params, batch)[2]
    for name, spec in sampled.items():
        if name not in outs:
            raise ValueError("sampled_outputs: %r is not an output of %s (outputs: %s)" % (name, op, sorted(outs)))
        if not isinstance(spec, dict) or sorted(spec) != ["axis", "step"]:
            raise ValueError("sampled_outputs[%r] must be {\"axis\": A, \"step\": K}" % name)
        axis, step = _as_int(spec["axis"], "sampled_outputs axis"), _as_int(spec["step"], "sampled_outputs step")
        if not 0 <= axis < len(outs[name]):
            raise ValueError("sampled_outputs[%r]: axis %d out of range for shape %s" % (name, axis, outs[name]))
        if step < 1:
            raise ValueError("sampled_outputs[%r]: step must be >= 1" % name)
    return sampled


def sampled_shape(shape, spec):
    """The shape of the stored sample of an output of ``shape``: ceil(n / K) along the axis."""
    out = list(shape)
    out[spec["axis"]] = len(range(0, out[spec["axis"]], spec["step"]))
    return out


def sample_output(arr, spec):
    """The stored part of an output: indices 0, K, 2K, ... along ``spec["axis"]``."""
    import numpy as np
    return np.take(arr, np.arange(0, arr.shape[spec["axis"]], spec["step"]), axis=spec["axis"])


def check_case(case):
    """Validate a case dict {name, op, params, batch[, sampled_outputs]}; return a copy with
    normalised params (and ``sampled_outputs`` when given)."""
    missing = [k for k in ("name", "op", "params") if k not in case]
    if missing:
        raise ValueError("case is missing %s" % missing)
    extra = sorted(set(case) - {"name", "op", "params", "batch", "sampled_outputs", "synth_arrays", "seed"})
    if extra:
        raise ValueError("case has unknown keys %s" % extra)
    name = case["name"]
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name.split("/") \
            or "=" in name or re.search(r"\s", name):
        raise ValueError("bad case name %r (want e.g. 'patch_embed/my_config')" % (name,))
    batch = _as_int(case.get("batch", 1), "batch")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    out = {"name": name, "op": case["op"], "params": normalize_params(case["op"], case["params"]), "batch": batch}
    if "sampled_outputs" in case:
        out["sampled_outputs"] = check_sampled(out["op"], out["params"], batch, case["sampled_outputs"])
    if "synth_arrays" in case:
        out["synth_arrays"] = check_synth_arrays(out["op"], out["params"], batch, case["synth_arrays"])
    if "seed" in case:
        seed = _as_int(case["seed"], "seed")
        if not 0 <= seed < 2 ** 64:
            raise ValueError("seed must be in [0, 2^64)")
        out["seed"] = seed
    return out


def check_synth_arrays(op, p, batch, spec):
    """Validate a ``synth_arrays`` entry {input or weight name: {"center": c, "scale": s}} (finite
    numbers, scale >= 0) against the op's arrays; return a copy with float values."""
    import math
    ins, ws, _ = shapes(op, p, batch)
    if not isinstance(spec, dict) or not spec:
        raise ValueError("synth_arrays must be a non-empty object {array: {center, scale}}")
    out = {}
    for name, cs in spec.items():
        if name not in ins and name not in ws:
            raise ValueError("synth_arrays: %r is not an input or weight of %s" % (name, op))
        if not isinstance(cs, dict) or sorted(cs) != ["center", "scale"]:
            raise ValueError("synth_arrays[%r] must be {\"center\": c, \"scale\": s}" % name)
        c, sc = cs["center"], cs["scale"]
        if isinstance(c, bool) or isinstance(sc, bool) or not all(isinstance(v, (int, float)) and math.isfinite(v)
                                                                  for v in (c, sc)) or sc < 0:
            raise ValueError("synth_arrays[%r]: center and scale must be finite numbers, scale >= 0" % name)
        out[name] = {"center": float(c), "scale": float(sc)}
    return out


def select(regex=None, fixtures_only=False):
    """Return the built-in cases (normalised) whose name matches ``regex`` (re.search); with
    ``fixtures_only``, only those that have a committed fixture."""
    pat = re.compile(regex) if regex else None
    def extras(c):
        more = {}
        if c["name"] in SAMPLED:
            more["sampled_outputs"] = SAMPLED[c["name"]]
        if c["name"] in SYNTH_ARRAYS:
            more["synth_arrays"] = SYNTH_ARRAYS[c["name"]]
        if c["name"] in SEEDS:
            more["seed"] = SEEDS[c["name"]]
        return dict(c, **more)
    return [check_case(extras(c))
            for c in CASES if (pat is None or pat.search(c["name"])) and (FIXTURE[c["name"]] or not fixtures_only)]
