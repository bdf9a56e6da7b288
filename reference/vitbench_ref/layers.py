"""Shared reference layers and helpers, used by every model family (written from
docs/reference-notes.md, "ViT and DeiT" and "T2T module", and fixtures/FORMAT.md "Op kinds"; eval mode).

This module imports no family module: ``vit``, ``t2t``, ``volo``, ``deform``, ``detector``,
``ddetr`` and the families added later build on it.  It holds the layers more than one family uses
(``PatchEmbed``, ``Gemm``, ``Fold``, ``ConvBNAct``, ``Attention``, ``Block``, DETR's ``MLP``), their
independent float64 recomputations (``*_float64``, ``patch_embed_gemm``) and small shape helpers
(``pair``, ``conv_out``, ``pool_out``, ``box_cxcywh_to_xyxy``)."""

import torch
from torch import nn
import torch.nn.functional as F


def pair(v):
    """Return ``v`` as a 2-tuple of ints: an int is used for both, a length-2 sequence as (h, w)."""
    if isinstance(v, bool):
        raise TypeError("expected an int or a pair, got a bool")
    if isinstance(v, int):
        return (v, v)
    t = tuple(int(x) for x in v)
    if len(t) != 2:
        raise ValueError("expected a pair, got %r" % (v,))
    return t


class PatchEmbed(nn.Module):
    """ViT patch embedding: a Conv2d with kernel = stride = patch_size, then tokens.

    Input ``x [B, in_chans, H, W]`` -> ``proj`` gives ``[B, E, H//ph, W//pw]`` (rows/columns that do
    not fill a whole patch are dropped, as Conv2d does) -> ``flatten(2).transpose(1, 2)`` gives
    ``out [B, (H//ph)*(W//pw), E]`` with patches in row-major order.  ``img_size`` is recorded
    for shape bookkeeping; the forward pass does not assert on it.
    State dict: ``proj.weight [E, C, ph, pw]`` and, when ``bias``, ``proj.bias [E]``.
    """

    def __init__(self, in_chans, embed_dim, patch_size, img_size, bias=True):
        super().__init__()
        self.in_chans = int(in_chans)
        self.embed_dim = int(embed_dim)
        self.patch_size = pair(patch_size)
        self.img_size = pair(img_size)
        self.grid_size = (self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(self.in_chans, self.embed_dim, kernel_size=self.patch_size,
                              stride=self.patch_size, bias=bool(bias))
        self.eval()

    def forward(self, x):
        """Return the patch tokens ``[B, N, E]`` of images ``x [B, C, H, W]``."""
        return self.proj(x).flatten(2).transpose(1, 2)


class Gemm(nn.Module):
    """A Linear layer over a batch of token matrices: ``x [B, M, K] -> out [B, M, N]``.

    With ``trans_b`` (nn.Linear's layout) ``out = x @ weight.T + bias`` for ``weight [N, K]``;
    otherwise ``out = x @ weight + bias`` for ``weight [K, N]``.  State dict: ``weight`` and,
    when ``bias``, ``bias [N]``.
    """

    def __init__(self, k, n, trans_b=True, bias=True):
        super().__init__()
        self.trans_b = bool(trans_b)
        shape = (n, k) if self.trans_b else (k, n)
        self.weight = nn.Parameter(torch.empty(*shape))
        self.bias = nn.Parameter(torch.empty(n)) if bias else None

    def forward(self, x):
        if self.trans_b:
            return F.linear(x, self.weight, self.bias)
        out = torch.matmul(x, self.weight)
        return out if self.bias is None else out + self.bias


class Fold(nn.Module):
    """nn.Fold of token-major windows (the adjoint of SoftSplit): ``x [B, L, C*kh*kw]`` is
    transposed to ``[B, C*kh*kw, L]`` and folded into ``out [B, C, H, W]``, overlaps summed."""

    def __init__(self, img_size, kernel_size, stride=1, padding=0, dilation=1):
        super().__init__()
        self.fold = nn.Fold(pair(img_size), pair(kernel_size), dilation=pair(dilation), padding=pair(padding),
                            stride=pair(stride))

    def forward(self, x):
        return self.fold(x.transpose(1, 2))


class ConvBNAct(nn.Module):
    """nn.Conv2d (one group), optionally BatchNorm2d in eval mode, optionally ReLU: the VOLO stem's
    conv-BN-ReLU.  ``x [B, C, H, W] -> out [B, O, Ho, Wo]``.  State dict: ``conv.weight``,
    ``conv.bias`` (when bias), ``bn.weight``, ``bn.bias``, ``bn.running_mean``, ``bn.running_var``
    (and PyTorch's ``bn.num_batches_tracked``, which eval mode does not read)."""

    def __init__(self, in_chans, out_chans, kernel_size, stride=1, padding=0, dilation=1, bias=True,
                 bn=False, bn_eps=1e-5, relu=False):
        super().__init__()
        self.conv = nn.Conv2d(in_chans, out_chans, pair(kernel_size), pair(stride), pair(padding),
                              pair(dilation), bias=bool(bias))
        self.bn = nn.BatchNorm2d(out_chans, eps=bn_eps) if bn else None
        self.relu = bool(relu)

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        return F.relu(x) if self.relu else x


class Attention(nn.Module):
    """timm's Attention (docs/reference-notes.md, "ViT and DeiT"), written from the spec: ``qkv`` Linear(E, 3E) whose
    output channel s*E + h*D + d holds q (s=0), k (1), v (2) of head h; per head
    ``softmax((q @ k^T) * scale) @ v`` over keys, heads concatenated (channel h*D + d), then
    ``proj`` Linear(E, E).  ``scale`` defaults to head_dim ** -0.5."""

    def __init__(self, dim, heads, qkv_bias=True, scale=None):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = scale if scale is not None else self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, e = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, e))


class Block(nn.Module):
    """timm's Block (docs/reference-notes.md, "ViT and DeiT"), pre-norm: ``x + attn(norm1(x))`` then
    ``+ mlp(norm2(.))`` with ``mlp = fc2(GELU(fc1(.)))``, hidden int(dim * mlp_ratio), exact GELU,
    LayerNorm eps 1e-6 as in ViT/DeiT."""

    def __init__(self, dim, heads, mlp_ratio=4.0, qkv_bias=True, scale=None, eps=1e-6):
        super().__init__()
        hidden = int(dim * mlp_ratio)
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, heads, qkv_bias, scale)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = nn.Sequential()
        self.mlp.fc1 = nn.Linear(dim, hidden)
        self.mlp.act = nn.GELU()
        self.mlp.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def run_blocks(blocks, x, probe):
    """Run the transformer blocks on the tokens x; with probe, also return the tokens on entry and
    after the first and the last block (``stages.embed``, ``stages.block0``, ``stages.block{n-1}``),
    the network fixtures' bisection points. Returns (x, outputs dict)."""
    out = {}
    if probe:
        out["stages.embed"] = x
    last = len(blocks) - 1
    for i, blk in enumerate(blocks):
        x = blk(x)
        if probe and i in (0, last):
            out["stages.block%d" % i] = x
    return x, out


def patch_embed_gemm(x, weight, bias, patch_size):
    """Independent PatchEmbed: cut non-overlapping patches with reshapes, then one matmul.

    Each patch is flattened in (c, ky, kx) order and multiplied by ``weight.reshape(E, -1).T``;
    trailing rows/columns that do not fill a patch are cropped.  Used to cross-check fixtures.
    """
    ph, pw = pair(patch_size)
    b, c, h, w = x.shape
    gh, gw = h // ph, w // pw
    x = x[:, :, : gh * ph, : gw * pw]
    # [B, C, gh, ph, gw, pw] -> [B, gh, gw, C, ph, pw] -> [B, gh*gw, C*ph*pw]
    p = x.reshape(b, c, gh, ph, gw, pw).permute(0, 2, 4, 1, 3, 5).reshape(b, gh * gw, c * ph * pw)
    out = p @ weight.reshape(weight.shape[0], -1).t()
    if bias is not None:
        out = out + bias
    return out


def conv_bn_act_float64(x, weights, p):
    """ConvBNAct recomputed in float64 NumPy from explicit windows (an independent check):
    every output is the dot product of its zero-padded, dilated window with the filter, then
    BatchNorm with the running statistics, then ReLU."""
    import numpy as np
    x = x.astype(np.float64)
    w = weights["conv.weight"].astype(np.float64)
    o, c, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
    b, _, h, wd = x.shape
    xp = np.zeros((b, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph:ph + h, pw:pw + wd] = x
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((b, o, ho, wo))
    for ky in range(kh):
        for kx in range(kw):
            win = xp[:, :, ky * dh: ky * dh + sh * (ho - 1) + 1: sh, kx * dw: kx * dw + sw * (wo - 1) + 1: sw]
            out += np.einsum("bchw,oc->bohw", win, w[:, :, ky, kx])
    if "conv.bias" in weights:
        out += weights["conv.bias"].astype(np.float64)[None, :, None, None]
    if p["bn"]:
        g, beta = weights["bn.weight"].astype(np.float64), weights["bn.bias"].astype(np.float64)
        mean, var = weights["bn.running_mean"].astype(np.float64), weights["bn.running_var"].astype(np.float64)
        out = (out - mean[None, :, None, None]) / np.sqrt(var + p["bn_eps"])[None, :, None, None] \
            * g[None, :, None, None] + beta[None, :, None, None]
    if p["relu"]:
        out = np.maximum(out, 0)
    return out


def attention_float64(x, weights, p, prefix=""):
    """timm Attention recomputed in float64 NumPy (independent of torch)."""
    import numpy as np
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    b, n, e = x.shape
    heads = p["heads"]
    d = e // heads
    scale = p.get("scale") or d ** -0.5
    qkv = x.astype(np.float64) @ w[prefix + "qkv.weight"].T
    if prefix + "qkv.bias" in w:
        qkv = qkv + w[prefix + "qkv.bias"]
    qkv = qkv.reshape(b, n, 3, heads, d).transpose(2, 0, 3, 1, 4)
    s = np.einsum("bhnd,bhmd->bhnm", qkv[0], qkv[1]) * scale
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    s = s / s.sum(axis=-1, keepdims=True)
    ctx = np.einsum("bhnm,bhmd->bhnd", s, qkv[2]).transpose(0, 2, 1, 3).reshape(b, n, e)
    return ctx @ w[prefix + "proj.weight"].T + w[prefix + "proj.bias"]


def layernorm_float64(x, weight, bias, eps):
    """LayerNorm over the last axis in float64 (biased variance)."""
    import numpy as np
    x = x.astype(np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * weight.astype(np.float64) + bias.astype(np.float64)


def block_float64(x, weights, p):
    """timm Block recomputed in float64 NumPy with exact (erf) GELU."""
    import math
    import numpy as np
    erf = np.vectorize(math.erf)
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = x.astype(np.float64)
    y = x + attention_float64(layernorm_float64(x, w["norm1.weight"], w["norm1.bias"], p["eps"]), weights, p, "attn.")
    h = layernorm_float64(y, w["norm2.weight"], w["norm2.bias"], p["eps"]) @ w["mlp.fc1.weight"].T + w["mlp.fc1.bias"]
    h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
    return y + h @ w["mlp.fc2.weight"].T + w["mlp.fc2.bias"]


def fold_float64(x, p):
    """Fold recomputed in float64 with explicit loops over windows and taps."""
    import numpy as np
    (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
    (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
    b, n, _ = x.shape
    c = p["in_chans"]
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((b, c, h, w))
    cols = x.astype(np.float64).reshape(b, n, c, kh, kw)
    for l in range(n):
        oy, ox = divmod(l, wo)
        for ky in range(kh):
            y = oy * sh - ph + ky * dh
            for kx in range(kw):
                xx = ox * sw - pw + kx * dw
                if 0 <= y < h and 0 <= xx < w:
                    out[:, :, y, xx] += cols[:, l, :, ky, kx]
    return out


def avg_pool_float64(x, p):
    """nn.AvgPool2d recomputed in float64 with PyTorch's window and divisor rules."""
    import numpy as np
    (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
    (sh, sw), (ph, pw) = p["stride"], p["padding"]
    ho, wo = pool_out(h, kh, sh, ph, p["ceil_mode"]), pool_out(w, kw, sw, pw, p["ceil_mode"])
    x = x.astype(np.float64)
    out = np.zeros(x.shape[:2] + (ho, wo))
    for oy in range(ho):
        y0 = oy * sh - ph
        y1 = min(y0 + kh, h + ph)
        for ox in range(wo):
            x0 = ox * sw - pw
            x1 = min(x0 + kw, w + pw)
            size = (y1 - y0) * (x1 - x0)
            ya, xa, yb, xb = max(y0, 0), max(x0, 0), min(y1, h), min(x1, w)
            if not p["count_include_pad"]:
                size = (yb - ya) * (xb - xa)
            out[:, :, oy, ox] = x[:, :, ya:yb, xa:xb].sum(axis=(2, 3)) / size
    return out


class MLP(nn.Module):
    """DETR's MLP: ``layers`` (a ModuleList of Linear), ReLU between them (not after the last)."""

    def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
        super().__init__()
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < len(self.layers) - 1 else layer(x)
        return x


def box_cxcywh_to_xyxy(b):
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], -1)


def conv_out(p):
    """(Ho, Wo) of a convolution-like op with pair params img_size, kernel_size, stride, padding,
    dilation: (H + 2p - d*(k-1) - 1) // s + 1."""
    (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
    (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
    return (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1


def pool_out(size, k, s, p, ceil):
    """nn.AvgPool2d's output size, ceil mode included (a last window may not start in the
    right padding)."""
    num = size + 2 * p - k + (s - 1 if ceil else 0)
    out = num // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out
