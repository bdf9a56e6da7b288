"""T2T-ViT reference modules (docs/reference-notes.md, "T2T-ViT"): the soft split, the token transformer and
performer of the T2T module, ``T2TViT``, and their independent recomputations (``soft_split_loops``,
``token_layer_float64``, ``t2t_float64``)."""

import math

import torch
from torch import nn
import torch.nn.functional as F

from .layers import Block, block_float64, layernorm_float64, pair, run_blocks


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


class TokenTransformer(nn.Module):
    """T2T-ViT's Token_transformer (docs/reference-notes.md, "Transformer layer"), written from the spec: x -> norm1
    (eps 1e-5) -> one-head attention whose qkv (no bias) maps dim -> 3*in_dim, scale dim ** -0.5 (the quirk: the head
    dim is taken from the input dim), output ``v + proj(attn @ v)``; then ``+ mlp(norm2(.))`` with hidden int(in_dim *
    mlp_ratio)."""

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
    """T2T-ViT's Token_performer (docs/reference-notes.md, "Performer layer"), written from the spec: ``kqv``
    Linear(dim, 3*emb) split in the order k, q, v; random features phi(x)_j = exp(w_j.x - |x|^2/2)/sqrt(m) with the
    frozen ``w [m, emb]``; y = v + proj(phi(q) (phi(k)^T v) / (phi(q).sum_t phi(k) + 1e-8)); then ``+ mlp(norm2(y))``
    with mlp = Linear, GELU, Linear (names mlp.0, mlp.2)."""

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
        # The random features are computed in float32 as the original does (x.float()); w.float() and the
        # cast back before proj below are no-ops in float32 and let the bf16-weights baseline run.
        return torch.exp(torch.einsum("bti,mi->btm", x.float(), self.w.float()) - xd) / math.sqrt(self.m)

    def forward(self, x):
        k, q, v = torch.split(self.kqv(self.norm1(x)), self.emb, dim=-1)
        kp, qp = self.features(k), self.features(q)
        d = torch.einsum("btm,bm->bt", qp, kp.sum(dim=1)).unsqueeze(2)
        kptv = torch.einsum("btn,btm->bnm", v.float(), kp)
        y = torch.einsum("btm,bnm->btn", qp, kptv) / (d + 1e-8)
        y = v + self.proj(y.to(self.proj.weight.dtype))
        return y + self.mlp(self.norm2(y))


class T2TModule(nn.Module):
    """T2T-ViT's tokens-to-token stage (docs/reference-notes.md, "T2T module"), written from the spec: Unfold(7, 4, 2),
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
    """T2T-ViT (docs/reference-notes.md, "T2T-ViT backbone and counts"): T2TModule, class token, position table (a
    parameter), pre-norm blocks with qkv_bias False, LayerNorm eps 1e-5 and attention scale ``scale`` (None:
    head_dim^-0.5; the pretrained checkpoints were trained with qk_scale = embed_dim^-0.5), final norm, head on the
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
