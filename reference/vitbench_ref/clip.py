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

OPS = ("clip_visual", "clip_text", "clip", "clip_resnet")
EPS = 1e-5


class QuickGELU(nn.Module):
    """x * sigmoid(1.702 x), the activation of every OpenAI CLIP model."""

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class LayerNormFP32(nn.LayerNorm):
    """nn.LayerNorm (eps 1e-5) evaluated in float32 (input, weight and bias) and cast back to the
    input's dtype, so it also runs when the module's weights are in half or bfloat16."""

    def __init__(self, width):
        super().__init__(width, eps=EPS)

    def forward(self, x):
        y = torch.nn.functional.layer_norm(x.float(), self.normalized_shape, self.weight.float(), self.bias.float(),
                                           self.eps)
        return y.to(x.dtype)


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
    """CLIP with a ViT image tower (``vision_layers`` an int) or a ModifiedResNet one (a list of 4
    block counts): both feature sets L2-normalized, ``logits`` = exp(logit_scale) * image @ text^T
    (logits_per_image, [images, texts])."""

    def __init__(self, embed_dim, image_resolution, vision_layers, vision_width, vision_patch_size, vision_heads,
                 context_length, vocab_size, transformer_width, transformer_heads, transformer_layers):
        super().__init__()
        if isinstance(vision_layers, (list, tuple)):
            self.visual = ModifiedResNet(list(vision_layers), embed_dim, vision_heads, image_resolution, vision_width)
        else:
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


class Bottleneck(nn.Module):
    """CLIP's anti-aliased Bottleneck: 1x1 -> BN -> ReLU -> 3x3 (stride 1) -> BN -> ReLU ->
    AvgPool2d(stride) when stride > 1 -> 1x1 (4x) -> BN, plus the shortcut (AvgPool2d(stride), 1x1,
    BN when the stride or the width changes), then ReLU."""

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.pool = nn.AvgPool2d(stride) if stride > 1 else nn.Identity()
        self.conv3 = nn.Conv2d(planes, 4 * planes, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(4 * planes)
        self.downsample = None
        if stride > 1 or inplanes != 4 * planes:
            # Keys "downsample.0" (conv) and "downsample.1" (BN), as the checkpoints name them.
            self.downsample = nn.Sequential()
            self.downsample.add_module("-1", nn.AvgPool2d(stride) if stride > 1 else nn.Identity())
            self.downsample.add_module("0", nn.Conv2d(inplanes, 4 * planes, 1, bias=False))
            self.downsample.add_module("1", nn.BatchNorm2d(4 * planes))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = torch.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(self.pool(out)))
        short = x if self.downsample is None else self.downsample(x)
        return torch.relu(out + short)


class AttentionPool2d(nn.Module):
    """The mean of the map's positions put in front of them, learned positions added, one
    multi-head attention whose only query is that mean token (separate q, k, v projections, biases
    concatenated in q, k, v order), c_proj: (B, C, s, s) -> (B, output_dim)."""

    def __init__(self, spacial, embed, heads, output_dim):
        super().__init__()
        self.positional_embedding = nn.Parameter(torch.zeros(spacial * spacial + 1, embed))
        self.k_proj = nn.Linear(embed, embed)
        self.q_proj = nn.Linear(embed, embed)
        self.v_proj = nn.Linear(embed, embed)
        self.c_proj = nn.Linear(embed, output_dim)
        self.heads = heads

    def forward(self, x):
        x = x.flatten(2).permute(2, 0, 1)  # (s*s, B, C)
        x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0) + self.positional_embedding[:, None, :].to(x.dtype)
        out, _ = torch.nn.functional.multi_head_attention_forward(
            query=x[:1], key=x, value=x, embed_dim_to_check=x.shape[-1], num_heads=self.heads,
            q_proj_weight=self.q_proj.weight, k_proj_weight=self.k_proj.weight, v_proj_weight=self.v_proj.weight,
            in_proj_weight=None, in_proj_bias=torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias]),
            bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0, out_proj_weight=self.c_proj.weight,
            out_proj_bias=self.c_proj.bias, use_separate_proj_weight=True, training=False, need_weights=False)
        return out[0]


class ModifiedResNet(nn.Module):
    """CLIP's ResNet image tower: three 3x3 convs (the first stride 2, widths width/2, width/2,
    width) each with BN and ReLU, AvgPool2d(2), layer1..4 of Bottlenecks (planes width * 2^i, the
    first block of layer2..4 stride 2), AttentionPool2d."""

    def __init__(self, layers, output_dim, heads, input_resolution, width):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width // 2, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width // 2)
        self.conv2 = nn.Conv2d(width // 2, width // 2, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width // 2)
        self.conv3 = nn.Conv2d(width // 2, width, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(width)
        self.avgpool = nn.AvgPool2d(2)
        inplanes = width
        for i, blocks in enumerate(layers):
            planes = width * 2 ** i
            mods = []
            for j in range(blocks):
                mods.append(Bottleneck(inplanes, planes, 2 if (j == 0 and i > 0) else 1))
                inplanes = 4 * planes
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*mods))
        self.attnpool = AttentionPool2d(input_resolution // 32, width * 32, heads, output_dim)

    def forward(self, x):
        for conv, bn in ((self.conv1, self.bn1), (self.conv2, self.bn2), (self.conv3, self.bn3)):
            x = torch.relu(bn(conv(x)))
        x = self.avgpool(x)
        for i in range(4):
            x = getattr(self, "layer%d" % (i + 1))(x)
        return self.attnpool(x)


class CLIPResNet(nn.Module):
    """The ResNet image tower under ``visual.``; returns ``image_features``."""

    def __init__(self, layers, output_dim, heads, input_resolution, width):
        super().__init__()
        self.visual = ModifiedResNet(layers, output_dim, heads, input_resolution, width)

    def forward(self, image):
        return {"image_features": self.visual(image)}


def resnet_final_side(res):
    """The side of layer4's output: ceil(res / 2) after the stem's stride-2 conv, then four 2x2 pools."""
    s = (res + 1) // 2
    for _ in range(4):
        s //= 2
    return s


def resnet_shapes(p, b):
    w, ws = p["width"], {}

    def conv(name, bn, cin, cout, k):
        ws["visual.%s.weight" % name] = [cout, cin, k, k]
        for f in ("weight", "bias", "running_mean", "running_var"):
            ws["visual.%s.%s" % (bn, f)] = [cout]
    conv("conv1", "bn1", 3, w // 2, 3)
    conv("conv2", "bn2", w // 2, w // 2, 3)
    conv("conv3", "bn3", w // 2, w, 3)
    cin = w
    for i, blocks in enumerate(p["layers"]):
        planes = w * 2 ** i
        for j in range(blocks):
            pre = "layer%d.%d." % (i + 1, j)
            conv(pre + "conv1", pre + "bn1", cin, planes, 1)
            conv(pre + "conv2", pre + "bn2", planes, planes, 3)
            conv(pre + "conv3", pre + "bn3", planes, 4 * planes, 1)
            if (j == 0 and i > 0) or cin != 4 * planes:
                conv(pre + "downsample.0", pre + "downsample.1", cin, 4 * planes, 1)
            cin = 4 * planes
    s = p["input_resolution"] // 32
    ws["visual.attnpool.positional_embedding"] = [s * s + 1, cin]
    for name in ("k_proj", "q_proj", "v_proj"):
        ws["visual.attnpool.%s.weight" % name] = [cin, cin]
        ws["visual.attnpool.%s.bias" % name] = [cin]
    ws["visual.attnpool.c_proj.weight"] = [p["output_dim"], cin]
    ws["visual.attnpool.c_proj.bias"] = [p["output_dim"]]
    res = p["input_resolution"]
    return {"image": [b, 3, res, res]}, ws, {"image_features": [b, p["output_dim"]]}


def resnet_macs(p, b):
    """Every conv (B * Cout * Ho * Wo * Cin * k * k), the attention pool's q (one token), k, v (all
    s*s + 1) and c_proj Linears and its two products with the single query."""
    w, res = p["width"], p["input_resolution"]
    m = 0
    h = (res + 1) // 2
    m += b * h * h * (w // 2 * 3 * 9 + w // 2 * w // 2 * 9 + w * w // 2 * 9)
    h //= 2
    cin = w
    for i, blocks in enumerate(p["layers"]):
        planes = w * 2 ** i
        for j in range(blocks):
            stride = 2 if (j == 0 and i > 0) else 1
            ho = h // stride
            m += b * h * h * cin * planes + b * h * h * planes * planes * 9 + b * ho * ho * planes * 4 * planes
            if stride > 1 or cin != 4 * planes:
                m += b * ho * ho * cin * 4 * planes
            cin, h = 4 * planes, ho
    n = h * h + 1
    return m + b * cin * cin * (1 + 2 * n) + 2 * b * n * cin + b * cin * p["output_dim"]


def build(op, p):
    if op == "clip_resnet":
        return CLIPResNet(p["layers"], p["output_dim"], p["heads"], p["input_resolution"], p["width"])
    if op == "clip_visual":
        return CLIPVisual(p["input_resolution"], p["patch_size"], p["width"], p["layers"], p["heads"], p["output_dim"])
    if op == "clip_text":
        return CLIPText(p["context_length"], p["vocab_size"], p["width"], p["heads"], p["layers"], p["embed_dim"])
    return CLIP(p["embed_dim"], p["image_resolution"], p["vision_layers"], p["vision_width"], p.get("vision_patch_size"),
                p["vision_heads"], p["context_length"], p["vocab_size"], p["transformer_width"],
                p["transformer_heads"], p["transformer_layers"])


def _resnet_tower(op, p):
    """The clip_resnet params of a clip network's ResNet image tower, or None for a ViT one."""
    if op != "clip" or not isinstance(p["vision_layers"], list):
        return None
    return {"layers": p["vision_layers"], "output_dim": p["embed_dim"], "heads": p["vision_heads"],
            "input_resolution": p["image_resolution"], "width": p["vision_width"]}


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
    if op == "clip_resnet":
        if len(p["layers"]) != 4 or p["width"] % 2 or (32 * p["width"]) % p["heads"]:
            raise ValueError("clip_resnet: 4 layers, an even width and 32 * width a multiple of heads")
        if resnet_final_side(p["input_resolution"]) != p["input_resolution"] // 32:
            raise ValueError("clip_resnet: input_resolution %d does not give a map of input_resolution // 32"
                             % p["input_resolution"])
        return
    if _resnet_tower(op, p) is not None:
        check("clip_resnet", _resnet_tower(op, p))
    elif op != "clip_text":
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
    if op == "clip_resnet":
        return resnet_shapes(p, b)
    inputs, weights, outputs = {}, {}, {}
    if _resnet_tower(op, p) is not None:
        inputs, weights, _ = resnet_shapes(_resnet_tower(op, p), b)
    elif op != "clip_text":
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
    if op == "clip_resnet":
        return resnet_macs(p, b)
    m = 0
    if _resnet_tower(op, p) is not None:
        m += resnet_macs(_resnet_tower(op, p), b)
    elif op != "clip_text":
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
    if op == "clip_resnet":
        # Not independent code: the same module in float64 (a NumPy ResNet would be slow); it bounds
        # the float32 rounding of the stored output. The parts are checked in tests/test_clip.py.
        m = build(op, p).double().eval()
        m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=False)
        with torch.no_grad():
            return m(torch.from_numpy(inputs["image"].astype(np.float64)))
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    if op == "clip_visual":
        return {"image_features": _visual_float64(inputs["image"], w, op, p)}
    if op == "clip_text":
        return {"text_features": _text_float64(inputs["text"], w, op, p)}
    rn = _resnet_tower(op, p)
    if rn is not None:
        pre = "visual."
        img = independent_reference("clip_resnet", {"image": inputs["image"]},
                                    {k: v for k, v in weights.items() if k.startswith(pre)}, rn)["image_features"]
        img = img.numpy()
    else:
        img = _visual_float64(inputs["image"], w, op, p)
    txt = _text_float64(inputs["text"], w, op, p)
    img = img / np.linalg.norm(img, axis=1, keepdims=True)
    txt = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    return {"logits": np.exp(w["logit_scale"]) * img @ txt.T}
