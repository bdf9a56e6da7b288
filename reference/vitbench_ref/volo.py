"""VOLO reference modules (docs/reference-notes.md, "VOLO"; the original sail-sg/volo ``models/volo.py``
semantics, eval mode) and their independent float64 NumPy recomputations.

Layout between blocks is channels-last ``(B, H, W, C)``.  Every Linear weight is ``[out, in]``;
LayerNorm eps 1e-5; exact (erf) GELU; the v / qkv / q / kv projections have no bias.

Op kinds (fixtures/FORMAT.md): ``outlook_attention`` (:class:`OutlookAttention`), ``outlooker``
(:class:`Outlooker`), ``class_attention`` (:class:`ClassAttention`), ``class_block``
(:class:`ClassBlock`), ``volo_stem`` (:class:`VOLOStem`, the original's PatchEmbed with
stem_conv=True, stem_stride=2, output permuted to channels-last) and ``volo`` (:class:`VOLO`).
"""

import math

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from .layers import Block, conv_bn_act_float64, layernorm_float64, block_float64, pair


def _ceil_div(a, b):
    return -(-a // b)


class OutlookAttention(nn.Module):
    """VOLO's OutlookAttention (docs/reference-notes.md, "VOLO"), the original's unfold / matmul / fold path.

    ``x [B, H, W, C]`` (already normed) -> ``v = Linear(C, C, no bias)``, NCHW, ``Unfold(k, p, s)``
    -> ``[B, heads, h'w', k*k, C/heads]``; the attention logits come from ``x`` (not v):
    ``AvgPool2d(s, s, ceil_mode=True)`` on x as NCHW, channels-last, ``attn`` Linear(C, k^4*heads)
    -> ``[B, heads, h'w', k*k (target i), k*k (source j)]``, times head_dim^-0.5, softmax over j;
    ``attn @ v`` -> ``F.fold`` back to (H, W) (overlaps SUMMED) -> channels-last -> ``proj``.
    h' = ceil(H/s) must equal the Unfold count (H + 2p - k)//s + 1 (checked by the case rules).
    State dict: ``v.weight``, ``attn.weight``, ``attn.bias``, ``proj.weight``, ``proj.bias``."""

    def __init__(self, dim, heads, kernel_size=3, padding=1, stride=2):
        super().__init__()
        self.heads = int(heads)
        self.head_dim = dim // self.heads
        self.kernel_size, self.padding, self.stride = int(kernel_size), int(padding), int(stride)
        self.scale = self.head_dim ** -0.5
        self.v = nn.Linear(dim, dim, bias=False)
        self.attn = nn.Linear(dim, self.kernel_size ** 4 * self.heads)
        self.proj = nn.Linear(dim, dim)
        self.unfold = nn.Unfold(kernel_size=self.kernel_size, padding=self.padding, stride=self.stride)
        self.pool = nn.AvgPool2d(kernel_size=self.stride, stride=self.stride, ceil_mode=True)
        self.eval()

    def forward(self, x):
        b, h, w, c = x.shape
        kk = self.kernel_size * self.kernel_size
        v = self.v(x).permute(0, 3, 1, 2)  # B, C, H, W
        oh, ow = math.ceil(h / self.stride), math.ceil(w / self.stride)
        v = self.unfold(v).reshape(b, self.heads, c // self.heads, kk, oh * ow).permute(0, 1, 4, 3, 2)
        attn = self.pool(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        attn = self.attn(attn).reshape(b, oh * ow, self.heads, kk, kk).permute(0, 2, 1, 3, 4)
        attn = (attn * self.scale).softmax(dim=-1)
        x = (attn @ v).permute(0, 1, 4, 3, 2).reshape(b, c * kk, oh * ow)
        x = F.fold(x, output_size=(h, w), kernel_size=self.kernel_size, padding=self.padding, stride=self.stride)
        return self.proj(x.permute(0, 2, 3, 1))


def _mlp(dim, hidden):
    """The timm-style Mlp: ``fc1`` -> exact GELU -> ``fc2`` (state dict ``fc1.*``, ``fc2.*``)."""
    mlp = nn.Sequential()
    mlp.fc1 = nn.Linear(dim, hidden)
    mlp.act = nn.GELU()
    mlp.fc2 = nn.Linear(hidden, dim)
    return mlp


class Outlooker(nn.Module):
    """VOLO's Outlooker (docs/reference-notes.md, "VOLO"), pre-norm on ``[B, H, W, C]``:
    ``x = x + attn(norm1(x)); out = x + mlp(norm2(x))``, hidden int(dim * mlp_ratio)."""

    def __init__(self, dim, heads, kernel_size=3, padding=1, stride=2, mlp_ratio=3.0, eps=1e-5):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = OutlookAttention(dim, heads, kernel_size, padding, stride)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = _mlp(dim, int(dim * mlp_ratio))
        self.eval()

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Transformer(Block):
    """VOLO's Transformer block (docs/reference-notes.md, "VOLO") on ``[B, H, W, C]``: the pre-norm timm Block
    (qkv without bias, LayerNorm eps 1e-5, scale head_dim^-0.5) over the H*W tokens, row-major,
    reshaped back.  Same state dict names as Block (``norm1``, ``attn.qkv``, ``attn.proj``,
    ``norm2``, ``mlp.fc1``, ``mlp.fc2``)."""

    def __init__(self, dim, heads, mlp_ratio=3.0, eps=1e-5):
        super().__init__(dim, heads, mlp_ratio, qkv_bias=False, scale=None, eps=eps)

    def forward(self, x):
        b, h, w, c = x.shape
        return super().forward(x.reshape(b, h * w, c)).reshape(b, h, w, c)


class ClassAttention(nn.Module):
    """VOLO's ClassAttention (docs/reference-notes.md, "VOLO"): ``x [B, N, C] -> [B, 1, C]``; keys and values
    from ``kv`` (Linear(C, 2C), no bias) over ALL N tokens, the query from ``q`` (no bias) on the
    class token x[:, :1] only, ``softmax((q * scale) @ k^T) @ v`` per head, then ``proj``."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = int(heads)
        self.head_dim = dim // self.heads
        self.scale = self.head_dim ** -0.5
        self.kv = nn.Linear(dim, 2 * dim, bias=False)
        self.q = nn.Linear(dim, dim, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.eval()

    def forward(self, x):
        b, n, _ = x.shape
        kv = self.kv(x).reshape(b, n, 2, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        q = self.q(x[:, :1, :]).reshape(b, self.heads, 1, self.head_dim)
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, 1, self.heads * self.head_dim))


class ClassBlock(nn.Module):
    """VOLO's ClassBlock (docs/reference-notes.md, "VOLO"): ``cls = x[:, :1] + attn(norm1(x))``,
    ``cls = cls + mlp(norm2(cls))``, output ``cat(cls, x[:, 1:])`` (patch tokens unchanged)."""

    def __init__(self, dim, heads, mlp_ratio=3.0, eps=1e-5):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = ClassAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = _mlp(dim, int(dim * mlp_ratio))
        self.eval()

    def forward(self, x):
        cls = x[:, :1] + self.attn(self.norm1(x))
        cls = cls + self.mlp(self.norm2(cls))
        return torch.cat([cls, x[:, 1:]], dim=1)


class VOLOStem(nn.Module):
    """VOLO's PatchEmbed with stem_conv=True, stem_stride=2 (docs/reference-notes.md, "VOLO"): ``conv`` =
    Sequential(Conv7x7 s2 p3, BN, ReLU, Conv3x3 p1, BN, ReLU, Conv3x3 p1, BN, ReLU) (no conv bias;
    BN eps 1e-5 in eval mode, running statistics), then ``proj`` Conv2d(hidden, E,
    kernel = stride = patch_size/2, bias).  ``x [B, in, H, W] -> [B, H8, W8, E]`` channels-last
    (the VOLO network's ``permute(0, 2, 3, 1)``), H8 = ((H - 1)//2 + 1) // (patch_size/2)."""

    def __init__(self, in_chans=3, hidden_dim=64, embed_dim=384, patch_size=8):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_chans, hidden_dim, kernel_size=7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Conv2d(hidden_dim, hidden_dim, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Conv2d(hidden_dim, hidden_dim, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
        )
        self.proj = nn.Conv2d(hidden_dim, embed_dim, kernel_size=patch_size // 2, stride=patch_size // 2)
        self.eval()

    def forward(self, x):
        return self.proj(self.conv(x)).permute(0, 2, 3, 1)


class Downsample(nn.Module):
    """VOLO's Downsample: channels-last -> NCHW -> ``proj`` Conv2d(k=s=patch) -> channels-last."""

    def __init__(self, in_dim, out_dim, patch_size=2):
        super().__init__()
        self.proj = nn.Conv2d(in_dim, out_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)


def stem_grid(img_size, patch_size=8):
    """(H8, W8) of the stem for an image (H, W): ((H - 1)//2 + 1) // (patch_size/2)."""
    h, w = pair(img_size)
    return ((h - 1) // 2 + 1) // (patch_size // 2), ((w - 1) // 2 + 1) // (patch_size // 2)


class VOLO(nn.Module):
    """The VOLO network (docs/reference-notes.md, "VOLO"), the original's eval-mode forward with patch_size 8,
    stem_stride 2, outlook k3 p1 s2 in stage 0 only, downsamples [T, F, F, F], post_layers
    ['ca', 'ca'] (heads[-1]), return_dense (aux head), qkv_bias False.

    ``patch_embed`` (:class:`VOLOStem`) -> ``network.0`` (layers[0] Outlookers) -> ``network.1``
    (:class:`Downsample`, C0 -> C1) -> ``+ pos_embed [1, H16, W16, C1]`` -> ``network.2/3/4``
    (Transformer blocks) -> tokens ``[B, H16*W16, C1]`` -> ``cat(cls_token, .)`` ->
    ``post_network.0/1`` (ClassBlocks) -> ``norm`` -> ``logits = head(x[:, 0]) + 0.5 *
    aux_head(x[:, 1:]).max(1)``.  ``forward`` returns a dict: ``logits`` and, with ``probe``,
    ``stages.stem``, ``stages.outlookers`` ([B, H8, W8, C0]), ``stages.transformers``
    ([B, H16, W16, C1]) and ``stages.post`` ([B, 1 + H16*W16, C1], before ``norm``)."""

    def __init__(self, img_size, layers, embed_dims, heads, mlp_ratio=3.0, stem_hidden_dim=64, num_classes=1000,
                 in_chans=3, probe=False):
        super().__init__()
        h8, w8 = stem_grid(img_size)
        c0, c1 = embed_dims[0], embed_dims[-1]
        self.patch_embed = VOLOStem(in_chans, stem_hidden_dim, c0, 8)
        self.pos_embed = nn.Parameter(torch.zeros(1, h8 // 2, w8 // 2, c1))
        network = [nn.Sequential(*[Outlooker(c0, heads[0], 3, 1, 2, mlp_ratio) for _ in range(layers[0])]),
                   Downsample(c0, embed_dims[1], 2)]
        for i in (1, 2, 3):
            network.append(nn.Sequential(*[Transformer(embed_dims[i], heads[i], mlp_ratio) for _ in range(layers[i])]))
        self.network = nn.ModuleList(network)
        self.post_network = nn.ModuleList([ClassBlock(c1, heads[-1], mlp_ratio) for _ in range(2)])
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c1))
        self.aux_head = nn.Linear(c1, num_classes)
        self.norm = nn.LayerNorm(c1)
        self.head = nn.Linear(c1, num_classes)
        self.probe = probe
        self.eval()

    def forward(self, x):
        out = {}
        x = self.patch_embed(x)
        if self.probe:
            out["stages.stem"] = x
        for idx, block in enumerate(self.network):
            if idx == 2:
                x = x + self.pos_embed
            x = block(x)
            if self.probe and idx == 0:
                out["stages.outlookers"] = x
        if self.probe:
            out["stages.transformers"] = x
        b, _, _, c = x.shape
        x = torch.cat([self.cls_token.expand(b, -1, -1), x.reshape(b, -1, c)], dim=1)
        for block in self.post_network:
            x = block(x)
        if self.probe:
            out["stages.post"] = x
        x = self.norm(x)
        out["logits"] = self.head(x[:, 0]) + 0.5 * self.aux_head(x[:, 1:]).max(1)[0]
        return out


# ---------------------------------------------------------------------------------------------
# Independent float64 NumPy recomputations (explicit loops / einsum; no torch modules).


def _f64(weights, prefix=""):
    """The arrays of ``weights`` whose name starts with ``prefix``, prefix stripped, as float64."""
    return {k[len(prefix):]: np.asarray(v, dtype=np.float64) for k, v in weights.items() if k.startswith(prefix)}


def gelu_float64(h):
    """Exact GELU 0.5 h (1 + erf(h / sqrt 2)) in float64 (math.erf per element)."""
    h = np.asarray(h, dtype=np.float64)
    erf = np.fromiter(map(math.erf, (h / math.sqrt(2)).ravel()), dtype=np.float64, count=h.size).reshape(h.shape)
    return 0.5 * h * (1 + erf)


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def outlook_attention_float64(x, weights, p, prefix=""):
    """OutlookAttention recomputed in float64: ``x [B, H, W, C]`` channels-last.  The pooled
    logits input is an explicit average over the valid pixels of each s x s window (ceil mode:
    the last window may be partial); window (wy, wx) reads source pixel
    (wy*s - p + jy, wx*s - p + jx) (zero outside) and scatter-ADDS its k*k outputs to pixel
    (wy*s - p + iy, wx*s - p + ix) (dropped outside), per head with head-major channels."""
    w = _f64(weights, prefix)
    x = np.asarray(x, dtype=np.float64)
    b, hh, ww, c = x.shape
    heads, k, pad, s = p["heads"], p["kernel_size"], p["padding"], p["stride"]
    hd, kk = c // heads, k * k
    v = x @ w["v.weight"].T
    oh, ow = _ceil_div(hh, s), _ceil_div(ww, s)
    pooled = np.zeros((b, oh, ow, c))
    for oy in range(oh):
        for ox in range(ow):
            acc, count = np.zeros((b, c)), 0
            for dy in range(s):
                for dx in range(s):
                    yy, xx = oy * s + dy, ox * s + dx
                    if yy < hh and xx < ww:
                        acc += x[:, yy, xx]
                        count += 1
            pooled[:, oy, ox] = acc / count
    logits = (pooled @ w["attn.weight"].T + w["attn.bias"]).reshape(b, oh, ow, heads, kk, kk)
    attn = _softmax(logits * hd ** -0.5)  # [B, h', w', heads, i, j]
    out = np.zeros((b, hh, ww, c))
    for oy in range(oh):
        for ox in range(ow):
            src = np.zeros((b, kk, c))
            for j in range(kk):
                yy, xx = oy * s - pad + j // k, ox * s - pad + j % k
                if 0 <= yy < hh and 0 <= xx < ww:
                    src[:, j] = v[:, yy, xx]
            win = np.einsum("bhij,bjhd->bihd", attn[:, oy, ox], src.reshape(b, kk, heads, hd)).reshape(b, kk, c)
            for i in range(kk):
                yy, xx = oy * s - pad + i // k, ox * s - pad + i % k
                if 0 <= yy < hh and 0 <= xx < ww:
                    out[:, yy, xx] += win[:, i]
    return out @ w["proj.weight"].T + w["proj.bias"]


def mlp_float64(x, w, prefix="mlp."):
    """fc1 -> exact GELU -> fc2 in float64 (``w``: float64 arrays)."""
    h = gelu_float64(x @ w[prefix + "fc1.weight"].T + w[prefix + "fc1.bias"])
    return h @ w[prefix + "fc2.weight"].T + w[prefix + "fc2.bias"]


def outlooker_float64(x, weights, p, prefix=""):
    """Outlooker recomputed in float64 on ``[B, H, W, C]``."""
    w = _f64(weights, prefix)
    x = np.asarray(x, dtype=np.float64)
    eps = p.get("eps", 1e-5)
    x = x + outlook_attention_float64(layernorm_float64(x, w["norm1.weight"], w["norm1.bias"], eps), w, p, "attn.")
    return x + mlp_float64(layernorm_float64(x, w["norm2.weight"], w["norm2.bias"], eps), w)


def class_attention_float64(x, weights, p, prefix=""):
    """ClassAttention recomputed in float64: ``x [B, N, C] -> [B, 1, C]``."""
    w = _f64(weights, prefix)
    x = np.asarray(x, dtype=np.float64)
    b, n, c = x.shape
    heads = p["heads"]
    hd = c // heads
    kv = (x @ w["kv.weight"].T).reshape(b, n, 2, heads, hd)
    q = (x[:, 0] @ w["q.weight"].T).reshape(b, heads, hd)
    attn = _softmax(np.einsum("bhd,bnhd->bhn", q * hd ** -0.5, kv[:, :, 0]))
    ctx = np.einsum("bhn,bnhd->bhd", attn, kv[:, :, 1]).reshape(b, 1, c)
    return ctx @ w["proj.weight"].T + w["proj.bias"]


def class_block_float64(x, weights, p, prefix=""):
    """ClassBlock recomputed in float64: only the class token changes."""
    w = _f64(weights, prefix)
    x = np.asarray(x, dtype=np.float64)
    eps = p.get("eps", 1e-5)
    cls = x[:, :1] + class_attention_float64(layernorm_float64(x, w["norm1.weight"], w["norm1.bias"], eps), w, p,
                                             "attn.")
    cls = cls + mlp_float64(layernorm_float64(cls, w["norm2.weight"], w["norm2.bias"], eps), w)
    return np.concatenate([cls, x[:, 1:]], axis=1)


def _conv64(x, w, weight, bias=None, bn=None, stride=1, padding=0, relu=False):
    """One conv (+ eval BN + ReLU) through conv_bn_act_float64's explicit-window formulation."""
    cw = {"conv.weight": w[weight]}
    if bias is not None:
        cw["conv.bias"] = w[bias]
    if bn is not None:
        cw.update({"bn." + n: w[bn + "." + n] for n in ("weight", "bias", "running_mean", "running_var")})
    return conv_bn_act_float64(x, cw, {"stride": pair(stride), "padding": pair(padding), "dilation": (1, 1),
                                       "bn": bn is not None, "bn_eps": 1e-5, "relu": relu})


def volo_stem_float64(x, weights, p, prefix=""):
    """VOLOStem recomputed in float64: ``x [B, in, H, W] -> [B, H8, W8, E]``."""
    w = _f64(weights, prefix)
    x = np.asarray(x, dtype=np.float64)
    x = _conv64(x, w, "conv.0.weight", bn="conv.1", stride=2, padding=3, relu=True)
    x = _conv64(x, w, "conv.3.weight", bn="conv.4", stride=1, padding=1, relu=True)
    x = _conv64(x, w, "conv.6.weight", bn="conv.7", stride=1, padding=1, relu=True)
    ps = p.get("patch_size", 8) // 2
    return _conv64(x, w, "proj.weight", bias="proj.bias", stride=ps).transpose(0, 2, 3, 1)


def volo_float64(x, weights, p):
    """The VOLO network recomputed in float64 NumPy from the weights: returns the module's dict."""
    w = _f64(weights)
    out = {}
    y = volo_stem_float64(x, weights, {"patch_size": 8}, "patch_embed.")
    if p["probe"]:
        out["stages.stem"] = y
    op = {"heads": p["heads"][0], "kernel_size": 3, "padding": 1, "stride": 2, "eps": 1e-5}
    for i in range(p["layers"][0]):
        y = outlooker_float64(y, weights, op, "network.0.%d." % i)
    if p["probe"]:
        out["stages.outlookers"] = y
    y = _conv64(y.transpose(0, 3, 1, 2), w, "network.1.proj.weight", bias="network.1.proj.bias", stride=2)
    y = y.transpose(0, 2, 3, 1) + w["pos_embed"]
    b, h16, w16, c = y.shape
    tok = y.reshape(b, h16 * w16, c)
    for stage in (1, 2, 3):
        bp = {"heads": p["heads"][stage], "eps": 1e-5, "scale": None}
        for i in range(p["layers"][stage]):
            tok = block_float64(tok, _f64(weights, "network.%d.%d." % (stage + 1, i)), bp)
    if p["probe"]:
        out["stages.transformers"] = tok.reshape(b, h16, w16, c)
    tok = np.concatenate([np.broadcast_to(w["cls_token"], (b, 1, c)), tok], axis=1)
    cp = {"heads": p["heads"][3], "eps": 1e-5}
    for i in range(2):
        tok = class_block_float64(tok, weights, cp, "post_network.%d." % i)
    if p["probe"]:
        out["stages.post"] = tok
    tok = layernorm_float64(tok, w["norm.weight"], w["norm.bias"], 1e-5)
    cls = tok[:, 0] @ w["head.weight"].T + w["head.bias"]
    aux = tok[:, 1:] @ w["aux_head.weight"].T + w["aux_head.bias"]
    out["logits"] = cls + 0.5 * aux.max(axis=1)
    return out


def independent_reference(op, inputs, weights, p):
    """The float64 recomputation of a VOLO op kind's outputs (name -> float64 ndarray)."""
    x = inputs["x"]
    if op == "outlook_attention":
        return {"out": outlook_attention_float64(x, weights, p)}
    if op == "outlooker":
        return {"out": outlooker_float64(x, weights, p)}
    if op == "class_attention":
        return {"out": class_attention_float64(x, weights, p)}
    if op == "class_block":
        return {"out": class_block_float64(x, weights, p)}
    if op == "volo_stem":
        return {"out": volo_stem_float64(x, weights, p)}
    if op == "volo":
        return volo_float64(x, weights, p)
    raise ValueError("not a VOLO op kind: %r" % op)


OPS = ("outlook_attention", "outlooker", "class_attention", "class_block", "volo_stem", "volo")
