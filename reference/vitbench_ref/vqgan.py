"""VQGAN's first stage (taming-transformers, ImageNet f16 config: docs/reference-notes.md, VQGAN),
written from the spec with the original's state_dict names: Normalize (GroupNorm, 32 groups, eps
1e-6) and swish, the pre-activation ResnetBlock, the one-head AttnBlock, the one-sided-padding
Downsample, the nearest Upsample, Encoder, Decoder, VectorQuantizer2 and VQModel.

Op kinds: group_norm, vq_resnet_block, vq_attn_block, vq_downsample, vq_upsample, vector_quantize
(components) and vq_encoder, vq_decoder, vqgan (networks)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

COMPONENTS = ("group_norm", "vq_resnet_block", "vq_attn_block", "vq_downsample", "vq_upsample", "vector_quantize")
NETWORKS = ("vq_encoder", "vq_decoder", "vqgan")
OPS = COMPONENTS + NETWORKS
GROUPS = 32
EPS = 1e-6
# The ddconfig keys every network case names, then the codebook's (vqgan only) and the size it runs at.
DDCONFIG = ("resolution", "in_channels", "out_ch", "ch", "ch_mult", "num_res_blocks", "attn_resolutions", "z_channels")


def swish(x):
    """taming's nonlinearity, x * sigmoid(x)."""
    return x * torch.sigmoid(x)


class GroupNormAct(nn.GroupNorm):
    """nn.GroupNorm, followed by swish when ``act``."""

    def __init__(self, groups, chans, eps=EPS, act=False):
        super().__init__(groups, chans, eps=eps, affine=True)
        self.act = act

    def forward(self, x):
        y = super().forward(x)
        return swish(y) if self.act else y


def normalize(c):
    return nn.GroupNorm(GROUPS, c, eps=EPS, affine=True)


class ResnetBlock(nn.Module):
    """h = conv2(swish(norm2(conv1(swish(norm1(x)))))); out = shortcut(x) + h, the shortcut a 1x1
    conv (nin_shortcut) when the channel count changes."""

    def __init__(self, cin, cout):
        super().__init__()
        self.norm1 = normalize(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, 1, 1)
        self.norm2 = normalize(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1)
        if cin != cout:
            self.nin_shortcut = nn.Conv2d(cin, cout, 1)
        self.changes = cin != cout

    def forward(self, x):
        h = self.conv1(swish(self.norm1(x)))
        h = self.conv2(swish(self.norm2(h)))
        return (self.nin_shortcut(x) if self.changes else x) + h


class AttnBlock(nn.Module):
    """One attention head over all C channels: q, k, v and proj_out are 1x1 convs, weights
    softmax_j(q_i . k_j * C^-0.5) over the flattened positions, out = x + proj_out(sum_j w_ij v_j)."""

    def __init__(self, c):
        super().__init__()
        self.norm = normalize(c)
        self.q = nn.Conv2d(c, c, 1)
        self.k = nn.Conv2d(c, c, 1)
        self.v = nn.Conv2d(c, c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        h = self.norm(x)
        b, c, hh, ww = h.shape
        q = self.q(h).reshape(b, c, hh * ww).transpose(1, 2)  # [B, N, C]
        k = self.k(h).reshape(b, c, hh * ww)  # [B, C, N]
        v = self.v(h).reshape(b, c, hh * ww)
        w = torch.softmax(torch.bmm(q, k) * (int(c) ** -0.5), dim=2)  # [B, N (queries), N (keys)]
        out = torch.bmm(v, w.transpose(1, 2)).reshape(b, c, hh, ww)
        return x + self.proj_out(out)


class Downsample(nn.Module):
    """Zero padding on the right and bottom only, then a 3x3 stride-2 conv without padding."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, 2, 0)

    def forward(self, x):
        return self.conv(F.pad(x, (0, 1, 0, 1)))


class Upsample(nn.Module):
    """Nearest x2, then a 3x3 conv."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, 1, 1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2.0, mode="nearest"))


class _Mid(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block_1 = ResnetBlock(c, c)
        self.attn_1 = AttnBlock(c)
        self.block_2 = ResnetBlock(c, c)

    def forward(self, x):
        return self.block_2(self.attn_1(self.block_1(x)))


class Encoder(nn.Module):
    """conv_in; per level num_res_blocks ResnetBlocks (each followed by an AttnBlock where the
    construction-time resolution is in attn_resolutions), a Downsample but after the last level;
    mid; norm_out, swish, conv_out to z_channels (double_z false)."""

    def __init__(self, p):
        super().__init__()
        ch, mult = p["ch"], p["ch_mult"]
        self.conv_in = nn.Conv2d(p["in_channels"], ch, 3, 1, 1)
        self.down = nn.ModuleList()
        res, cin = p["resolution"], ch
        for i, m in enumerate(mult):
            level = nn.Module()
            level.block, level.attn = nn.ModuleList(), nn.ModuleList()
            for _ in range(p["num_res_blocks"]):
                level.block.append(ResnetBlock(cin, ch * m))
                cin = ch * m
                if res in p["attn_resolutions"]:
                    level.attn.append(AttnBlock(cin))
            if i + 1 < len(mult):
                level.downsample = Downsample(cin)
                res //= 2
            self.down.append(level)
        self.mid = _Mid(cin)
        self.norm_out = normalize(cin)
        self.conv_out = nn.Conv2d(cin, p["z_channels"], 3, 1, 1)

    def forward(self, x):
        h = self.conv_in(x)
        for i, level in enumerate(self.down):
            for j, blk in enumerate(level.block):
                h = blk(h)
                if len(level.attn):
                    h = level.attn[j](h)
            if i + 1 < len(self.down):
                h = level.downsample(h)
        h = self.mid(h)
        return self.conv_out(swish(self.norm_out(h)))


class Decoder(nn.Module):
    """conv_in from z_channels; mid; levels from the last to the first, each num_res_blocks + 1
    ResnetBlocks (AttnBlocks where the resolution is in attn_resolutions) and an Upsample but at
    level 0 (the module list kept in level order); norm_out, swish, conv_out (no tanh)."""

    def __init__(self, p):
        super().__init__()
        ch, mult = p["ch"], p["ch_mult"]
        cin = ch * mult[-1]
        res = p["resolution"] // 2 ** (len(mult) - 1)
        self.conv_in = nn.Conv2d(p["z_channels"], cin, 3, 1, 1)
        self.mid = _Mid(cin)
        levels = [None] * len(mult)
        for i in reversed(range(len(mult))):
            level = nn.Module()
            level.block, level.attn = nn.ModuleList(), nn.ModuleList()
            for _ in range(p["num_res_blocks"] + 1):
                level.block.append(ResnetBlock(cin, ch * mult[i]))
                cin = ch * mult[i]
                if res in p["attn_resolutions"]:
                    level.attn.append(AttnBlock(cin))
            if i > 0:
                level.upsample = Upsample(cin)
                res *= 2
            levels[i] = level
        self.up = nn.ModuleList(levels)
        self.norm_out = normalize(cin)
        self.conv_out = nn.Conv2d(cin, p["out_ch"], 3, 1, 1)

    def forward(self, z):
        h = self.mid(self.conv_in(z))
        for i in reversed(range(len(self.up))):
            level = self.up[i]
            for j, blk in enumerate(level.block):
                h = blk(h)
                if len(level.attn):
                    h = level.attn[j](h)
            if i > 0:
                h = level.upsample(h)
        return self.conv_out(swish(self.norm_out(h)))


def quantize(z, codebook):
    """VectorQuantizer2's forward value on z [B, C, H, W] (float32): the expanded distances
    (sum z^2 + sum e^2) - 2 z.e, the first minimum (torch.argmin), the straight-through
    z + (e - z).  Returns (quant [B, C, H, W], indices [B, H, W] as float32)."""
    b, c, h, w = z.shape
    zf = z.permute(0, 2, 3, 1).reshape(-1, c)
    d = torch.sum(zf ** 2, dim=1, keepdim=True) + torch.sum(codebook ** 2, dim=1) - 2 * (zf @ codebook.t())
    idx = torch.argmin(d, dim=1)
    zq = F.embedding(idx, codebook).view(b, h, w, c)
    zn = z.permute(0, 2, 3, 1)
    zq = zn + (zq - zn)
    return zq.permute(0, 3, 1, 2).contiguous(), idx.view(b, h, w).to(torch.float32)


class VectorQuantizer(nn.Module):
    """VectorQuantizer2 (legacy or not: only gradients differ); returns {"quant", "indices"}."""

    def __init__(self, codes, chans):
        super().__init__()
        self.embedding = nn.Embedding(codes, chans)

    def forward(self, z):
        q, idx = quantize(z, self.embedding.weight)
        return {"quant": q, "indices": idx}


class VQEncoder(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.encoder = Encoder(p)

    def forward(self, x):
        return self.encoder(x)


class VQDecoder(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.decoder = Decoder(p)

    def forward(self, z):
        return self.decoder(z)


class VQModel(nn.Module):
    """encoder -> quant_conv -> quantize -> post_quant_conv -> decoder; returns the reconstruction
    ``dec`` and the codebook ``indices`` [B, h, w]."""

    def __init__(self, p):
        super().__init__()
        self.encoder = Encoder(p)
        self.decoder = Decoder(p)
        self.quantize = VectorQuantizer(p["n_embed"], p["embed_dim"])
        self.quant_conv = nn.Conv2d(p["z_channels"], p["embed_dim"], 1)
        self.post_quant_conv = nn.Conv2d(p["embed_dim"], p["z_channels"], 1)

    def forward(self, x):
        q = self.quantize(self.quant_conv(self.encoder(x)))
        return {"dec": self.decoder(self.post_quant_conv(q["quant"])), "indices": q["indices"]}


def build(op, p):
    if op == "group_norm":
        return GroupNormAct(p["groups"], p["chans"], p["eps"], p["swish"])
    if op == "vq_resnet_block":
        return ResnetBlock(p["in_chans"], p["out_chans"])
    if op == "vq_attn_block":
        return AttnBlock(p["chans"])
    if op == "vq_downsample":
        return Downsample(p["chans"])
    if op == "vq_upsample":
        return Upsample(p["chans"])
    if op == "vector_quantize":
        return VectorQuantizer(p["codes"], p["chans"])
    return {"vq_encoder": VQEncoder, "vq_decoder": VQDecoder, "vqgan": VQModel}[op](p)


def down_size(n):
    """A Downsample's output size: floor((n + 1 - 3) / 2) + 1."""
    return (n - 2) // 2 + 1


def latent(p, h, w):
    for _ in range(len(p["ch_mult"]) - 1):
        if h < 2 or w < 2:
            raise ValueError("img_size too small for %d downsamplings" % (len(p["ch_mult"]) - 1))
        h, w = down_size(h), down_size(w)
    return h, w


def check(op, p):
    """Raise ValueError for params the original cannot build (GroupNorm's 32 groups)."""
    if op == "group_norm":
        if p["chans"] % p["groups"]:
            raise ValueError("group_norm: chans %d is not a multiple of groups %d" % (p["chans"], p["groups"]))
        return
    if op == "vector_quantize":
        if p["codes"] > 2 ** 24:
            raise ValueError("vector_quantize: codes above 2^24 are not exact in float32")
        return
    if op in COMPONENTS:
        for k in ("chans", "in_chans", "out_chans"):
            if k in p and p[k] % GROUPS:
                raise ValueError("%s: %s %d is not a multiple of GroupNorm's %d groups" % (op, k, p[k], GROUPS))
        if op == "vq_downsample" and min(p["img_size"]) < 2:
            raise ValueError("vq_downsample: img_size below 2")
        return
    for m in p["ch_mult"]:
        if (p["ch"] * m) % GROUPS:
            raise ValueError("%s: ch * ch_mult %d is not a multiple of %d" % (op, p["ch"] * m, GROUPS))
    if op == "vq_decoder":
        if p["z_size"][0] < 1:
            raise ValueError("vq_decoder: no latent")
    else:
        latent(p, *p["img_size"])


def shapes(op, p, b):
    """(inputs, weights, outputs): the weights are the module's state_dict shapes."""
    m = build(op, p)
    weights = {k: list(v.shape) for k, v in m.state_dict().items()}
    h, w = p["img_size"] if op != "vq_decoder" else p["z_size"]
    if op == "vector_quantize":
        return {"z": [b, p["chans"], h, w]}, weights, {"quant": [b, p["chans"], h, w], "indices": [b, h, w]}
    if op in COMPONENTS:
        cin = p.get("chans", p.get("in_chans"))
        cout = p.get("chans", p.get("out_chans"))
        if op == "vq_downsample":
            h2, w2 = down_size(h), down_size(w)
        elif op == "vq_upsample":
            h2, w2 = 2 * h, 2 * w
        else:
            h2, w2 = h, w
        return {"x": [b, cin, h, w]}, weights, {"out": [b, cout, h2, w2]}
    up = 2 ** (len(p["ch_mult"]) - 1)
    if op == "vq_decoder":
        return {"z": [b, p["z_channels"], h, w]}, weights, {"out": [b, p["out_ch"], h * up, w * up]}
    zh, zw = latent(p, h, w)
    if op == "vq_encoder":
        return {"x": [b, p["in_channels"], h, w]}, weights, {"out": [b, p["z_channels"], zh, zw]}
    return ({"x": [b, p["in_channels"], h, w]}, weights,
            {"dec": [b, p["out_ch"], zh * up, zw * up], "indices": [b, zh, zw]})


def tie_band(z, codebook):
    """Per position of z [B, C, H, W], the rounding bound of the float32 expanded distance:
    tau = 2 * (C + 2) * 2^-24 * (|z| + max_j |e_j|)^2 (a forward error bound of the dot product and
    the two sums of squares, twice: either of two codes may come out smaller).  Returns
    (d [N, codes] in float64, tau [N]) with N = B*H*W in raster order."""
    z = np.asarray(z, dtype=np.float64)
    e = np.asarray(codebook, dtype=np.float64)
    c = z.shape[1]
    zf = z.transpose(0, 2, 3, 1).reshape(-1, c)
    # (z - e)^2 expanded in float64: its own rounding (about 1e-16 relative) is far below tau.
    d = (zf ** 2).sum(1)[:, None] + (e ** 2).sum(1)[None, :] - 2 * zf @ e.T
    tau = 2 * (c + 2) * 2.0 ** -24 * (np.linalg.norm(zf, axis=1) + np.linalg.norm(e, axis=1).max()) ** 2
    return d, tau


def independent_reference(op, inputs, weights, p):
    """The same module run in float64 (not independent code, as for clip_resnet: it bounds the
    float32 rounding of the stored outputs); the quantizer's indices are then the float64 argmin,
    which may differ from the float32 one only inside a near-tie band (tests/test_vqgan.py checks
    that it does not for the committed network fixtures)."""
    if op == "vector_quantize":
        return quantize_float64(inputs["z"], weights["embedding.weight"])
    m = build(op, p).double().eval()
    m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    with torch.no_grad():
        out = m(*[torch.from_numpy(v.astype(np.float64)) for v in inputs.values()])
    if not isinstance(out, dict):
        out = {"out": out}
    return {k: v.numpy() for k, v in out.items()}


def quantize_float64(z, codebook):
    """vector_quantize recomputed with the direct distances sum (z - e)^2 in float64: the argmin,
    except at a near-tie (:func:`tie_band`), where the float32 expanded form's choice is kept when its
    float64 distance is within the band of the minimum; quant is that code's straight-through value."""
    d, tau = tie_band(z, codebook)
    idx = d.argmin(axis=1)
    _, idx32 = quantize(torch.from_numpy(np.asarray(z, dtype=np.float32)), torch.from_numpy(codebook))
    idx32 = idx32.numpy().reshape(-1).astype(np.int64)
    rows = np.arange(len(idx))
    near = d[rows, idx32] - d[rows, idx] <= tau
    idx = np.where(near, idx32, idx)
    b, c, h, w = z.shape
    # The forward value z + (e - z) in float32 (two correctly rounded operations, the same in any
    # correct implementation): not the row itself, which differs from it by up to half an ulp of z.
    e = np.asarray(codebook, dtype=np.float32)[idx].reshape(b, h, w, c).transpose(0, 3, 1, 2)
    z32 = np.asarray(z, dtype=np.float32)
    quant = (z32 + (e - z32)).astype(np.float64)
    return {"quant": quant, "indices": idx.reshape(b, h, w).astype(np.float64)}


def near_ties(z, codebook):
    """The positions (flat, raster order) whose second-nearest code lies within the rounding band
    of the nearest (:func:`tie_band`), exact ties included."""
    d, tau = tie_band(z, codebook)
    s = np.sort(d, axis=1)
    return np.nonzero(s[:, 1] - s[:, 0] <= tau)[0]
