"""OpenAI CLIP reference modules (docs/reference-notes.md, CLIP), written from the spec with the
released checkpoints' state_dict names: the ViT image tower (``CLIPVisual``: every key under
``visual.``), the text tower (``CLIPText``: ``token_embedding.weight``, ``positional_embedding``,
``transformer.resblocks.{i}.*``, ``ln_final.*``, ``text_projection``) and the network (``CLIP``:
both towers and ``logit_scale``), plus their shapes, MACs and a float64 NumPy recomputation.

Token ids are a float32 input ``text [B, context]`` (exact below 2^24), so fixtures need no
tokenizer; the modules convert them to integers."""

import math

import numpy as np
import torch
from torch import nn

from .layers import layernorm_float64

OPS = ("clip_visual", "clip_text", "clip")
EPS = 1e-5


class QuickGELU(nn.Module):
    """x * sigmoid(1.702 x), the activation of every OpenAI CLIP model."""

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class LayerNormFP32(nn.LayerNorm):
    """nn.LayerNorm (eps 1e-5) evaluated in float32 and cast back to the input's dtype."""

    def __init__(self, width):
        super().__init__(width, eps=EPS)

    def forward(self, x):
        return super().forward(x.float()).to(x.dtype)


class _MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.gelu = QuickGELU()
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class ResidualAttentionBlock(nn.Module):
    """x + MHA(ln_1(x)), then + mlp(ln_2(x)) on sequence-first tokens (L, B, W); ``causal`` adds
    the (L, L) mask that is -inf above the diagonal to the attention scores."""

    def __init__(self, width, heads, causal):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)
        self.ln_1 = LayerNormFP32(width)
        self.mlp = _MLP(width)
        self.ln_2 = LayerNormFP32(width)
        self.causal = causal

    def forward(self, x):
        mask = None
        if self.causal:
            n = x.shape[0]
            mask = torch.full((n, n), float("-inf"), dtype=x.dtype).triu(1)
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False, attn_mask=mask)[0]
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, width, layers, heads, causal):
        super().__init__()
        self.resblocks = nn.Sequential(*[ResidualAttentionBlock(width, heads, causal) for _ in range(layers)])

    def forward(self, x):
        return self.resblocks(x)


class VisionTransformer(nn.Module):
    """CLIP's image tower: conv1 (kernel = stride = patch, no bias) -> class_embedding in front ->
    + positional_embedding -> ln_pre -> blocks -> ln_post on the class token -> @ proj (no bias)."""

    def __init__(self, input_resolution, patch_size, width, layers, heads, output_dim):
        super().__init__()
        grid = input_resolution // patch_size
        self.conv1 = nn.Conv2d(3, width, patch_size, patch_size, bias=False)
        self.class_embedding = nn.Parameter(torch.zeros(width))
        self.positional_embedding = nn.Parameter(torch.zeros(grid * grid + 1, width))
        self.ln_pre = LayerNormFP32(width)
        self.transformer = Transformer(width, layers, heads, False)
        self.ln_post = LayerNormFP32(width)
        self.proj = nn.Parameter(torch.zeros(width, output_dim))

    def forward(self, x):
        x = self.conv1(x).flatten(2).transpose(1, 2)  # (B, grid^2, W), patches row-major
        cls = self.class_embedding.to(x.dtype) + torch.zeros(x.shape[0], 1, x.shape[2], dtype=x.dtype)
        x = torch.cat([cls, x], dim=1) + self.positional_embedding.to(x.dtype)
        x = self.ln_pre(x)
        x = self.transformer(x.permute(1, 0, 2)).permute(1, 0, 2)
        return self.ln_post(x[:, 0, :]) @ self.proj


def _add_text_tower(m, context_length, vocab_size, width, heads, layers, embed_dim):
    m.token_embedding = nn.Embedding(vocab_size, width)
    m.positional_embedding = nn.Parameter(torch.zeros(context_length, width))
    m.transformer = Transformer(width, layers, heads, True)
    m.ln_final = LayerNormFP32(width)
    m.text_projection = nn.Parameter(torch.zeros(width, embed_dim))


def _encode_text(m, text):
    """Token ids (float) -> features: embeddings + positions, causal blocks, ln_final on every
    position, the row at argmax of the ids (the first end-of-text token), @ text_projection."""
    ids = text.long()
    x = m.token_embedding(ids) + m.positional_embedding
    x = m.transformer(x.permute(1, 0, 2)).permute(1, 0, 2)
    x = m.ln_final(x)
    return x[torch.arange(x.shape[0]), ids.argmax(dim=-1)] @ m.text_projection


class CLIPVisual(nn.Module):
    """The image tower under ``visual.`` (the checkpoint's names); returns ``image_features``."""

    def __init__(self, input_resolution, patch_size, width, layers, heads, output_dim):
        super().__init__()
        self.visual = VisionTransformer(input_resolution, patch_size, width, layers, heads, output_dim)

    def forward(self, image):
        return {"image_features": self.visual(image)}


class CLIPText(nn.Module):
    """The text tower with the checkpoint's top-level names; returns ``text_features``."""

    def __init__(self, context_length, vocab_size, width, heads, layers, embed_dim):
        super().__init__()
        _add_text_tower(self, context_length, vocab_size, width, heads, layers, embed_dim)

    def forward(self, text):
        return {"text_features": _encode_text(self, text)}


class CLIP(nn.Module):
    """CLIP with a ViT image tower: both feature sets L2-normalized, ``logits`` =
    exp(logit_scale) * image @ text^T (logits_per_image, [images, texts])."""

    def __init__(self, embed_dim, image_resolution, vision_layers, vision_width, vision_patch_size, vision_heads,
                 context_length, vocab_size, transformer_width, transformer_heads, transformer_layers):
        super().__init__()
        self.visual = VisionTransformer(image_resolution, vision_patch_size, vision_width, vision_layers,
                                        vision_heads, embed_dim)
        _add_text_tower(self, context_length, vocab_size, transformer_width, transformer_heads, transformer_layers,
                        embed_dim)
        self.logit_scale = nn.Parameter(torch.ones([]))

    def forward(self, image, text):
        img = self.visual(image)
        txt = _encode_text(self, text)
        img = img / img.norm(dim=1, keepdim=True)
        txt = txt / txt.norm(dim=1, keepdim=True)
        return {"logits": self.logit_scale.exp() * img @ txt.t()}


def build(op, p):
    if op == "clip_visual":
        return CLIPVisual(p["input_resolution"], p["patch_size"], p["width"], p["layers"], p["heads"], p["output_dim"])
    if op == "clip_text":
        return CLIPText(p["context_length"], p["vocab_size"], p["width"], p["heads"], p["layers"], p["embed_dim"])
    return CLIP(p["embed_dim"], p["image_resolution"], p["vision_layers"], p["vision_width"], p["vision_patch_size"],
                p["vision_heads"], p["context_length"], p["vocab_size"], p["transformer_width"],
                p["transformer_heads"], p["transformer_layers"])


def _visual_args(op, p):
    """(resolution, patch, width, layers, heads, output_dim) of the image tower."""
    if op == "clip_visual":
        return p["input_resolution"], p["patch_size"], p["width"], p["layers"], p["heads"], p["output_dim"]
    return (p["image_resolution"], p["vision_patch_size"], p["vision_width"], p["vision_layers"], p["vision_heads"],
            p["embed_dim"])


def _text_args(op, p):
    """(context, vocab, width, heads, layers, embed_dim) of the text tower."""
    if op == "clip_text":
        return p["context_length"], p["vocab_size"], p["width"], p["heads"], p["layers"], p["embed_dim"]
    return (p["context_length"], p["vocab_size"], p["transformer_width"], p["transformer_heads"],
            p["transformer_layers"], p["embed_dim"])


def _blocks(prefix, width, layers):
    w = {}
    for i in range(layers):
        pre = "%sresblocks.%d." % (prefix, i)
        w.update({pre + "attn.in_proj_weight": [3 * width, width], pre + "attn.in_proj_bias": [3 * width],
                  pre + "attn.out_proj.weight": [width, width], pre + "attn.out_proj.bias": [width],
                  pre + "ln_1.weight": [width], pre + "ln_1.bias": [width],
                  pre + "mlp.c_fc.weight": [4 * width, width], pre + "mlp.c_fc.bias": [4 * width],
                  pre + "mlp.c_proj.weight": [width, 4 * width], pre + "mlp.c_proj.bias": [width],
                  pre + "ln_2.weight": [width], pre + "ln_2.bias": [width]})
    return w


def check(op, p):
    """Raise ValueError for params the original cannot build."""
    if op != "clip_text":
        res, patch, width, _, heads, _ = _visual_args(op, p)
        if res < patch:
            raise ValueError("%s: resolution %d is smaller than one patch (%d)" % (op, res, patch))
        if width % heads:
            raise ValueError("%s: vision width %d is not a multiple of heads %d" % (op, width, heads))
    if op != "clip_visual":
        _, vocab, width, heads, _, _ = _text_args(op, p)
        if width % heads:
            raise ValueError("%s: text width %d is not a multiple of heads %d" % (op, width, heads))
        if vocab > 2 ** 24:
            raise ValueError("%s: vocab_size %d: ids above 2^24 are not exact in float32" % (op, vocab))


def shapes(op, p, b, texts=None):
    """(inputs, weights, outputs) of a CLIP op kind at batch ``b`` (images or sequences; the clip
    network's texts come from its params)."""
    inputs, weights, outputs = {}, {}, {}
    if op != "clip_text":
        res, patch, width, layers, _, out = _visual_args(op, p)
        grid = res // patch
        inputs["image"] = [b, 3, res, res]
        weights.update({"visual.class_embedding": [width], "visual.positional_embedding": [grid * grid + 1, width],
                        "visual.proj": [width, out], "visual.conv1.weight": [width, 3, patch, patch],
                        "visual.ln_pre.weight": [width], "visual.ln_pre.bias": [width]})
        weights.update(_blocks("visual.transformer.", width, layers))
        weights.update({"visual.ln_post.weight": [width], "visual.ln_post.bias": [width]})
        outputs["image_features"] = [b, out]
    if op != "clip_visual":
        ctx, vocab, width, _, layers, embed = _text_args(op, p)
        t = b if op == "clip_text" else p["texts"]
        inputs["text"] = [t, ctx]
        weights.update({"positional_embedding": [ctx, width], "text_projection": [width, embed]})
        weights.update(_blocks("transformer.", width, layers))
        weights.update({"token_embedding.weight": [vocab, width], "ln_final.weight": [width],
                        "ln_final.bias": [width]})
        outputs["text_features"] = [t, embed]
    if op == "clip":
        weights["logit_scale"] = []
        outputs = {"logits": [b, p["texts"]]}
    return inputs, weights, outputs


def macs(op, p, b):
    """Conv1 and every Linear (rows * in * out), the attention products 2 * B * heads * N^2 * D per
    block (all positions, as PyTorch multiplies them under the causal mask too), the projections;
    the clip network adds images * texts * embed_dim for the similarities."""
    m = 0
    if op != "clip_text":
        res, patch, width, layers, _, out = _visual_args(op, p)
        g = res // patch
        n = g * g + 1
        m += b * g * g * width * 3 * patch * patch + layers * (b * n * width * 12 * width + 2 * b * n * n * width)
        m += b * width * out
    if op != "clip_visual":
        ctx, _, width, _, layers, embed = _text_args(op, p)
        t = b if op == "clip_text" else p["texts"]
        m += layers * (t * ctx * width * 12 * width + 2 * t * ctx * ctx * width) + t * width * embed
    if op == "clip":
        m += b * p["texts"] * p["embed_dim"]
    return m


def _blocks_float64(x, w, prefix, layers, heads, causal):
    b, n, c = x.shape
    d = c // heads
    mask = np.triu(np.full((n, n), -np.inf), 1) if causal else 0.0
    for i in range(layers):
        pre = "%sresblocks.%d." % (prefix, i)
        h = layernorm_float64(x, w[pre + "ln_1.weight"], w[pre + "ln_1.bias"], EPS)
        qkv = h @ w[pre + "attn.in_proj_weight"].T + w[pre + "attn.in_proj_bias"]
        q, k, v = qkv.reshape(b, n, 3, heads, d).transpose(2, 0, 3, 1, 4)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        o = (s @ v).transpose(0, 2, 1, 3).reshape(b, n, c)
        x = x + o @ w[pre + "attn.out_proj.weight"].T + w[pre + "attn.out_proj.bias"]
        h = layernorm_float64(x, w[pre + "ln_2.weight"], w[pre + "ln_2.bias"], EPS)
        h = h @ w[pre + "mlp.c_fc.weight"].T + w[pre + "mlp.c_fc.bias"]
        h = h / (1 + np.exp(-1.702 * h))
        x = x + h @ w[pre + "mlp.c_proj.weight"].T + w[pre + "mlp.c_proj.bias"]
    return x


def _visual_float64(image, w, op, p):
    res, patch, width, layers, heads, _ = _visual_args(op, p)
    b = image.shape[0]
    g = res // patch
    x = image.astype(np.float64)[:, :, :g * patch, :g * patch].reshape(b, 3, g, patch, g, patch)
    x = x.transpose(0, 2, 4, 1, 3, 5).reshape(b, g * g, 3 * patch * patch)
    tok = x @ w["visual.conv1.weight"].reshape(width, -1).T
    cls = np.broadcast_to(w["visual.class_embedding"], (b, 1, width))
    x = np.concatenate([cls, tok], axis=1) + w["visual.positional_embedding"]
    x = layernorm_float64(x, w["visual.ln_pre.weight"], w["visual.ln_pre.bias"], EPS)
    x = _blocks_float64(x, w, "visual.transformer.", layers, heads, False)
    return layernorm_float64(x[:, 0], w["visual.ln_post.weight"], w["visual.ln_post.bias"], EPS) @ w["visual.proj"]


def _text_float64(text, w, op, p):
    _, _, _, heads, layers, _ = _text_args(op, p)
    ids = text.astype(np.int64)
    x = w["token_embedding.weight"][ids] + w["positional_embedding"]
    x = _blocks_float64(x, w, "transformer.", layers, heads, True)
    x = x[np.arange(x.shape[0]), ids.argmax(axis=-1)]
    return layernorm_float64(x, w["ln_final.weight"], w["ln_final.bias"], EPS) @ w["text_projection"]


def independent_reference(op, inputs, weights, p):
    """Every output recomputed in float64 NumPy from the weights (independent of torch's
    MultiheadAttention, Embedding and LayerNorm)."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    if op == "clip_visual":
        return {"image_features": _visual_float64(inputs["image"], w, op, p)}
    if op == "clip_text":
        return {"text_features": _text_float64(inputs["text"], w, op, p)}
    img = _visual_float64(inputs["image"], w, op, p)
    txt = _text_float64(inputs["text"], w, op, p)
    img = img / np.linalg.norm(img, axis=1, keepdims=True)
    txt = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    return {"logits": np.exp(w["logit_scale"]) * img @ txt.T}
