"""Reference PyTorch modules, written from /work/shared/spec/REFERENCE.md (sections 1.2 and 2.1)
and fixtures/FORMAT.md ("Op kinds").  Both are constructed in eval mode."""

import math

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


class SoftSplit(nn.Module):
    """T2T-ViT soft split: ``nn.Unfold`` (zero padding) followed by ``transpose(1, 2)``.

    Input ``x [B, C, H, W]`` -> ``out [B, L, C*kh*kw]``; ``L = Ho*Wo`` windows in row-major order,
    ``Ho = (H + 2*ph - dh*(kh-1) - 1) // sh + 1`` (likewise Wo); feature index
    ``c*kh*kw + ky*kw + kx``.  No parameters.
    """

    def __init__(self, kernel_size, stride=1, padding=0, dilation=1):
        super().__init__()
        self.kernel_size = pair(kernel_size)
        self.stride = pair(stride)
        self.padding = pair(padding)
        self.dilation = pair(dilation)
        self.unfold = nn.Unfold(kernel_size=self.kernel_size, dilation=self.dilation,
                                padding=self.padding, stride=self.stride)
        self.eval()

    def forward(self, x):
        """Return the token-major soft split ``[B, L, C*kh*kw]`` of ``x [B, C, H, W]``."""
        return self.unfold(x).transpose(1, 2)


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
    """timm's Attention (REFERENCE.md 1.3), written from the spec: ``qkv`` Linear(E, 3E) whose
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
    """timm's Block (REFERENCE.md 1.4), pre-norm: ``x + attn(norm1(x))`` then
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


class TokenTransformer(nn.Module):
    """T2T-ViT's Token_transformer (REFERENCE.md 2.3), written from the spec: x -> norm1 (eps
    1e-5) -> one-head attention whose qkv (no bias) maps dim -> 3*in_dim, scale dim ** -0.5 (the
    quirk: the head dim is taken from the input dim), output ``v + proj(attn @ v)``; then
    ``+ mlp(norm2(.))`` with hidden int(in_dim * mlp_ratio)."""

    def __init__(self, dim, in_dim=64, mlp_ratio=1.0):
        super().__init__()
        self.in_dim = in_dim
        self.scale = dim ** -0.5
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(dim, 3 * in_dim, bias=False)
        self.attn.proj = nn.Linear(in_dim, in_dim)
        self.norm2 = nn.LayerNorm(in_dim)
        hidden = int(in_dim * mlp_ratio)
        self.mlp = nn.Module()
        self.mlp.fc1 = nn.Linear(in_dim, hidden)
        self.mlp.fc2 = nn.Linear(hidden, in_dim)

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.attn.qkv(self.norm1(x)).reshape(b, n, 3, self.in_dim)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        y = v + self.attn.proj(attn @ v)
        return y + self.mlp.fc2(F.gelu(self.mlp.fc1(self.norm2(y))))


class TokenPerformer(nn.Module):
    """T2T-ViT's Token_performer (REFERENCE.md 2.2), written from the spec: ``kqv`` Linear(dim,
    3*emb) split in the order k, q, v; random features phi(x)_j = exp(w_j.x - |x|^2/2)/sqrt(m) with
    the frozen ``w [m, emb]``; y = v + proj(phi(q) (phi(k)^T v) / (phi(q).sum_t phi(k) + 1e-8));
    then ``+ mlp(norm2(y))`` with mlp = Linear, GELU, Linear (names mlp.0, mlp.2)."""

    def __init__(self, dim, in_dim=64, kernel_ratio=0.5):
        super().__init__()
        self.emb = in_dim
        self.m = int(in_dim * kernel_ratio)
        self.norm1 = nn.LayerNorm(dim)
        self.kqv = nn.Linear(dim, 3 * in_dim)
        self.proj = nn.Linear(in_dim, in_dim)
        self.norm2 = nn.LayerNorm(in_dim)
        self.mlp = nn.Sequential(nn.Linear(in_dim, in_dim), nn.GELU(), nn.Linear(in_dim, in_dim))
        self.w = nn.Parameter(torch.randn(self.m, in_dim), requires_grad=False)

    def features(self, x):
        xd = (x * x).sum(dim=-1, keepdim=True) / 2
        return torch.exp(torch.einsum("bti,mi->btm", x.float(), self.w) - xd) / math.sqrt(self.m)

    def forward(self, x):
        k, q, v = torch.split(self.kqv(self.norm1(x)), self.emb, dim=-1)
        kp, qp = self.features(k), self.features(q)
        d = torch.einsum("btm,bm->bt", qp, kp.sum(dim=1)).unsqueeze(2)
        kptv = torch.einsum("btn,btm->bnm", v.float(), kp)
        y = torch.einsum("btm,bnm->btn", qp, kptv) / (d + 1e-8)
        y = v + self.proj(y)
        return y + self.mlp(self.norm2(y))


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


class T2TModule(nn.Module):
    """T2T-ViT's tokens-to-token stage (REFERENCE.md 2.1), written from the spec: Unfold(7, 4, 2),
    token layer 1 (dim 3*49 -> token_dim), back to an image, Unfold(3, 2, 1), token layer 2
    (token_dim*9 -> token_dim), back to an image, Unfold(3, 2, 1), Linear(token_dim*9, embed)."""

    def __init__(self, img_size, tokens_type, embed_dim, token_dim=64, in_chans=3):
        super().__init__()
        self.soft_split0 = nn.Unfold(kernel_size=7, stride=4, padding=2)
        self.soft_split1 = nn.Unfold(kernel_size=3, stride=2, padding=1)
        self.soft_split2 = nn.Unfold(kernel_size=3, stride=2, padding=1)
        layer = TokenPerformer if tokens_type == "performer" else TokenTransformer
        self.attention1 = layer(in_chans * 49, token_dim)
        self.attention2 = layer(token_dim * 9, token_dim)
        self.project = nn.Linear(token_dim * 9, embed_dim)
        h, w = pair(img_size)
        self.grids = []
        for k, s_, p_ in ((7, 4, 2), (3, 2, 1), (3, 2, 1)):
            h, w = (h + 2 * p_ - k) // s_ + 1, (w + 2 * p_ - k) // s_ + 1
            self.grids.append((h, w))

    def forward(self, x):
        x = self.attention1(self.soft_split0(x).transpose(1, 2))
        b, _, c = x.shape
        x = x.transpose(1, 2).reshape(b, c, *self.grids[0])
        x = self.attention2(self.soft_split1(x).transpose(1, 2))
        x = x.transpose(1, 2).reshape(b, c, *self.grids[1])
        return self.project(self.soft_split2(x).transpose(1, 2))


class T2TViT(nn.Module):
    """T2T-ViT (REFERENCE.md 2.5): T2TModule, class token, position table (a parameter), pre-norm
    blocks with qkv_bias False, LayerNorm eps 1e-5 and attention scale ``scale`` (None: head_dim^-0.5;
    the pretrained checkpoints were trained with qk_scale = embed_dim^-0.5), final norm, head on the
    class token.  ``forward`` returns the same dict as VisionTransformer."""

    def __init__(self, img_size, tokens_type, embed_dim, depth, heads, mlp_ratio, num_classes=1000,
                 token_dim=64, in_chans=3, probe=False, scale=None):
        super().__init__()
        self.tokens_to_token = T2TModule(img_size, tokens_type, embed_dim, token_dim, in_chans)
        n = self.tokens_to_token.grids[2][0] * self.tokens_to_token.grids[2][1]
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n + 1, embed_dim), requires_grad=False)
        self.blocks = nn.Sequential(*[Block(embed_dim, heads, mlp_ratio, False, scale, 1e-5) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)
        self.probe = probe

    def forward(self, x):
        x = self.tokens_to_token(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x, out = run_blocks(self.blocks, x, self.probe)
        out["logits"] = self.head(self.norm(x)[:, 0])
        return out


class VisionTransformer(nn.Module):
    """timm's VisionTransformer / DeiT (REFERENCE.md 1.2, 1.5), written from the spec: PatchEmbed,
    class token (and DeiT's distillation token) in front, learned position embedding added,
    ``depth`` pre-norm Blocks, a final LayerNorm, ``head`` on the class token (distilled: the mean
    of ``head(x0)`` and ``head_dist(x1)``, the eval-mode output).  ``forward`` returns a dict:
    ``logits [B, classes]`` and, with ``probe``, the tokens after the embedding, after block 0 and
    after the last block (``stages.embed``, ``stages.block0``, ``stages.block{depth-1}``)."""

    def __init__(self, img_size, patch_size, embed_dim, depth, heads, mlp_ratio=4.0, qkv_bias=True,
                 num_classes=1000, distilled=False, eps=1e-6, in_chans=3, probe=False):
        super().__init__()
        self.patch_embed = PatchEmbed(in_chans, embed_dim, patch_size, img_size)
        self.prefix = 2 if distilled else 1
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.dist_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if distilled else None
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + self.prefix, embed_dim))
        self.blocks = nn.Sequential(*[Block(embed_dim, heads, mlp_ratio, qkv_bias, None, eps) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=eps)
        self.head = nn.Linear(embed_dim, num_classes)
        self.head_dist = nn.Linear(embed_dim, num_classes) if distilled else None
        self.probe = probe

    def forward(self, x):
        x = self.patch_embed(x)
        b = x.shape[0]
        front = [self.cls_token.expand(b, -1, -1)]
        if self.dist_token is not None:
            front.append(self.dist_token.expand(b, -1, -1))
        x = torch.cat(front + [x], dim=1) + self.pos_embed
        x, out = run_blocks(self.blocks, x, self.probe)
        x = self.norm(x)
        logits = self.head(x[:, 0])
        if self.head_dist is not None:
            logits = (logits + self.head_dist(x[:, 1])) / 2
        out["logits"] = logits
        return out


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


def soft_split_loops(x, kernel_size, stride=1, padding=0, dilation=1):
    """Independent soft split by explicit index arithmetic (pure Python loops over the kernel).

    ``out[b, oy*Wo + ox, c*kh*kw + ky*kw + kx] = xpad[b, c, oy*sh + ky*dh, ox*sw + kx*dw]`` with
    zero padding.  Used to cross-check fixtures and nn.Unfold's channel order.
    """
    kh, kw = pair(kernel_size)
    sh, sw = pair(stride)
    ph, pw = pair(padding)
    dh, dw = pair(dilation)
    b, c, h, w = x.shape
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = F.pad(x, (pw, pw, ph, ph))
    out = torch.empty(b, ho * wo, c * kh * kw, dtype=x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            win = xp[:, :, y0: y0 + sh * (ho - 1) + 1: sh, x0: x0 + sw * (wo - 1) + 1: sw]  # [B,C,Ho,Wo]
            out[:, :, ky * kw + kx:: kh * kw] = win.reshape(b, c, ho * wo).transpose(1, 2)
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
    from .cases import pool_out
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


def vit_float64(x, weights, p):
    """VisionTransformer recomputed in float64 NumPy from the weights (independent of torch):
    returns the same dict as the module."""
    import numpy as np
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    ps = p["patch_size"]
    b, c, h, wd = x.shape
    gh, gw = h // ps, wd // ps
    patches = x[:, :, :gh * ps, :gw * ps].astype(np.float64).reshape(b, c, gh, ps, gw, ps)
    patches = patches.transpose(0, 2, 4, 1, 3, 5).reshape(b, gh * gw, c * ps * ps)
    tok = patches @ w["patch_embed.proj.weight"].reshape(p["embed_dim"], -1).T + w["patch_embed.proj.bias"]
    front = [np.broadcast_to(w["cls_token"], (b, 1, p["embed_dim"]))]
    if p["distilled"]:
        front.append(np.broadcast_to(w["dist_token"], (b, 1, p["embed_dim"])))
    xs = np.concatenate(front + [tok], axis=1) + w["pos_embed"]
    out = {}
    if p["probe"]:
        out["stages.embed"] = xs
    bp = dict(p, dim=p["embed_dim"], scale=None)
    for i in range(p["depth"]):
        pre = "blocks.%d." % i
        bw = {k[len(pre):]: v for k, v in weights.items() if k.startswith(pre)}
        xs = block_float64(xs, bw, bp)
        if p["probe"] and i in (0, p["depth"] - 1):
            out["stages.block%d" % i] = xs
    xs = layernorm_float64(xs, w["norm.weight"], w["norm.bias"], p["eps"])
    logits = xs[:, 0] @ w["head.weight"].T + w["head.bias"]
    if p["distilled"]:
        logits = (logits + xs[:, 1] @ w["head_dist.weight"].T + w["head_dist.bias"]) / 2
    out["logits"] = logits
    return out


def token_layer_float64(x, weights, p, performer):
    """TokenTransformer / TokenPerformer recomputed in float64 NumPy."""
    import math as _m
    import numpy as np
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    erf = np.vectorize(_m.erf)
    e = p["in_dim"]
    h = layernorm_float64(x, w["norm1.weight"], w["norm1.bias"], 1e-5)
    if performer:
        kqv = h @ w["kqv.weight"].T + w["kqv.bias"]
        k, q, v = kqv[..., :e], kqv[..., e:2 * e], kqv[..., 2 * e:]
        m = w["w"].shape[0]

        def phi(t):
            return np.exp(t @ w["w"].T - (t * t).sum(-1, keepdims=True) / 2) / _m.sqrt(m)
        kp, qp = phi(k), phi(q)
        d = np.einsum("btm,bm->bt", qp, kp.sum(axis=1))[..., None]
        kptv = np.einsum("btn,btm->bnm", v, kp)
        y = v + np.einsum("btm,bnm->btn", qp, kptv) / (d + 1e-8) @ w["proj.weight"].T + w["proj.bias"]
        fc1, fc2 = "mlp.0", "mlp.2"
    else:
        qkv = h @ w["attn.qkv.weight"].T
        q, k, v = qkv[..., :e], qkv[..., e:2 * e], qkv[..., 2 * e:]
        s = np.einsum("bnd,bmd->bnm", q * x.shape[-1] ** -0.5, k)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = s / s.sum(-1, keepdims=True)
        y = v + np.einsum("bnm,bmd->bnd", s, v) @ w["attn.proj.weight"].T + w["attn.proj.bias"]
        fc1, fc2 = "mlp.fc1", "mlp.fc2"
    hid = layernorm_float64(y, w["norm2.weight"], w["norm2.bias"], 1e-5) @ w[fc1 + ".weight"].T + w[fc1 + ".bias"]
    hid = 0.5 * hid * (1 + erf(hid / _m.sqrt(2)))
    return y + hid @ w[fc2 + ".weight"].T + w[fc2 + ".bias"]


def t2t_float64(x, weights, p):
    """T2TModule / T2TViT recomputed in float64: soft splits by F.unfold on float64 tensors, token
    layers and blocks in NumPy. Returns the module's outputs (``out``, or the network's dict)."""
    import numpy as np
    net = "depth" in p
    pre = "tokens_to_token." if net else ""
    mod = T2TModule(p["img_size"], p["tokens_type"], p["embed_dim"], p["token_dim"], p["in_chans"])
    perf = p["tokens_type"] == "performer"
    c = p["token_dim"]

    def split(img, k, s_, pad):
        return F.unfold(torch.from_numpy(img), k, padding=pad, stride=s_).transpose(1, 2).numpy()

    def layer(tok, name):
        lw = {k[len(pre + name):]: v for k, v in weights.items() if k.startswith(pre + name)}
        return token_layer_float64(tok, lw, {"in_dim": c}, perf)

    b = x.shape[0]
    t = layer(split(x.astype(np.float64), 7, 4, 2), "attention1.")
    t = layer(split(t.transpose(0, 2, 1).reshape(b, c, *mod.grids[0]), 3, 2, 1), "attention2.")
    t = split(t.transpose(0, 2, 1).reshape(b, c, *mod.grids[1]), 3, 2, 1)
    tok = t @ weights[pre + "project.weight"].astype(np.float64).T + weights[pre + "project.bias"].astype(np.float64)
    if not net:
        return {"out": tok}
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    xs = np.concatenate([np.broadcast_to(w["cls_token"], (b, 1, p["embed_dim"])), tok], axis=1) + w["pos_embed"]
    out = {}
    if p["probe"]:
        out["stages.embed"] = xs
    bp = {"dim": p["embed_dim"], "heads": p["heads"], "eps": 1e-5, "scale": p.get("scale")}
    for i in range(p["depth"]):
        bpre = "blocks.%d." % i
        xs = block_float64(xs, {k[len(bpre):]: v for k, v in weights.items() if k.startswith(bpre)}, bp)
        if p["probe"] and i in (0, p["depth"] - 1):
            out["stages.block%d" % i] = xs
    xs = layernorm_float64(xs, w["norm.weight"], w["norm.bias"], 1e-5)
    out["logits"] = xs[:, 0] @ w["head.weight"].T + w["head.bias"]
    return out


# ---------------------------------------------------------------------------------------------
# Deformable attention (Deformable DETR, REFERENCE.md 4.4-4.6) and deformable convolution
# (torchvision, REFERENCE.md 5.1).


def level_start_index(spatial_shapes):
    """``[0, cumsum(H*W)[:-1]]`` of a list of ``(H, W)`` level shapes (REFERENCE.md 4.3)."""
    out, s = [], 0
    for h, w in spatial_shapes:
        out.append(s)
        s += int(h) * int(w)
    return out


def ms_deform_attn_core_pytorch(value, spatial_shapes, sampling_locations, attention_weights):
    """Deformable DETR's ``ms_deform_attn_core_pytorch`` (REFERENCE.md 4.5): per level, bilinear
    ``F.grid_sample`` (zeros padding, align_corners False) of ``value [N, S, M, D]`` at
    ``2*loc - 1``; the L*P samples of each head weighted by ``attention_weights`` and summed.
    ``sampling_locations [N, Lq, M, L, P, 2]`` are normalized (x, y); returns ``[N, Lq, M*D]``."""
    n, _, m, d = value.shape
    _, lq, _, nl, np_, _ = sampling_locations.shape
    value_list = value.split([int(h) * int(w) for h, w in spatial_shapes], dim=1)
    sampling_grids = 2 * sampling_locations - 1
    sampled = []
    for lid, (h, w) in enumerate(spatial_shapes):
        # N, H*W, M, D -> N, H*W, M*D -> N, M*D, H*W -> N*M, D, H, W
        value_l = value_list[lid].flatten(2).transpose(1, 2).reshape(n * m, d, int(h), int(w))
        # N, Lq, M, P, 2 -> N, M, Lq, P, 2 -> N*M, Lq, P, 2
        grid_l = sampling_grids[:, :, :, lid].transpose(1, 2).flatten(0, 1)
        # N*M, D, Lq, P
        sampled.append(F.grid_sample(value_l, grid_l, mode="bilinear", padding_mode="zeros", align_corners=False))
    # (N, Lq, M, L, P) -> (N, M, Lq, L, P) -> (N*M, 1, Lq, L*P)
    attn = attention_weights.transpose(1, 2).reshape(n * m, 1, lq, nl * np_)
    out = (torch.stack(sampled, dim=-2).flatten(-2) * attn).sum(-1).view(n, m * d, lq)
    return out.transpose(1, 2).contiguous()


class MSDeformAttnCore(nn.Module):
    """The multi-scale deformable sampling core alone (REFERENCE.md 4.5, the grid_sample path):
    ``forward(value [N, S, M, D], sampling_locations [N, Lq, M, L, P, 2], attention_weights
    [N, Lq, M, L, P]) -> [N, Lq, M*D]``.  The level shapes are constructor arguments; no
    parameters or buffers."""

    def __init__(self, spatial_shapes):
        super().__init__()
        self.spatial_shapes = [tuple(int(v) for v in hw) for hw in spatial_shapes]
        self.level_start_index = level_start_index(self.spatial_shapes)
        self.eval()

    def forward(self, value, sampling_locations, attention_weights):
        return ms_deform_attn_core_pytorch(value, self.spatial_shapes, sampling_locations, attention_weights)


class MSDeformAttn(nn.Module):
    """Deformable DETR's ``MSDeformAttn`` (REFERENCE.md 4.4) with the grid_sample core, the level
    shapes given to the constructor instead of the forward call.

    ``forward(query [N, Lq, d], reference_points [N, Lq, L, 2 or 4], input_flatten [N, S, d],
    padding_mask=None [N, S] bool, True = padding) -> [N, Lq, d]``.  State dict (nn.Linear, with
    bias): ``sampling_offsets`` (d -> M*L*P*2, channel ((m*L + l)*P + p)*2 + c, c = 0 for x),
    ``attention_weights`` (d -> M*L*P, softmax jointly over L*P per head), ``value_proj`` and
    ``output_proj`` (d -> d).  Offsets of 2-d reference points are divided by (W_l, H_l); with
    4-d reference boxes loc = ref[..., :2] + off / P * ref[..., 2:] * 0.5."""

    def __init__(self, d_model, heads, points, spatial_shapes, head_dim=None):
        super().__init__()
        if head_dim is None:
            head_dim = d_model // heads
        if d_model % heads or heads * head_dim != d_model:
            raise ValueError("d_model %d must equal heads %d * head_dim %d" % (d_model, heads, head_dim))
        self.spatial_shapes = [tuple(int(v) for v in hw) for hw in spatial_shapes]
        self.level_start_index = level_start_index(self.spatial_shapes)
        self.d_model, self.n_heads, self.n_points = d_model, heads, points
        self.n_levels = len(self.spatial_shapes)
        self.head_dim = head_dim
        self.sampling_offsets = nn.Linear(d_model, heads * self.n_levels * points * 2)
        self.attention_weights = nn.Linear(d_model, heads * self.n_levels * points)
        self.value_proj = nn.Linear(d_model, d_model)
        self.output_proj = nn.Linear(d_model, d_model)
        self.eval()

    def forward(self, query, reference_points, input_flatten, padding_mask=None):
        n, lq, _ = query.shape
        _, s, _ = input_flatten.shape
        m, nl, p = self.n_heads, self.n_levels, self.n_points
        shapes = torch.tensor(self.spatial_shapes, dtype=torch.long)
        value = self.value_proj(input_flatten)
        if padding_mask is not None:
            value = value.masked_fill(padding_mask[..., None], float(0))
        value = value.view(n, s, m, self.head_dim)
        offsets = self.sampling_offsets(query).view(n, lq, m, nl, p, 2)
        attn = self.attention_weights(query).view(n, lq, m, nl * p)
        attn = F.softmax(attn, -1).view(n, lq, m, nl, p)
        if reference_points.shape[-1] == 2:
            normalizer = torch.stack([shapes[..., 1], shapes[..., 0]], -1)  # (W, H)
            loc = reference_points[:, :, None, :, None, :] + offsets / normalizer[None, None, None, :, None, :]
        elif reference_points.shape[-1] == 4:
            loc = reference_points[:, :, None, :, None, :2] \
                + offsets / p * reference_points[:, :, None, :, None, 2:] * 0.5
        else:
            raise ValueError("last dim of reference_points must be 2 or 4, got %d" % reference_points.shape[-1])
        out = ms_deform_attn_core_pytorch(value, self.spatial_shapes, loc, attn)
        return self.output_proj(out)


class DeformConv2d(nn.Module):
    """``torchvision.ops.deform_conv2d`` with its own ``weight [Cout, Cin/groups, kh, kw]`` and
    ``bias [Cout]`` (REFERENCE.md 5.1): ``forward(x [B, Cin, H, W], offset [B, 2*G*kh*kw, Ho, Wo],
    mask=None [B, G*kh*kw, Ho, Wo]) -> [B, Cout, Ho, Wo]``; offsets are (dy, dx) pairs per tap
    (row-major over the kernel), G = offset groups (inferred by torchvision from the offset)."""

    def __init__(self, in_chans, out_chans, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
        super().__init__()
        kh, kw = pair(kernel_size)
        self.stride, self.padding, self.dilation = pair(stride), pair(padding), pair(dilation)
        self.weight = nn.Parameter(torch.empty(out_chans, in_chans // groups, kh, kw))
        self.bias = nn.Parameter(torch.empty(out_chans)) if bias else None
        self.eval()

    def forward(self, x, offset, mask=None):
        import torchvision.ops
        return torchvision.ops.deform_conv2d(x, offset, self.weight, self.bias, self.stride, self.padding,
                                             self.dilation, mask)


def ms_deform_sample_float64(value, spatial_shapes, sampling_locations, attention_weights, chunk=1024):
    """The multi-scale deformable sampling core recomputed in float64 NumPy the way the CUDA
    kernel ``ms_deformable_im2col_gpu_kernel`` does it (REFERENCE.md 4.6), without grid_sample:
    per sample h_im = loc_y*H - 0.5, w_im = loc_x*W - 0.5; evaluated only when -1 < h_im < H
    and -1 < w_im < W; floor-based bilinear weights with each corner outside [0, H-1] x [0, W-1]
    read as 0; the weighted samples accumulated over levels and points.  Queries are processed
    ``chunk`` at a time so the gathers stay small.  Returns ``[N, Lq, M*D]`` float64."""
    import numpy as np
    value = np.asarray(value, dtype=np.float64)
    loc_all = np.asarray(sampling_locations, dtype=np.float64)
    attn_all = np.asarray(attention_weights, dtype=np.float64)
    n, _, m, d = value.shape
    lq = loc_all.shape[1]
    out = np.zeros((n, lq, m, d))
    starts = level_start_index(spatial_shapes)
    bi = np.arange(n)[:, None, None, None]
    mi = np.arange(m)[None, None, :, None]
    for q0 in range(0, lq, chunk):
        q1 = min(lq, q0 + chunk)
        acc = np.zeros((n, q1 - q0, m, d))
        for lid, (hl, wl) in enumerate(spatial_shapes):
            hl, wl = int(hl), int(wl)
            v_l = value[:, starts[lid]: starts[lid] + hl * wl]  # [N, H*W, M, D]
            loc = loc_all[:, q0:q1, :, lid]  # [N, q, M, P, 2]
            a = attn_all[:, q0:q1, :, lid]  # [N, q, M, P]
            h_im = loc[..., 1] * hl - 0.5
            w_im = loc[..., 0] * wl - 0.5
            inside = (h_im > -1) & (w_im > -1) & (h_im < hl) & (w_im < wl)
            h_low, w_low = np.floor(h_im), np.floor(w_im)
            lh, lw = h_im - h_low, w_im - w_low
            hh, hw = 1 - lh, 1 - lw
            sample = np.zeros(loc.shape[:-1] + (d,))
            for dy, dx, wt in ((0, 0, hh * hw), (0, 1, hh * lw), (1, 0, lh * hw), (1, 1, lh * lw)):
                hc, wc = h_low + dy, w_low + dx
                ok = inside & (hc >= 0) & (hc <= hl - 1) & (wc >= 0) & (wc <= wl - 1)
                idx = np.where(ok, hc * wl + wc, 0).astype(np.int64)
                sample += np.where(ok, wt, 0.0)[..., None] * v_l[bi, idx, mi]
            acc += np.einsum("nqmp,nqmpd->nqmd", a, sample)
        out[:, q0:q1] = acc
    return out.reshape(n, lq, m * d)


def ms_deform_attn_float64(query, reference_points, input_flatten, padding_mask, weights, p):
    """MSDeformAttn (REFERENCE.md 4.4) recomputed in float64 NumPy from the weights, with the
    sampling core of :func:`ms_deform_sample_float64` (no grid_sample).  ``padding_mask`` is None
    or an array whose nonzero entries mark padded positions."""
    import numpy as np
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    q = np.asarray(query, dtype=np.float64)
    ref = np.asarray(reference_points, dtype=np.float64)
    src = np.asarray(input_flatten, dtype=np.float64)
    n, lq, dm = q.shape
    s = src.shape[1]
    m, pts, shapes = p["heads"], p["points"], p["spatial_shapes"]
    nl = len(shapes)
    hd = dm // m
    value = src @ w["value_proj.weight"].T + w["value_proj.bias"]
    if padding_mask is not None:
        value = np.where(np.asarray(padding_mask)[..., None] != 0, 0.0, value)
    value = value.reshape(n, s, m, hd)
    off = (q @ w["sampling_offsets.weight"].T + w["sampling_offsets.bias"]).reshape(n, lq, m, nl, pts, 2)
    logits = (q @ w["attention_weights.weight"].T + w["attention_weights.bias"]).reshape(n, lq, m, nl * pts)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    attn = (e / e.sum(axis=-1, keepdims=True)).reshape(n, lq, m, nl, pts)
    if ref.shape[-1] == 2:
        norm = np.array([[wl, hl] for hl, wl in shapes], dtype=np.float64)  # (W, H) per level
        loc = ref[:, :, None, :, None, :] + off / norm[None, None, None, :, None, :]
    else:
        loc = ref[:, :, None, :, None, :2] + off / pts * ref[:, :, None, :, None, 2:] * 0.5
    core = ms_deform_sample_float64(value, shapes, loc, attn)
    return core @ w["output_proj.weight"].T + w["output_proj.bias"]


def deform_conv2d_float64(x, offset, mask, weight, bias, p):
    """torchvision's deform_conv2d recomputed in float64 NumPy from REFERENCE.md 5.1 (no
    torchvision): for output pixel (oy, ox), tap k = i*kw + j and offset group g, the sampling
    point is y = oy*sh - ph + i*dh + offset[2*(g*kh*kw + k)], x = ox*sw - pw + j*dw +
    offset[2*(g*kh*kw + k) + 1]; its value is 0 when y <= -1, y >= H, x <= -1 or x >= W, else
    floor-based bilinear with corners outside the image read as 0; times the mask (if any);
    input channel c belongs to offset group c // (Cin/G); then a grouped convolution of these
    columns with ``weight`` plus ``bias``."""
    import numpy as np
    x = np.asarray(x, dtype=np.float64)
    off = np.asarray(offset, dtype=np.float64)
    wt = np.asarray(weight, dtype=np.float64)
    b, cin, h, wd = x.shape
    cout, cg, kh, kw = wt.shape
    groups = cin // cg
    (sh, sw), (ph, pw), (dh, dw) = pair(p["stride"]), pair(p["padding"]), pair(p["dilation"])
    ho, wo = off.shape[2], off.shape[3]
    og = off.shape[1] // (2 * kh * kw)
    cpg = cin // og  # input channels per offset group
    off = off.reshape(b, og, kh * kw, 2, ho, wo)
    msk = None if mask is None else np.asarray(mask, dtype=np.float64).reshape(b, og, kh * kw, ho, wo)
    oy = np.arange(ho)[:, None] * sh - ph
    ox = np.arange(wo)[None, :] * sw - pw
    cols = np.zeros((b, cin, kh * kw, ho, wo))
    bi = np.arange(b)[:, None, None, None]
    for g in range(og):
        ci = np.arange(g * cpg, (g + 1) * cpg)[None, :, None, None]
        for i in range(kh):
            for j in range(kw):
                k = i * kw + j
                y = (oy + i * dh)[None] + off[:, g, k, 0]  # [B, Ho, Wo]
                xx = (ox + j * dw)[None] + off[:, g, k, 1]
                inside = (y > -1) & (y < h) & (xx > -1) & (xx < wd)
                y0, x0 = np.floor(y), np.floor(xx)
                ly, lx = y - y0, xx - x0
                val = np.zeros((b, cpg, ho, wo))
                for cy, cx, wgt in ((0, 0, (1 - ly) * (1 - lx)), (0, 1, (1 - ly) * lx), (1, 0, ly * (1 - lx)),
                                    (1, 1, ly * lx)):
                    yc, xc = y0 + cy, x0 + cx
                    ok = inside & (yc >= 0) & (yc <= h - 1) & (xc >= 0) & (xc <= wd - 1)
                    yi = np.where(ok, yc, 0).astype(np.int64)[:, None]
                    xi = np.where(ok, xc, 0).astype(np.int64)[:, None]
                    val += np.where(ok, wgt, 0.0)[:, None] * x[bi, ci, yi, xi]
                if msk is not None:
                    val = val * msk[:, g, k][:, None]
                cols[:, g * cpg:(g + 1) * cpg, k] = val
    opg = cout // groups
    out = np.empty((b, cout, ho, wo))
    for gi in range(groups):
        cg_cols = cols[:, gi * cg:(gi + 1) * cg].reshape(b, cg * kh * kw, ho * wo)
        wg = wt[gi * opg:(gi + 1) * opg].reshape(opg, cg * kh * kw)
        out[:, gi * opg:(gi + 1) * opg] = np.einsum("ok,bkn->bon", wg, cg_cols, optimize=True).reshape(b, opg, ho, wo)
    if bias is not None:
        out += np.asarray(bias, dtype=np.float64)[None, :, None, None]
    return out


# ---------------------------------------------------------------------------------------------
# Deformable DETR's transformer (REFERENCE.md 4.3, 4.7, 4.8): single-stage or two-stage, optional
# iterative box refinement, return_intermediate_dec True, ReLU, post-norm; dropout is absent (eval).


def valid_ratios_from_masks(masks, dtype=torch.float32):
    """Deformable DETR's ``get_valid_ratio`` stacked over levels: for each level's bool mask
    ``[N, H, W]`` (True = padding), ``(valid_W / W, valid_H / H)`` with valid_H the count of
    non-padded entries of the first column and valid_W that of the first row.  Returns
    ``[N, L, 2]`` in ``dtype`` (float32 is the original's ``.float()``)."""
    out = []
    for mask in masks:
        _, h, w = mask.shape
        valid_h = torch.sum(~mask[:, :, 0], 1)
        valid_w = torch.sum(~mask[:, 0, :], 1)
        out.append(torch.stack([valid_w.to(dtype) / w, valid_h.to(dtype) / h], -1))
    return torch.stack(out, 1)


def encoder_reference_points(spatial_shapes, valid_ratios):
    """``DeformableTransformerEncoder.get_reference_points`` (REFERENCE.md 4.7): per level the
    pixel centres ``linspace(0.5, H-0.5, H)`` x ``linspace(0.5, W-0.5, W)`` (ij meshgrid), y divided
    by ``valid_ratio_h * H`` and x by ``valid_ratio_w * W``, stacked (x, y), concatenated over
    levels, then ``ref[:, :, None] * valid_ratios[:, None]`` -> ``[N, S, L, 2]``."""
    dtype = valid_ratios.dtype
    refs = []
    for lvl, (h, w) in enumerate(spatial_shapes):
        ref_y, ref_x = torch.meshgrid(torch.linspace(0.5, h - 0.5, h, dtype=dtype),
                                      torch.linspace(0.5, w - 0.5, w, dtype=dtype), indexing="ij")
        ref_y = ref_y.reshape(-1)[None] / (valid_ratios[:, None, lvl, 1] * h)
        ref_x = ref_x.reshape(-1)[None] / (valid_ratios[:, None, lvl, 0] * w)
        refs.append(torch.stack((ref_x, ref_y), -1))
    ref = torch.cat(refs, 1)
    return ref[:, :, None] * valid_ratios[:, None]


class DeformableTransformerEncoderLayer(nn.Module):
    """Encoder layer (REFERENCE.md 4.7): ``src2 = self_attn(src + pos, ref, src, mask)``;
    ``src = norm1(src + src2)``; ``src = norm2(src + linear2(relu(linear1(src))))``."""

    def __init__(self, d_model, d_ffn, heads, points, spatial_shapes):
        super().__init__()
        self.self_attn = MSDeformAttn(d_model, heads, points, spatial_shapes)
        self.norm1 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_ffn)
        self.linear2 = nn.Linear(d_ffn, d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, src, pos, reference_points, padding_mask=None):
        src2 = self.self_attn(src + pos, reference_points, src, padding_mask)
        src = self.norm1(src + src2)
        return self.norm2(src + self.linear2(F.relu(self.linear1(src))))


class DeformableTransformerDecoderLayer(nn.Module):
    """Decoder layer (REFERENCE.md 4.8): ``q = k = tgt + query_pos``, value ``tgt`` through
    ``self_attn`` (nn.MultiheadAttention, sequence-first), ``tgt = norm2(tgt + .)``; then
    ``cross_attn(tgt + query_pos, ref, memory, mask)``, ``tgt = norm1(tgt + .)``; then the FFN
    and ``norm3``."""

    def __init__(self, d_model, d_ffn, heads, points, spatial_shapes):
        super().__init__()
        self.cross_attn = MSDeformAttn(d_model, heads, points, spatial_shapes)
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = nn.MultiheadAttention(d_model, heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_ffn)
        self.linear2 = nn.Linear(d_ffn, d_model)
        self.norm3 = nn.LayerNorm(d_model)

    def forward(self, tgt, query_pos, reference_points, src, padding_mask=None):
        q = k = tgt + query_pos
        tgt2 = self.self_attn(q.transpose(0, 1), k.transpose(0, 1), tgt.transpose(0, 1))[0].transpose(0, 1)
        tgt = self.norm2(tgt + tgt2)
        tgt2 = self.cross_attn(tgt + query_pos, reference_points, src, padding_mask)
        tgt = self.norm1(tgt + tgt2)
        return self.norm3(tgt + self.linear2(F.relu(self.linear1(tgt))))


def probe_layers(n):
    """The layers of an n-layer stack whose outputs a probed transformer reports as
    ``stages.enc{i}`` / ``stages.dec{i}``: every layer but the last (whose output is ``memory`` or
    ``hs``), or layer 0 of a one-layer stack."""
    return range(n - 1) if n > 1 else range(1)


class DeformableTransformerEncoder(nn.Module):
    """``layers`` (a ModuleList) run in turn on ``src`` with the level-embedded positions and the
    reference points of :func:`encoder_reference_points`.  ``stages`` (a dict, optional) receives
    the output of every layer but the last (which is the memory) as ``stages.enc{i}``
    (:func:`probe_layers`)."""

    def __init__(self, layer_fn, num_layers, spatial_shapes):
        super().__init__()
        self.spatial_shapes = spatial_shapes
        self.layers = nn.ModuleList([layer_fn() for _ in range(num_layers)])

    def forward(self, src, valid_ratios, pos, padding_mask=None, stages=None):
        reference_points = encoder_reference_points(self.spatial_shapes, valid_ratios)
        output = src
        for i, layer in enumerate(self.layers):
            output = layer(output, pos, reference_points, padding_mask)
            if stages is not None and i in probe_layers(len(self.layers)):
                stages["stages.enc%d" % i] = output
        return output


class DeformableTransformerDecoder(nn.Module):
    """``layers`` run in turn.  Each layer gets ``ref[:, :, None] * valid_ratios[:, None]`` for 2-d
    references and ``ref[:, :, None] * cat([valid_ratios, valid_ratios], -1)[:, None]`` for 4-d
    ones (MSDeformAttn then uses the box sampling rule).  Without box refinement (``bbox_embed``
    None) the 2-d reference points stay fixed; with it (``bbox_embed`` a ModuleList of one MLP per
    layer, set by the owner as in the original) after layer i ``tmp = bbox_embed[i](output)`` and
    the new reference is ``sigmoid(tmp + inverse_sigmoid(ref))`` for a 4-d ref, or ``tmp`` with its
    first two entries plus ``inverse_sigmoid(ref)`` then sigmoid for a 2-d one (so the references
    are boxes from layer 1 on; detached in the original).  ``return_intermediate`` (True in the
    detector) stacks every layer's output and its reference AFTER that layer's refinement;
    ``stages`` receives the output of every layer but the last (which is ``hs``) as
    ``stages.dec{i}`` (:func:`probe_layers`)."""

    def __init__(self, layer_fn, num_layers, return_intermediate=True):
        super().__init__()
        self.layers = nn.ModuleList([layer_fn() for _ in range(num_layers)])
        self.return_intermediate = return_intermediate
        self.bbox_embed = None
        self.class_embed = None  # two-stage: set by the owner, index num_layers scores the proposals

    def forward(self, tgt, reference_points, src, valid_ratios, query_pos, padding_mask=None, stages=None):
        output = tgt
        intermediate, intermediate_refs = [], []
        for i, layer in enumerate(self.layers):
            if reference_points.shape[-1] == 4:
                reference_points_input = reference_points[:, :, None] * torch.cat([valid_ratios, valid_ratios], -1)[:, None]
            else:
                reference_points_input = reference_points[:, :, None] * valid_ratios[:, None]
            output = layer(output, query_pos, reference_points_input, src, padding_mask)
            if stages is not None and i in probe_layers(len(self.layers)):
                stages["stages.dec%d" % i] = output
            if self.bbox_embed is not None:
                tmp = self.bbox_embed[i](output)
                if reference_points.shape[-1] == 4:
                    new_reference_points = (tmp + inverse_sigmoid(reference_points)).sigmoid()
                else:
                    new_reference_points = torch.cat([tmp[..., :2] + inverse_sigmoid(reference_points), tmp[..., 2:]],
                                                     -1).sigmoid()
                reference_points = new_reference_points.detach()
            if self.return_intermediate:
                intermediate.append(output)
                intermediate_refs.append(reference_points)
        if self.return_intermediate:
            return torch.stack(intermediate), torch.stack(intermediate_refs)
        return output, reference_points


def encoder_output_proposals(spatial_shapes, padding_mask, n, dtype=torch.float32):
    """Deformable DETR's ``gen_encoder_output_proposals`` without the memory part (REFERENCE.md 4.8,
    two-stage): for each level l (H, W), valid_H / valid_W = the unpadded entries of the level's
    first column / first row of ``padding_mask [N, S]`` (True = padding; None = nothing padded),
    ``grid_y, grid_x = meshgrid(linspace(0, H-1, H), linspace(0, W-1, W))`` (ij),
    ``(cx, cy) = (grid_x + 0.5, grid_y + 0.5) / (valid_W, valid_H)``, ``w = h = 0.05 * 2^l``;
    concatenated over levels -> p [N, S, 4].  ``valid [N, S, 1]`` = every coordinate in (0.01, 0.99)
    (strict); the proposals are ``log(p / (1 - p))``, +inf on padded rows and on invalid ones.
    Computed in ``dtype`` (the original: float32).  Returns ``(proposals, valid)``."""
    props = []
    start = 0
    for lvl, (h, w) in enumerate(spatial_shapes):
        h, w = int(h), int(w)
        if padding_mask is None:
            valid_h = torch.full((n,), h, dtype=dtype)
            valid_w = torch.full((n,), w, dtype=dtype)
        else:
            m = padding_mask[:, start:start + h * w].view(n, h, w)
            valid_h = torch.sum(~m[:, :, 0], 1).to(dtype)
            valid_w = torch.sum(~m[:, 0, :], 1).to(dtype)
        grid_y, grid_x = torch.meshgrid(torch.linspace(0, h - 1, h, dtype=dtype),
                                        torch.linspace(0, w - 1, w, dtype=dtype), indexing="ij")
        grid = torch.cat([grid_x.unsqueeze(-1), grid_y.unsqueeze(-1)], -1)
        scale = torch.cat([valid_w.unsqueeze(-1), valid_h.unsqueeze(-1)], 1).view(n, 1, 1, 2)
        grid = (grid.unsqueeze(0).expand(n, -1, -1, -1) + 0.5) / scale
        wh = torch.ones_like(grid) * 0.05 * (2.0 ** lvl)
        props.append(torch.cat((grid, wh), -1).view(n, -1, 4))
        start += h * w
    proposals = torch.cat(props, 1)
    valid = ((proposals > 0.01) & (proposals < 0.99)).all(-1, keepdim=True)
    proposals = torch.log(proposals / (1 - proposals))
    if padding_mask is not None:
        proposals = proposals.masked_fill(padding_mask.unsqueeze(-1), float("inf"))
    proposals = proposals.masked_fill(~valid, float("inf"))
    return proposals, valid


def proposal_pos_embed(proposals, num_pos_feats=128, temperature=10000, scale=2 * math.pi):
    """Deformable DETR's ``get_proposal_pos_embed`` (REFERENCE.md 4.8): ``dim_t[i] =
    temperature^(2*(i//2)/F)`` (i < F = num_pos_feats), ``p = sigmoid(proposals) * 2 pi``, ``pos =
    p[..., None] / dim_t`` -> [N, Q, 4, F], then per coordinate sin of the even and cos of the odd
    channels interleaved (sin(a0), cos(a1), sin(a2), ...) -> [N, Q, 4F] (coordinate-major).  The
    original fixes F = 128, so 4F = 512 = 2 d_model (pos_trans's input) only for d_model 256, which
    two_stage therefore requires."""
    dim_t = torch.arange(num_pos_feats, dtype=proposals.dtype)
    dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_pos_feats)
    pos = (proposals.sigmoid() * scale)[:, :, :, None] / dim_t
    return torch.stack((pos[:, :, :, 0::2].sin(), pos[:, :, :, 1::2].cos()), dim=4).flatten(3).flatten(2)


class DeformableTransformer(nn.Module):
    """Deformable DETR's ``DeformableTransformer`` (REFERENCE.md 4.3, 4.7, 4.8), taking the already
    flattened multi-scale features.  State dict: ``level_embed [L, d]``, ``encoder.layers.{i}.*``,
    ``decoder.layers.{i}.*``, ``decoder.bbox_embed.{i}.*`` once the owner has set
    ``decoder.bbox_embed`` (box refinement), ``reference_points`` (Linear(d, 2)).

    With ``two_stage`` there is no ``reference_points``; instead ``enc_output`` (Linear(d, d)),
    ``enc_output_norm`` (LayerNorm(d)), ``pos_trans`` (Linear(2d, 2d)) and ``pos_trans_norm``
    (LayerNorm(2d)), and the owner sets ``decoder.class_embed`` / ``decoder.bbox_embed`` (dec_layers + 1
    heads each; index dec_layers scores the encoder's proposals).  ``queries`` proposals are kept."""

    def __init__(self, d_model, heads, enc_layers, dec_layers, ffn_dim, enc_points, dec_points, spatial_shapes,
                 two_stage=False, queries=300):
        super().__init__()
        self.spatial_shapes = [tuple(int(v) for v in hw) for hw in spatial_shapes]
        self.level_start_index = level_start_index(self.spatial_shapes)
        self.d_model = d_model
        self.two_stage, self.queries = two_stage, queries
        self.encoder = DeformableTransformerEncoder(
            lambda: DeformableTransformerEncoderLayer(d_model, ffn_dim, heads, enc_points, self.spatial_shapes),
            enc_layers, self.spatial_shapes)
        self.decoder = DeformableTransformerDecoder(
            lambda: DeformableTransformerDecoderLayer(d_model, ffn_dim, heads, dec_points, self.spatial_shapes),
            dec_layers, True)
        self.level_embed = nn.Parameter(torch.empty(len(self.spatial_shapes), d_model))
        if two_stage:
            if d_model != 256:
                raise ValueError("two_stage needs d_model 256 (the proposal embedding has 4 * 128 features), "
                                 "got %d" % d_model)
            self.enc_output = nn.Linear(d_model, d_model)
            self.enc_output_norm = nn.LayerNorm(d_model)
            self.pos_trans = nn.Linear(d_model * 2, d_model * 2)
            self.pos_trans_norm = nn.LayerNorm(d_model * 2)
        else:
            self.reference_points = nn.Linear(d_model, 2)

    def level_masks(self, padding_mask):
        """The per-level ``[N, H_l, W_l]`` blocks of a flat ``[N, S]`` mask."""
        n = padding_mask.shape[0]
        return [padding_mask[:, s:s + h * w].reshape(n, h, w)
                for s, (h, w) in zip(self.level_start_index, self.spatial_shapes)]

    def two_stage_queries(self, memory, mask_flatten):
        """The two-stage query selection (REFERENCE.md 4.8): ``output_memory`` = memory with padded and
        invalid-proposal rows zeroed, through ``enc_output`` and ``enc_output_norm``; scores
        ``decoder.class_embed[L](output_memory)`` and coordinates ``decoder.bbox_embed[L](output_memory)
        + proposals`` (L = dec_layers); the ``queries`` largest class-0 scores per image, descending,
        equal scores lower row first (a stable sort); the selected coordinates (detached), their
        sigmoid as the 4-d initial references, and ``pos_trans_norm(pos_trans(proposal_pos_embed(coords)))`` split into
        ``query_pos`` (first d) and ``tgt``.  Returns ``(reference_points [N, Q, 4], query_pos, tgt,
        enc_scores [N, S])``."""
        n, _, d = memory.shape
        proposals, valid = encoder_output_proposals(self.spatial_shapes, mask_flatten, n, memory.dtype)
        out = memory
        if mask_flatten is not None:
            out = out.masked_fill(mask_flatten.unsqueeze(-1), 0.0)
        out = out.masked_fill(~valid, 0.0)
        out = self.enc_output_norm(self.enc_output(out))
        last = len(self.decoder.layers)
        enc_class = self.decoder.class_embed[last](out)
        enc_coord_unact = self.decoder.bbox_embed[last](out) + proposals
        # torch.topk's order for equal scores is unspecified; a stable sort takes the lower row first.
        topk = torch.sort(enc_class[..., 0], dim=1, descending=True, stable=True)[1][:, :self.queries]
        coords = torch.gather(enc_coord_unact, 1, topk.unsqueeze(-1).repeat(1, 1, 4)).detach()
        reference_points = coords.sigmoid()
        pos_trans_out = self.pos_trans_norm(self.pos_trans(proposal_pos_embed(coords)))
        query_pos, tgt = torch.split(pos_trans_out, d, dim=2)
        return reference_points, query_pos, tgt, enc_class[..., 0]

    def forward(self, src_flatten, pos_flatten, mask_flatten, query_embed, stages=None):
        """Returns ``(hs [dec_layers, N, Q, d], init_reference_out [N, Q, 2] (two-stage: [N, Q, 4]),
        inter_references [dec_layers, N, Q, 2 or 4] (the reference after each layer's refinement; the
        initial one repeated without refinement), memory [N, S, d])``.  ``query_embed`` is None with
        two_stage."""
        n = src_flatten.shape[0]
        lvl_pos = torch.cat([pos_flatten[:, s:s + h * w] + self.level_embed[lvl].view(1, 1, -1)
                             for lvl, (s, (h, w)) in enumerate(zip(self.level_start_index, self.spatial_shapes))], 1)
        if mask_flatten is None:
            valid_ratios = torch.ones(n, len(self.spatial_shapes), 2, dtype=src_flatten.dtype)
        else:
            valid_ratios = valid_ratios_from_masks(self.level_masks(mask_flatten), src_flatten.dtype)
        memory = self.encoder(src_flatten, valid_ratios, lvl_pos, mask_flatten, stages)
        if self.two_stage:
            reference_points, query_pos, tgt, _ = self.two_stage_queries(memory, mask_flatten)
        else:
            query_pos, tgt = torch.split(query_embed, self.d_model, dim=1)
            query_pos = query_pos.unsqueeze(0).expand(n, -1, -1)
            tgt = tgt.unsqueeze(0).expand(n, -1, -1)
            reference_points = self.reference_points(query_pos).sigmoid()
        hs, inter_references = self.decoder(tgt, reference_points, memory, valid_ratios, query_pos, mask_flatten,
                                            stages)
        return hs, reference_points, inter_references, memory


class DDETRTransformer(nn.Module):
    """Op kind ``ddetr_transformer``: Deformable DETR's transformer with the detector's
    ``query_embed`` (nn.Embedding(queries, 2d)), so the state dict names equal the full
    detector's (``transformer.*``, ``query_embed.weight``).

    ``forward(src [N, S, d], pos [N, S, d], padding_mask=None [N, S] bool, True = padding)``
    returns a dict: ``memory [N, S, d]`` (encoder output), ``hs [N, Q, d]`` (the last decoder
    layer's output, hs[-1]), ``reference_points [N, Q, 2]`` (the initial sigmoid references) and,
    with ``probe``, ``stages.enc{i}`` / ``stages.dec{i}`` (after every encoder / decoder layer but the last, :func:`probe_layers`).

    With ``box_refine`` the decoder owns ``dec_layers`` independent box MLPs (d -> d -> d -> 4,
    state dict ``transformer.decoder.bbox_embed.{i}.layers.{0,1,2}.*``) refining the references
    after every layer (:class:`DeformableTransformerDecoder`), and the output dict also has
    ``last_reference [N, Q, 4]``, the reference boxes after the last layer's refinement.

    With ``two_stage`` (needs ``box_refine``, as the released two-stage model) there is no
    ``query_embed``: the queries come from the encoder's proposals
    (:meth:`DeformableTransformer.two_stage_queries`), scored by ``num_classes``-way class heads.
    The decoder owns ``dec_layers + 1`` independent class heads Linear(d, num_classes)
    (``transformer.decoder.class_embed.{i}.*``) and ``dec_layers + 1`` box MLPs
    (``transformer.decoder.bbox_embed.{i}.*``); index dec_layers scores / offsets the proposals,
    0..dec_layers-1 refine (the class heads 0..dec_layers-1 are unused here: in the detector they
    are its per-layer heads).  ``reference_points`` is then ``[N, Q, 4]`` (the selected proposal
    boxes, the decoder's initial references)."""

    def __init__(self, spatial_shapes, d_model=256, heads=8, enc_layers=6, dec_layers=6, ffn_dim=1024,
                 enc_points=4, dec_points=4, queries=300, probe=False, box_refine=False, two_stage=False,
                 num_classes=91):
        super().__init__()
        if d_model % heads:
            raise ValueError("d_model %d is not a multiple of heads %d" % (d_model, heads))
        if two_stage and not box_refine:
            raise ValueError("two_stage needs box_refine")
        self.transformer = DeformableTransformer(d_model, heads, enc_layers, dec_layers, ffn_dim, enc_points,
                                                 dec_points, spatial_shapes, two_stage, queries)
        heads_n = dec_layers + 1 if two_stage else dec_layers
        if box_refine:
            self.transformer.decoder.bbox_embed = nn.ModuleList([MLP(d_model, d_model, 4, 3)
                                                                 for _ in range(heads_n)])
        if two_stage:
            self.transformer.decoder.class_embed = nn.ModuleList([nn.Linear(d_model, num_classes)
                                                                  for _ in range(heads_n)])
        else:
            self.query_embed = nn.Embedding(queries, 2 * d_model)
        self.probe, self.box_refine, self.two_stage = probe, box_refine, two_stage
        self.eval()

    def forward(self, src, pos, padding_mask=None):
        stages = {} if self.probe else None
        qe = None if self.two_stage else self.query_embed.weight
        hs, ref, inter_refs, memory = self.transformer(src, pos, padding_mask, qe, stages)
        out = {"memory": memory, "hs": hs[-1], "reference_points": ref}
        if self.box_refine:
            out["last_reference"] = inter_refs[-1]
        if stages:
            out.update(stages)
        return out


def valid_ratios_float64(padding_mask, spatial_shapes):
    """``[N, L, 2]`` (valid_W / W, valid_H / H) per level from a flat ``[N, S]`` mask (nonzero =
    padding), counting the valid entries of each level block's first row (W) and first column
    (H), in float64 NumPy."""
    import numpy as np
    mask = np.asarray(padding_mask) != 0
    n = mask.shape[0]
    out = np.empty((n, len(spatial_shapes), 2))
    for lvl, (st, (h, w)) in enumerate(zip(level_start_index(spatial_shapes), spatial_shapes)):
        blk = mask[:, st:st + h * w].reshape(n, h, w)
        out[:, lvl, 0] = (~blk[:, 0, :]).sum(axis=1) / w
        out[:, lvl, 1] = (~blk[:, :, 0]).sum(axis=1) / h
    return out


def encoder_reference_points_float64(spatial_shapes, valid_ratios):
    """The encoder reference points ``[N, S, L, 2]`` in float64 NumPy: the pixel centre
    ((col + 0.5) / (vr_w * W), (row + 0.5) / (vr_h * H)) of every position of level l (its own
    valid ratios), times the valid ratios of each sampled level."""
    import numpy as np
    vr = np.asarray(valid_ratios, dtype=np.float64)
    refs = []
    for lvl, (h, w) in enumerate(spatial_shapes):
        rows, cols = np.divmod(np.arange(h * w), w)
        rx = (cols + 0.5)[None] / (vr[:, lvl, 0:1] * w)
        ry = (rows + 0.5)[None] / (vr[:, lvl, 1:2] * h)
        refs.append(np.stack([rx, ry], -1))
    return np.concatenate(refs, 1)[:, :, None] * vr[:, None]


def inverse_sigmoid_float64(x, eps=1e-5):
    """``inverse_sigmoid`` in float64 NumPy: clip to [0, 1], log(max(x, eps) / max(1 - x, eps))."""
    import numpy as np
    x = np.clip(x, 0, 1)
    return np.log(np.maximum(x, eps) / np.maximum(1 - x, eps))


def encoder_output_proposals_float64(spatial_shapes, padding_mask, n):
    """:func:`encoder_output_proposals` in float64 NumPy, written from the rule: row s of level l at
    (row, col) gets p = ((col + 0.5) / valid_W, (row + 0.5) / valid_H, 0.05 * 2^l, 0.05 * 2^l) with
    the level's valid_W / valid_H the unpadded entries of its first row / column (the whole level
    without a mask); valid = every p_j in (0.01, 0.99); returns ``(log(p / (1 - p)) with +inf on
    padded or invalid rows [N, S, 4], valid [N, S] bool)``."""
    import numpy as np
    mask = None if padding_mask is None else np.asarray(padding_mask) != 0
    out = []
    for lvl, (st, (h, w)) in enumerate(zip(level_start_index(spatial_shapes), spatial_shapes)):
        if mask is None:
            vh, vw = np.full(n, float(h)), np.full(n, float(w))
        else:
            blk = mask[:, st:st + h * w].reshape(n, h, w)
            vh = (~blk[:, :, 0]).sum(axis=1).astype(np.float64)
            vw = (~blk[:, 0, :]).sum(axis=1).astype(np.float64)
        rows, cols = np.divmod(np.arange(h * w), w)
        pl = np.empty((n, h * w, 4))
        pl[..., 0] = (cols + 0.5)[None] / vw[:, None]
        pl[..., 1] = (rows + 0.5)[None] / vh[:, None]
        pl[..., 2:] = 0.05 * 2.0 ** lvl
        out.append(pl)
    prop = np.concatenate(out, 1)
    valid = np.all((prop > 0.01) & (prop < 0.99), axis=-1)
    keep = valid if mask is None else valid & ~mask
    with np.errstate(divide="ignore", invalid="ignore"):
        logit = np.log(prop / (1 - prop))
    return np.where(keep[..., None], logit, np.inf), valid


def proposal_pos_embed_float64(coords, num_pos_feats=128, temperature=10000.0):
    """:func:`proposal_pos_embed` in float64 NumPy, by loops over the channels: for coordinate k and
    channel i, ``f(sigmoid(coords[..., k]) * 2 pi / temperature^(2*(i//2)/F))`` with f = sin for
    even i and cos for odd i, at column ``k*F + i`` -> ``[N, Q, 4F]``."""
    import numpy as np
    c = np.asarray(coords, dtype=np.float64)
    p = 1 / (1 + np.exp(-c)) * 2 * math.pi
    out = np.empty(c.shape[:-1] + (4 * num_pos_feats,))
    for k in range(4):
        for i in range(num_pos_feats):
            fn = np.sin if i % 2 == 0 else np.cos
            out[..., k * num_pos_feats + i] = fn(p[..., k] / temperature ** (2 * (i // 2) / num_pos_feats))
    return out


def ddetr_transformer_float64(src, pos, padding_mask, weights, p, refs_out=None):
    """The ``ddetr_transformer`` op recomputed in float64 NumPy from the weights (no torch
    modules): level embedding, valid ratios from the level blocks of the mask (first column /
    first row), encoder reference points, post-norm encoder layers with
    :func:`ms_deform_attn_float64`, the query_embed split, sigmoid reference points, decoder
    layers with a hand-written multi-head self-attention; with ``box_refine`` the refinement of the
    references after every decoder layer by ``transformer.decoder.bbox_embed.{i}`` (2-d -> 4-d
    after layer 0, the 4-d references scaled by (vr_w, vr_h, vr_w, vr_h) per level).  Returns the
    module's output dict; ``refs_out`` (a list, optional) receives the reference after each
    decoder layer (the initial one while nothing is refined).

    With ``two_stage`` the queries come from the encoder, as written in REFERENCE.md 4.8
    (:func:`encoder_output_proposals_float64`, padded / invalid memory rows zeroed, enc_output +
    LayerNorm, class head and box MLP ``transformer.decoder.{class,bbox}_embed.{dec_layers}``, the
    ``queries`` largest class-0 scores per image (np.argsort, stable: equal scores in row order),
    sigmoid references [N, Q, 4], :func:`proposal_pos_embed_float64` (F = 128) through
    pos_trans + LayerNorm, first d columns query_pos, the rest tgt)."""
    import numpy as np
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    src = np.asarray(src, dtype=np.float64)
    pos = np.asarray(pos, dtype=np.float64)
    n, s, d = src.shape
    shapes = [(int(h), int(wd)) for h, wd in p["spatial_shapes"]]
    starts = level_start_index(shapes)
    nl, m = len(shapes), p["heads"]
    mask = None if padding_mask is None else np.asarray(padding_mask) != 0

    def lin(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    def ln(x, name):
        return layernorm_float64(x, w[name + ".weight"], w[name + ".bias"], 1e-5)

    def sub(prefix):
        return {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}

    lvl_pos = np.concatenate([pos[:, st:st + h * wd] + w["transformer.level_embed"][lvl]
                              for lvl, (st, (h, wd)) in enumerate(zip(starts, shapes))], axis=1)
    vr = np.ones((n, nl, 2)) if mask is None else valid_ratios_float64(mask, shapes)
    enc_ref = encoder_reference_points_float64(shapes, vr)

    out = {}
    x = src
    for i in range(p["enc_layers"]):
        pre = "transformer.encoder.layers.%d." % i
        a = ms_deform_attn_float64(x + lvl_pos, enc_ref, x, mask, sub(pre + "self_attn."),
                                   {"heads": m, "points": p["enc_points"], "spatial_shapes": shapes})
        x = ln(x + a, pre + "norm1")
        x = ln(x + lin(np.maximum(lin(x, pre + "linear1"), 0), pre + "linear2"), pre + "norm2")
        if p["probe"] and i in probe_layers(p["enc_layers"]):
            out["stages.enc%d" % i] = x
    memory = x

    def mlp(x, pre):
        return lin(np.maximum(lin(np.maximum(lin(x, pre + "0"), 0), pre + "1"), 0), pre + "2")

    if p.get("two_stage"):
        # Proposals, the encoder's heads (index dec_layers), top-k of the class-0 scores, the
        # proposal sine embedding through pos_trans.
        prop, valid = encoder_output_proposals_float64(shapes, mask, n)
        keep = valid if mask is None else valid & ~mask
        om = np.where(keep[..., None], memory, 0.0)
        om = ln(lin(om, "transformer.enc_output"), "transformer.enc_output_norm")
        last = p["dec_layers"]
        score = lin(om, "transformer.decoder.class_embed.%d" % last)[..., 0]
        coord = mlp(om, "transformer.decoder.bbox_embed.%d.layers." % last) + prop
        top = np.argsort(-score, axis=1, kind="stable")[:, :p["queries"]]
        coords = np.take_along_axis(coord, top[..., None], 1)
        ref = 1 / (1 + np.exp(-coords))
        pt = ln(lin(proposal_pos_embed_float64(coords), "transformer.pos_trans"),
                "transformer.pos_trans_norm")
        query_pos, tgt = pt[..., :d], pt[..., d:]
    else:
        qe = w["query_embed.weight"]
        query_pos = np.broadcast_to(qe[:, :d], (n,) + qe[:, :d].shape)
        tgt = np.broadcast_to(qe[:, d:], (n,) + qe[:, d:].shape)
        ref = 1 / (1 + np.exp(-lin(query_pos, "transformer.reference_points")))
    init_ref = ref
    hd = d // m
    for i in range(p["dec_layers"]):
        # 2-d: (x, y) * (vr_w, vr_h); 4-d: (cx, cy, w, h) * (vr_w, vr_h, vr_w, vr_h), per level.
        dec_ref = ref[:, :, None] * (vr if ref.shape[-1] == 2 else np.concatenate([vr, vr], -1))[:, None]
        pre = "transformer.decoder.layers.%d." % i
        wi, bi = w[pre + "self_attn.in_proj_weight"], w[pre + "self_attn.in_proj_bias"]
        qk = tgt + query_pos
        q = (qk @ wi[:d].T + bi[:d]).reshape(n, -1, m, hd)
        k = (qk @ wi[d:2 * d].T + bi[d:2 * d]).reshape(n, -1, m, hd)
        v = (tgt @ wi[2 * d:].T + bi[2 * d:]).reshape(n, -1, m, hd)
        sc = np.einsum("nqmc,nkmc->nmqk", q, k) / np.sqrt(hd)
        sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
        sc = sc / sc.sum(axis=-1, keepdims=True)
        ctx = np.einsum("nmqk,nkmc->nqmc", sc, v).reshape(n, -1, d)
        tgt = ln(tgt + lin(ctx, pre + "self_attn.out_proj"), pre + "norm2")
        a = ms_deform_attn_float64(tgt + query_pos, dec_ref, memory, mask, sub(pre + "cross_attn."),
                                   {"heads": m, "points": p["dec_points"], "spatial_shapes": shapes})
        tgt = ln(tgt + a, pre + "norm1")
        tgt = ln(tgt + lin(np.maximum(lin(tgt, pre + "linear1"), 0), pre + "linear2"), pre + "norm3")
        if p["probe"] and i in probe_layers(p["dec_layers"]):
            out["stages.dec%d" % i] = tgt
        if p.get("box_refine"):
            tmp = mlp(tgt, "transformer.decoder.bbox_embed.%d.layers." % i)
            if ref.shape[-1] == 2:
                tmp = tmp.copy()
                tmp[..., :2] += inverse_sigmoid_float64(ref)
            else:
                tmp = tmp + inverse_sigmoid_float64(ref)
            ref = 1 / (1 + np.exp(-tmp))
        if refs_out is not None:
            refs_out.append(ref)
    out.update({"memory": memory, "hs": tgt, "reference_points": init_ref})
    if p.get("box_refine"):
        out["last_reference"] = ref
    return out


# ---------------------------------------------------------------------------------------------
# The whole Deformable DETR detector (REFERENCE.md 4.1-4.9): ResNet-50 backbone with
# FrozenBatchNorm2d, sine position embedding, input projections, the transformer above, the heads
# of the last decoder layer and PostProcess.  Default config, optional box refinement, optional
# two-stage (with box refinement).

RESNET50_BLOCKS = (3, 4, 6, 3)
RESNET50_WIDTHS = (64, 128, 256, 512)  # bottleneck width per stage; output channels are 4x


def _conv_size(n, k, s, p):
    return (n + 2 * p - k) // s + 1


def resnet50_layout(img_size):
    """Every convolution of torchvision's ResNet-50 body (v1.5: the stride is in each stage's first
    3x3 conv and its 1x1 downsample; stem conv1 7x7 s2 p3 then maxpool 3x3 s2 p1) in execution
    order, for an input of ``img_size`` (H, W).  Each entry is a dict: ``conv`` / ``bn`` (the
    state_dict prefixes of the conv and its FrozenBatchNorm2d), ``cin``, ``cout``, ``k``, ``stride``,
    ``pad``, ``out`` (Ho, Wo).  The maxpool is not listed; ``resnet50_stage_sizes`` gives it."""
    h, w = pair(img_size)
    convs = []

    def add(conv, bn, cin, cout, k, s, p, hw):
        out = (_conv_size(hw[0], k, s, p), _conv_size(hw[1], k, s, p))
        convs.append({"conv": conv, "bn": bn, "cin": cin, "cout": cout, "k": k, "stride": s, "pad": p, "out": out})
        return out

    hw = add("conv1", "bn1", 3, 64, 7, 2, 3, (h, w))
    hw = (_conv_size(hw[0], 3, 2, 1), _conv_size(hw[1], 3, 2, 1))  # maxpool
    cin = 64
    for stage, (blocks, width) in enumerate(zip(RESNET50_BLOCKS, RESNET50_WIDTHS)):
        for j in range(blocks):
            s = 2 if (j == 0 and stage > 0) else 1
            pre = "layer%d.%d." % (stage + 1, j)
            a = add(pre + "conv1", pre + "bn1", cin, width, 1, 1, 0, hw)
            b = add(pre + "conv2", pre + "bn2", width, width, 3, s, 1, a)
            out = add(pre + "conv3", pre + "bn3", width, 4 * width, 1, 1, 0, b)
            if j == 0:
                add(pre + "downsample.0", pre + "downsample.1", cin, 4 * width, 1, s, 0, hw)
            cin, hw = 4 * width, out
    return convs


def ddetr_level_shapes(img_size):
    """The four level shapes ``[[H, W], ...]`` of the detector for a padded batch image ``img_size``:
    C3, C4, C5 (outputs of layer2-4, strides 8/16/32) and the extra level of input_proj[3]
    (3x3 s2 p1 conv on C5).  Every stride-2 step maps n -> ceil(n / 2) (REFERENCE.md 4.2)."""
    convs = resnet50_layout(img_size)
    ends = {c["conv"]: c["out"] for c in convs}
    levels = [list(ends["layer%d.%d.conv3" % (i + 1, RESNET50_BLOCKS[i] - 1)]) for i in (1, 2, 3)]
    h5, w5 = levels[-1]
    levels.append([_conv_size(h5, 3, 2, 1), _conv_size(w5, 3, 2, 1)])
    return levels


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, all four buffers (REFERENCE.md 4.2):
    ``y = x * scale + (bias - running_mean * scale)``, ``scale = weight * rsqrt(running_var + eps)``,
    eps 1e-5.  No ``num_batches_tracked``."""

    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(n))
        self.register_buffer("bias", torch.zeros(n))
        self.register_buffer("running_mean", torch.zeros(n))
        self.register_buffer("running_var", torch.ones(n))

    def forward(self, x):
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        bias = self.bias - self.running_mean * scale
        return x * scale[None, :, None, None] + bias[None, :, None, None]


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: 1x1 -> 3x3 (stride here) -> 1x1 (4x width), FrozenBN after each
    conv, ReLU after the first two and after the residual sum; ``downsample`` (1x1 conv with the
    stride + FrozenBN) on the identity of each stage's first block."""

    def __init__(self, cin, width, stride, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = FrozenBatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = FrozenBatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, 4 * width, 1, bias=False)
        self.bn3 = FrozenBatchNorm2d(4 * width)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, 4 * width, 1, stride, bias=False),
                                         FrozenBatchNorm2d(4 * width)) if downsample else None)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return F.relu(out + identity)


class ResNet50Body(nn.Module):
    """ResNet-50 without avgpool / fc (Deformable DETR's ``IntermediateLayerGetter`` body), written
    from the spec: ``forward(x) -> [C3, C4, C5]`` (outputs of layer2, layer3, layer4).  State dict
    as torchvision's resnet50 minus ``fc``: ``conv1``, ``bn1``, ``layer{1..4}.{j}.{conv1, bn1, conv2,
    bn2, conv3, bn3}``, ``layer{1..4}.0.downsample.{0, 1}``."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = FrozenBatchNorm2d(64)
        cin = 64
        for stage, (blocks, width) in enumerate(zip(RESNET50_BLOCKS, RESNET50_WIDTHS)):
            layer = []
            for j in range(blocks):
                layer.append(Bottleneck(cin, width, 2 if (j == 0 and stage > 0) else 1, j == 0))
                cin = 4 * width
            setattr(self, "layer%d" % (stage + 1), nn.Sequential(*layer))

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, 2, 1)
        x = self.layer1(x)
        c3 = self.layer2(x)
        c4 = self.layer3(c3)
        c5 = self.layer4(c4)
        return [c3, c4, c5]


class DDETRBackbone(nn.Module):
    """Deformable DETR's ``Backbone``: its only child is ``body`` (so the keys are ``body.*``)."""

    def __init__(self):
        super().__init__()
        self.body = ResNet50Body()

    def forward(self, x):
        return self.body(x)


def position_embedding_sine(mask, num_pos_feats=128, temperature=10000, scale=2 * math.pi, dtype=torch.float32):
    """Deformable DETR's ``PositionEmbeddingSine`` (normalize True; REFERENCE.md 4.2) of a bool mask
    ``[N, H, W]`` (True = padding) -> ``[N, 2*num_pos_feats, H, W]``: cumulative sums of the
    unpadded entries down the rows (y) and along the columns (x), ``(embed - 0.5) / (last + 1e-6) *
    scale`` (the -0.5 offset is Deformable DETR's), divided by ``temperature^(2*(i//2)/F)``, sin on
    even and cos on odd channels (interleaved), channels ``[pos_y, pos_x]``.  The original computes
    in float32 (``cumsum(dtype=float32)``); here in ``dtype`` so the float64 check is float64
    throughout (float32 gives the original's arithmetic)."""
    not_mask = ~mask
    y_embed = not_mask.cumsum(1, dtype=dtype)
    x_embed = not_mask.cumsum(2, dtype=dtype)
    eps = 1e-6
    y_embed = (y_embed - 0.5) / (y_embed[:, -1:, :] + eps) * scale
    x_embed = (x_embed - 0.5) / (x_embed[:, :, -1:] + eps) * scale
    dim_t = torch.arange(num_pos_feats, dtype=dtype)
    dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_pos_feats)
    pos_x = x_embed[:, :, :, None] / dim_t
    pos_y = y_embed[:, :, :, None] / dim_t
    pos_x = torch.stack((pos_x[:, :, :, 0::2].sin(), pos_x[:, :, :, 1::2].cos()), dim=4).flatten(3)
    pos_y = torch.stack((pos_y[:, :, :, 0::2].sin(), pos_y[:, :, :, 1::2].cos()), dim=4).flatten(3)
    return torch.cat((pos_y, pos_x), dim=3).permute(0, 3, 1, 2)


class PositionEmbeddingSine(nn.Module):
    """:func:`position_embedding_sine` as the parameter-free module ``backbone.1`` of the detector."""

    def __init__(self, num_pos_feats=128):
        super().__init__()
        self.num_pos_feats = num_pos_feats

    def forward(self, mask, dtype=torch.float32):
        return position_embedding_sine(mask, self.num_pos_feats, dtype=dtype)


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


def inverse_sigmoid(x, eps=1e-5):
    """Deformable DETR's ``inverse_sigmoid`` (REFERENCE.md 4.8): clamp to [0, 1], then
    ``log(clamp(x, eps) / clamp(1 - x, eps))``."""
    x = x.clamp(min=0, max=1)
    return torch.log(x.clamp(min=eps) / (1 - x).clamp(min=eps))


def box_cxcywh_to_xyxy(b):
    cx, cy, w, h = b.unbind(-1)
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], -1)


def ddetr_postprocess(logits, boxes, sizes, top_k):
    """Deformable DETR's ``PostProcess`` (REFERENCE.md 4.9): ``prob = sigmoid(logits [N, Q, C])``,
    top-k over the flattened Q*C scores (descending, torch.topk), box index ``idx // C``, label
    ``idx % C``, the box (cx, cy, w, h) -> (x0, y0, x1, y1) times ``[w, h, w, h]`` of ``sizes
    [N, 2]`` (each image's (h, w)).  Returns ``(scores [N, K], labels [N, K] (float), boxes [N, K, 4])``."""
    n, _, c = logits.shape
    prob = logits.sigmoid()
    scores, idx = torch.topk(prob.reshape(n, -1), top_k, dim=1)
    qi = torch.div(idx, c, rounding_mode="floor")
    labels = idx % c
    xyxy = box_cxcywh_to_xyxy(boxes)
    picked = torch.gather(xyxy, 1, qi.unsqueeze(-1).repeat(1, 1, 4))
    img_h, img_w = sizes.to(logits.dtype).unbind(1)
    scale = torch.stack([img_w, img_h, img_w, img_h], dim=1)
    return scores, labels.to(logits.dtype), picked * scale[:, None, :]


class DeformableDETR(nn.Module):
    """Op kind ``deformable_detr``: the Deformable DETR detector, optionally with iterative box
    refinement and two-stage (REFERENCE.md 4.1-4.9), default config, 4 feature levels, for padded batch images of
    ``img_size`` (H, W) (the level shapes of the transformer are fixed at construction,
    :func:`ddetr_level_shapes`).

    ``forward(images [N, 3, H, W] (normalised), image_mask=None [N, H, W], nonzero = padded)``:

    1. C3, C4, C5 = the ResNet-50 body (FrozenBN) outputs of layer2-4; each level's mask is
       ``F.interpolate(image_mask[None].float(), size).to(bool)[0]`` (nearest); without a mask
       nothing is padded (the original's all-False mask; equivalent to no mask downstream);
    2. pos_l = sine embedding of the level mask (-0.5 offset); src_l = input_proj[l](C_{l+3})
       (1x1 conv + GroupNorm(32)) for l = 0..2, src_3 = input_proj[3](C5) (3x3 s2 p1 conv on the
       raw C5 + GroupNorm) with its mask interpolated from the image mask and its own sine pos;
    3. the transformer (:class:`DeformableTransformer`) on the flattened levels with query_embed;
    4. heads on the LAST decoder layer only: ``pred_logits = class_embed[-1](hs)``, ``pred_boxes =
       sigmoid(bbox_embed[-1](hs) + inverse_sigmoid(reference))`` (only the first two coordinates
       when the reference is 2-d) with reference = the sigmoid reference points without refinement
       (fixed), with refinement the 4-d reference after decoder layer dec_layers - 2
       (``inter_references[-2]``; the initial 2-d one when dec_layers is 1);
    5. :func:`ddetr_postprocess` with each image's VALID size (h, w) = (unpadded rows of column 0,
       unpadded columns of row 0 of its image_mask; the full img_size without a mask).  The
       original scales by the caller's target size (the original image size); here the image's
       unpadded extent in the padded batch stands for it.

    Returns a dict: ``pred_logits [N, Q, C]``, ``pred_boxes [N, Q, 4]`` (cx, cy, w, h normalised),
    ``scores [N, K]``, ``labels [N, K]`` (float), ``boxes [N, K, 4]`` (x0, y0, x1, y1 pixels); with
    ``probe`` also ``stages.c3``, ``stages.c5``, ``stages.src`` (flattened input_proj outputs
    [N, S, d]), ``stages.memory`` and ``stages.hs`` (last decoder layer).

    State dict = the original's: ``backbone.0.body.*`` (:class:`ResNet50Body`; ``backbone.1``, the
    position embedding, has no parameters), ``input_proj.{l}.{0,1}.*``, ``transformer.*``,
    ``query_embed.weight``, ``class_embed.{i}.*`` and ``bbox_embed.{i}.layers.{0,1,2}.*`` for
    i < dec_layers.  Without box refinement class_embed / bbox_embed are ONE module each, repeated
    in the ModuleList (as the original's ``nn.ModuleList([self.class_embed for _ in range(n)])``):
    the state_dict lists every copy, and loading a state_dict whose copies differ (synthesized
    weights) leaves the LAST copy (index dec_layers - 1) in the shared module, so that is the one
    a backend must use.

    With ``box_refine`` class_embed and bbox_embed are ``dec_layers`` independent clones, and
    ``transformer.decoder.bbox_embed`` IS the top-level ``bbox_embed`` ModuleList (the original's
    ``self.transformer.decoder.bbox_embed = self.bbox_embed``): the state_dict lists the same
    tensors as ``transformer.decoder.bbox_embed.{i}.*`` and ``bbox_embed.{i}.*``.  The modules are
    registered in the original's order (transformer, class_embed, bbox_embed, query_embed,
    input_proj, backbone), so loading a state_dict whose two copies differ (synthesized weights)
    loads ``bbox_embed.{i}.*`` last: those values are what the module uses, both for the
    refinement after decoder layer i and for the box head (i = dec_layers - 1); the logits use
    ``class_embed.{dec_layers-1}``.

    With ``two_stage`` (needs ``box_refine``) there is no ``query_embed``; class_embed and
    bbox_embed are ``dec_layers + 1`` independent clones, and ``transformer.decoder.class_embed``
    and ``transformer.decoder.bbox_embed`` ARE the top-level ModuleLists (the original assigns
    both): the state_dict lists ``transformer.decoder.{class,bbox}_embed.{i}.*`` and
    ``{class,bbox}_embed.{i}.*`` for i <= dec_layers, and loading leaves the top-level values in
    the shared modules (registration order as above, query_embed absent).  Index dec_layers
    scores and offsets the encoder's proposals (:meth:`DeformableTransformer.two_stage_queries`);
    the heads on hs are still ``class_embed.{dec_layers-1}`` / ``bbox_embed.{dec_layers-1}`` with the
    reference after decoder layer dec_layers - 2 (the initial 4-d proposal boxes when dec_layers is
    1), so pred_boxes equals the last refined reference."""

    def __init__(self, img_size, num_classes=91, queries=300, d_model=256, heads=8, enc_layers=6, dec_layers=6,
                 ffn_dim=1024, enc_points=4, dec_points=4, top_k=100, probe=False, box_refine=False,
                 two_stage=False):
        super().__init__()
        if two_stage and not box_refine:
            raise ValueError("two_stage needs box_refine")
        if d_model % heads or d_model % 32:
            raise ValueError("d_model %d must be a multiple of heads %d and of 32 (GroupNorm)" % (d_model, heads))
        if not 1 <= top_k <= queries * num_classes:
            raise ValueError("top_k %d must be in [1, queries * num_classes]" % top_k)
        self.img_size = pair(img_size)
        self.spatial_shapes = [tuple(hw) for hw in ddetr_level_shapes(self.img_size)]
        self.num_classes, self.top_k, self.probe, self.d_model = num_classes, top_k, probe, d_model
        self.box_refine, self.two_stage = box_refine, two_stage
        # Registration order = the original's (it decides which copy a loaded state_dict leaves in a
        # module listed twice).
        self.transformer = DeformableTransformer(d_model, heads, enc_layers, dec_layers, ffn_dim, enc_points,
                                                 dec_points, self.spatial_shapes, two_stage, queries)
        num_pred = dec_layers + 1 if two_stage else dec_layers
        if box_refine:
            self.class_embed = nn.ModuleList([nn.Linear(d_model, num_classes) for _ in range(num_pred)])
            self.bbox_embed = nn.ModuleList([MLP(d_model, d_model, 4, 3) for _ in range(num_pred)])
        else:
            class_embed = nn.Linear(d_model, num_classes)
            bbox_embed = MLP(d_model, d_model, 4, 3)
            self.class_embed = nn.ModuleList([class_embed for _ in range(dec_layers)])
            self.bbox_embed = nn.ModuleList([bbox_embed for _ in range(dec_layers)])
        if not two_stage:
            self.query_embed = nn.Embedding(queries, 2 * d_model)
        self.input_proj = nn.ModuleList(
            [nn.Sequential(nn.Conv2d(c, d_model, 1), nn.GroupNorm(32, d_model)) for c in (512, 1024, 2048)]
            + [nn.Sequential(nn.Conv2d(2048, d_model, 3, 2, 1), nn.GroupNorm(32, d_model))])
        self.backbone = nn.Sequential(DDETRBackbone(), PositionEmbeddingSine(d_model // 2))
        if box_refine:
            self.transformer.decoder.bbox_embed = self.bbox_embed
        if two_stage:
            self.transformer.decoder.class_embed = self.class_embed
        self.eval()

    def forward(self, images, image_mask=None):
        n, _, h, w = images.shape
        if (h, w) != self.img_size:
            raise ValueError("images are %dx%d, the module was built for %dx%d" % ((h, w) + self.img_size))
        dtype = images.dtype
        mask = None if image_mask is None else image_mask != 0
        feats = self.backbone[0](images)
        srcs = [proj(f) for proj, f in zip(self.input_proj, feats)]
        srcs.append(self.input_proj[3](feats[-1]))
        masks, pos = [], []
        for src in srcs:
            hl, wl = src.shape[-2:]
            if mask is None:
                m = torch.zeros(n, hl, wl, dtype=torch.bool)
            else:
                m = F.interpolate(mask[None].float(), size=(hl, wl)).to(torch.bool)[0]
            masks.append(m)
            pos.append(self.backbone[1](m, dtype))
        if [tuple(s.shape[-2:]) for s in srcs] != self.spatial_shapes:
            raise AssertionError("level shapes %s != %s" % ([tuple(s.shape[-2:]) for s in srcs], self.spatial_shapes))
        src_flatten = torch.cat([s.flatten(2).transpose(1, 2) for s in srcs], 1)
        pos_flatten = torch.cat([p.flatten(2).transpose(1, 2) for p in pos], 1)
        mask_flatten = None if mask is None else torch.cat([m.flatten(1) for m in masks], 1)
        hs, init_reference, inter_references, memory = self.transformer(
            src_flatten, pos_flatten, mask_flatten, None if self.two_stage else self.query_embed.weight)
        reference = inter_references[-2] if (self.box_refine and hs.shape[0] > 1) else init_reference
        last = hs.shape[0] - 1  # the last decoder layer's heads (two-stage: index dec_layers is the encoder's)
        hs = hs[-1]
        logits = self.class_embed[last](hs)
        tmp = self.bbox_embed[last](hs)
        if reference.shape[-1] == 4:
            tmp = tmp + inverse_sigmoid(reference)
        else:
            tmp = torch.cat([tmp[..., :2] + inverse_sigmoid(reference), tmp[..., 2:]], -1)
        boxes = tmp.sigmoid()
        if mask is None:
            sizes = torch.tensor([list(self.img_size)] * n, dtype=dtype)
        else:
            sizes = torch.stack([(~mask[:, :, 0]).sum(1), (~mask[:, 0, :]).sum(1)], 1).to(dtype)
        scores, labels, pboxes = ddetr_postprocess(logits, boxes, sizes, self.top_k)
        out = {"pred_logits": logits, "pred_boxes": boxes, "scores": scores, "labels": labels, "boxes": pboxes}
        if self.probe:
            out.update({"stages.c3": feats[0], "stages.c5": feats[2], "stages.src": src_flatten,
                        "stages.memory": memory, "stages.hs": hs})
        return out
