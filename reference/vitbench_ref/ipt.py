"""IPT reference modules (huawei-noah/Pretrained-IPT, model/ipt.py and model/common.py, eval mode; see
../../docs/reference-notes.md, "IPT"), written from the semantics, with the original's state_dict names.

Op kinds: ``ipt`` (:class:`IPT`: MeanShift, head, the VisionTransformer body, tail, on one tile of
``patch_size`` pixels; the task index picks the head, the query row and the tail), ``ipt_chop``
(:class:`IPTChop`: the original's tiled test-time evaluation, ``Model.forward_chop``), and the
components ``mean_shift``, ``ipt_head``, ``ipt_tail``, ``ipt_encoder_layer`` and ``ipt_decoder_layer``.
The body is sequence-first inside, as the original; every op kind's inputs and outputs are batch-first.
"""

import math

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

OPS = ("ipt", "ipt_chop", "mean_shift", "ipt_head", "ipt_tail", "ipt_encoder_layer", "ipt_decoder_layer")

RGB_MEAN = (0.4488, 0.4371, 0.4040)
DEFAULTS = {"n_feats": 64, "patch_size": 48, "patch_dim": 3, "num_heads": 12, "num_layers": 12, "num_queries": 1,
            "scale": [4], "task": 0}  # option.py's


class MeanShift(nn.Conv2d):
    """The frozen 1x1 conv over RGB: identity weight, bias sign * rgb_range * mean (std 1)."""

    def __init__(self, rgb_range=255, sign=-1):
        super().__init__(3, 3, 1)
        with torch.no_grad():
            self.weight.copy_(torch.eye(3).view(3, 3, 1, 1))
            self.bias.copy_(sign * rgb_range * torch.tensor(RGB_MEAN))
        for q in self.parameters():
            q.requires_grad = False


def conv(cin, cout, k):
    """The original's default_conv: k x k, padding k // 2, bias."""
    return nn.Conv2d(cin, cout, k, padding=k // 2)


class ResBlock(nn.Module):
    """x + conv(relu(conv(x))) with 5x5 convs (``body.0``, ``body.2``), res_scale 1, no BatchNorm."""

    def __init__(self, f):
        super().__init__()
        self.body = nn.Sequential(conv(f, f, 5), nn.ReLU(), conv(f, f, 5))

    def forward(self, x):
        return self.body(x) + x


def head(f):
    """One head: 3x3 conv from RGB, two ResBlocks."""
    return nn.Sequential(conv(3, f, 3), ResBlock(f), ResBlock(f))


def upsampler(scale, f):
    """log2(scale) x (conv to 4f, PixelShuffle(2)) for a power of two, (conv to 9f, PixelShuffle(3))
    for 3; empty for 1 (2^0)."""
    m = []
    if scale & (scale - 1) == 0:
        for _ in range(int(round(math.log2(scale)))):
            m += [conv(f, 4 * f, 3), nn.PixelShuffle(2)]
    elif scale == 3:
        m += [conv(f, 9 * f, 3), nn.PixelShuffle(3)]
    else:
        raise ValueError("Upsampler: scale %d" % scale)
    return nn.Sequential(*m)


def tail(scale, f):
    """One tail: the Upsampler, then a 3x3 conv to RGB."""
    return nn.Sequential(upsampler(scale, f), conv(f, 3, 3))


class EncoderLayer(nn.Module):
    """Pre-norm: ``x = x + attn(q = k = v = norm1(x))``; ``x = x + linear2(relu(linear1(norm2(x))))``;
    nn.MultiheadAttention without any bias; sequence-first [S, B, D]."""

    def __init__(self, d, heads, hidden):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, bias=False)
        self.linear1 = nn.Linear(d, hidden)
        self.linear2 = nn.Linear(hidden, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        return x + self.linear2(F.relu(self.linear1(self.norm2(x))))


class DecoderLayer(nn.Module):
    """Pre-norm: ``t = t + self_attn(q = k = norm1(t) + query, v = norm1(t))``;
    ``t = t + multihead_attn(q = norm2(t) + query, k = v = memory)`` (memory as it comes, not
    normalized); ``t = t + linear2(relu(linear1(norm3(t))))``."""

    def __init__(self, d, heads, hidden):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads, bias=False)
        self.multihead_attn = nn.MultiheadAttention(d, heads, bias=False)
        self.linear1 = nn.Linear(d, hidden)
        self.linear2 = nn.Linear(hidden, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.norm3 = nn.LayerNorm(d)

    def forward(self, t, memory, query):
        h = self.norm1(t)
        q = h + query
        t = t + self.self_attn(q, q, h, need_weights=False)[0]
        t = t + self.multihead_attn(self.norm2(t) + query, memory, memory, need_weights=False)[0]
        return t + self.linear2(F.relu(self.linear1(self.norm3(t))))


class Layers(nn.Module):
    """The ``layers`` ModuleList under ``encoder`` / ``decoder``."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)


class PositionEncoding(nn.Module):
    """LearnedPositionalEncoding: ``pe`` (nn.Embedding(S, D)) looked up at 0..S-1; the original's
    position_ids buffer is kept out of the state_dict (an integer arange, not a fixture array)."""

    def __init__(self, s, d):
        super().__init__()
        self.pe = nn.Embedding(s, d)
        self.register_buffer("position_ids", torch.arange(s)[None], persistent=False)

    def forward(self):
        return self.pe(self.position_ids)


class Body(nn.Module):
    """The VisionTransformer: unfold into patch_dim^2 patches (channel-major vectors, patches row-major),
    ``x = linear_encoding(x) + x``, ``memory = encoder(x + pos)``, ``y = decoder(memory, memory,
    query = query_embed.weight[task] as [S, 1, D])``, ``y = mlp_head(y) + y``, fold back."""

    def __init__(self, p):
        super().__init__()
        f, pd, size = p["n_feats"], p["patch_dim"], p["patch_size"]
        d = f * pd * pd
        self.pd, self.size, self.d, self.s = pd, size, d, (size // pd) ** 2
        self.linear_encoding = nn.Linear(d, d)
        self.mlp_head = nn.Sequential(nn.Linear(d, 4 * d), nn.Dropout(0), nn.ReLU(), nn.Linear(4 * d, d), nn.Dropout(0))
        self.query_embed = nn.Embedding(p["num_queries"], d * self.s)
        self.encoder = Layers([EncoderLayer(d, p["num_heads"], 4 * d) for _ in range(p["num_layers"])])
        self.decoder = Layers([DecoderLayer(d, p["num_heads"], 4 * d) for _ in range(p["num_layers"])])
        self.position_encoding = PositionEncoding(self.s, d)

    def forward(self, f, task):
        x = F.unfold(f, self.pd, stride=self.pd).transpose(1, 2).transpose(0, 1)
        x = self.linear_encoding(x) + x
        query = self.query_embed.weight[task].view(-1, 1, self.d)
        x = x + self.position_encoding().transpose(0, 1)
        for layer in self.encoder.layers:
            x = layer(x)
        y = x
        for layer in self.decoder.layers:
            y = layer(y, x, query)
        y = self.mlp_head(y) + y
        y = y.transpose(0, 1).transpose(1, 2)
        return F.fold(y, self.size, self.pd, stride=self.pd)


class IPT(nn.Module):
    """The whole model on tiles of patch_size pixels: ``add_mean(tail(body(head(sub_mean(x))) + head(...)))``
    for the task's head, query row and tail."""

    def __init__(self, p):
        super().__init__()
        f = p["n_feats"]
        self.task = p["task"]
        self.sub_mean = MeanShift(sign=-1)
        self.add_mean = MeanShift(sign=1)
        self.head = nn.ModuleList([head(f) for _ in p["scale"]])
        self.body = Body(p)
        self.tail = nn.ModuleList([tail(s, f) for s in p["scale"]])

    def forward(self, x):
        x = self.head[self.task](self.sub_mean(x))
        return self.add_mean(self.tail[self.task](self.body(x, self.task) + x))


class IPTChop(IPT):
    """``Model.forward_chop`` of the original (model/__init__.py), restated: the model runs on
    patch x patch tiles every patch/4 pixels, and the outputs are stitched as the original does with
    its folds, crops, assignments and concatenations: the main grid's central crops averaged, top and
    left strips (their own runs), bottom and right strips anchored at the last full tile, one corner
    tile.  The original only handles batch 1 (its tile view mixes images); here each image of a batch
    is tiled on its own.  Its crop_batch_size batching does not change the result and is left out."""

    def __init__(self, p):
        super().__init__(p)
        self.patch = p["patch_size"]
        self.scale = p["scale"][p["task"]]

    def run(self, x):
        """The model itself on a batch of tiles."""
        return IPT.forward(self, x)

    def tiles(self, x):
        """Run the model on x's patch x patch windows every patch/4 pixels: [L, 3, Ps, Ps]."""
        P = self.patch
        u = F.unfold(x, P, stride=P // 4)  # [1, 3*P*P, L]
        return self.run(u[0].transpose(0, 1).reshape(-1, 3, P, P))

    def fold(self, y, size, kernel):
        return F.fold(y.reshape(y.shape[0], -1).transpose(0, 1)[None], size, kernel, stride=self.patch // 4 * self.scale)

    def averaged(self, y, size, kernel):
        """fold of the tile crops y over size, divided by the count of crops covering each pixel."""
        ones = torch.ones_like(y)
        return self.fold(y, size, kernel) / self.fold(ones, size, kernel)

    def strip(self, x, hc, wc, rows):
        """cut_h (rows: a strip of patch rows, width wc) or cut_w (a strip of patch columns, height hc):
        the fold of the strip's tile outputs, with the central crops along the strip averaged in
        between its first and last crop margin."""
        s, P = self.scale, self.patch
        c, Ps = P // 4 * s, P * s
        y = self.tiles(x)
        if rows:
            out = self.fold(y, (Ps, wc), Ps)
            out[..., :, c:wc - c] = self.averaged(y[..., :, c:Ps - c], (Ps, wc - 2 * c), (Ps, Ps - 2 * c))
        else:
            out = self.fold(y, (hc, Ps), Ps)
            out[..., c:hc - c, :] = self.averaged(y[..., c:Ps - c, :], (hc - 2 * c, Ps), (Ps - 2 * c, Ps))
        return out

    def chop1(self, x):
        s, P = self.scale, self.patch
        st, c, Ps = P // 4, P // 4 * s, P * s
        h, w = x.shape[-2:]
        hcut, wcut = (h - P) % st, (w - P) % st
        hc, wc = (h - hcut) * s, (w - wcut) * s
        corner = self.run(x[..., h - P:, w - P:])
        bottom = self.strip(x[..., h - P:, :], hc, wc, True)
        right = self.strip(x[..., :, w - P:], hc, wc, False)
        top = self.strip(x[..., :P, :], hc, wc, True)
        left = self.strip(x[..., :, :P], hc, wc, False)
        y_tiles = self.tiles(x)
        y = self.fold(y_tiles, (hc, wc), Ps)
        y[..., :Ps, :] = top
        y[..., :, :Ps] = left
        y[..., c:hc - c, c:wc - c] = self.averaged(y_tiles[..., c:Ps - c, c:Ps - c], (hc - 2 * c, wc - 2 * c), Ps - 2 * c)
        kh, kh2 = int((P - hcut) / 2 * s), int((P - hcut) / 2 * s + 0.5)
        kw, kw2 = int((P - wcut) / 2 * s), int((P - wcut) / 2 * s + 0.5)
        y = torch.cat([y[..., :y.shape[2] - kh, :], bottom[..., kh2:, :]], dim=2)
        side = torch.cat([right[..., :right.shape[2] - kh, :], corner[..., kh2:, :]], dim=2)
        return torch.cat([y[..., :, :y.shape[3] - kw], side[..., :, kw2:]], dim=3)

    def forward(self, x):
        return torch.cat([self.chop1(x[i:i + 1]) for i in range(x.shape[0])], dim=0)


class HeadPart(nn.Sequential):
    """``ipt_head``: one head's Sequential (names ``0.*``, ``1.body.*``, ``2.body.*``)."""

    def __init__(self, p):
        super().__init__(*head(p["n_feats"]))


class TailPart(nn.Sequential):
    """``ipt_tail``: one tail's Sequential (names ``0.<i>.*`` of the Upsampler, ``1.*``)."""

    def __init__(self, p):
        super().__init__(*tail(p["scale"][p["task"]], p["n_feats"]))


class EncoderPart(EncoderLayer):
    """``ipt_encoder_layer`` on batch-first tokens [B, S, D]."""

    def __init__(self, p):
        d = p["n_feats"] * p["patch_dim"] ** 2
        super().__init__(d, p["num_heads"], 4 * d)

    def forward(self, x):
        return super().forward(x.transpose(0, 1)).transpose(0, 1)


class DecoderPart(DecoderLayer):
    """``ipt_decoder_layer`` on batch-first tgt and memory [B, S, D], with the task query as the
    weight ``query_pos`` [S, D]."""

    def __init__(self, p):
        d = p["n_feats"] * p["patch_dim"] ** 2
        super().__init__(d, p["num_heads"], 4 * d)
        self.query_pos = nn.Parameter(torch.zeros((p["patch_size"] // p["patch_dim"]) ** 2, d))

    def forward(self, tgt, memory):
        return super().forward(tgt.transpose(0, 1), memory.transpose(0, 1), self.query_pos[:, None]).transpose(0, 1)


def resolve(op, p):
    """The params with option.py's defaults filled in (img_size stays as given)."""
    out = dict(DEFAULTS)
    out.update({k: v for k, v in p.items() if v is not None})
    return out


def check(op, p):
    """Raise ValueError for params the original cannot build."""
    q = resolve(op, p)
    d = q["n_feats"] * q["patch_dim"] ** 2
    if q["patch_size"] % q["patch_dim"]:
        raise ValueError("%s: patch_size %d is not a multiple of patch_dim %d" % (op, q["patch_size"], q["patch_dim"]))
    if d % q["num_heads"]:
        raise ValueError("%s: the embedding %d is not a multiple of num_heads %d" % (op, d, q["num_heads"]))
    for s in q["scale"]:
        if s not in (1, 2, 3, 4, 8):
            raise ValueError("%s: scale %d: the Upsampler takes 1, 2, 3, 4 or 8" % (op, s))
    if not 0 <= q["task"] < min(len(q["scale"]), q["num_queries"]):
        raise ValueError("%s: task %d must index scale and the query rows" % (op, q["task"]))
    if op == "ipt_chop":
        h, w = q["img_size"]
        if h < q["patch_size"] or w < q["patch_size"] or q["patch_size"] % 4:
            raise ValueError("ipt_chop: img_size at least the tile, patch_size a multiple of 4")


def _conv(name, cout, cin, k):
    return {name + ".weight": [cout, cin, k, k], name + ".bias": [cout]}


def head_weights(pre, f):
    w = _conv(pre + "0", f, 3, 3)
    for r in (1, 2):
        for j in (0, 2):
            w.update(_conv("%s%d.body.%d" % (pre, r, j), f, f, 5))
    return w


def tail_weights(pre, s, f):
    w = {}
    if s == 3:
        w.update(_conv(pre + "0.0", 9 * f, f, 3))
    elif s > 1:
        for i in range(int(round(math.log2(s)))):
            w.update(_conv("%s0.%d" % (pre, 2 * i), 4 * f, f, 3))
    w.update(_conv(pre + "1", 3, f, 3))
    return w


def _lin(name, o, i):
    return {name + ".weight": [o, i], name + ".bias": [o]}


def encoder_weights(pre, d):
    w = {pre + "self_attn.in_proj_weight": [3 * d, d], pre + "self_attn.out_proj.weight": [d, d]}
    w.update(_lin(pre + "linear1", 4 * d, d))
    w.update(_lin(pre + "linear2", d, 4 * d))
    for n in ("norm1", "norm2"):
        w.update({pre + n + ".weight": [d], pre + n + ".bias": [d]})
    return w


def decoder_weights(pre, d):
    w = {}
    for a in ("self_attn.", "multihead_attn."):
        w.update({pre + a + "in_proj_weight": [3 * d, d], pre + a + "out_proj.weight": [d, d]})
    w.update(_lin(pre + "linear1", 4 * d, d))
    w.update(_lin(pre + "linear2", d, 4 * d))
    for n in ("norm1", "norm2", "norm3"):
        w.update({pre + n + ".weight": [d], pre + n + ".bias": [d]})
    return w


def model_weights(q):
    f, d, s = q["n_feats"], q["n_feats"] * q["patch_dim"] ** 2, (q["patch_size"] // q["patch_dim"]) ** 2
    w = {"sub_mean.weight": [3, 3, 1, 1], "sub_mean.bias": [3], "add_mean.weight": [3, 3, 1, 1], "add_mean.bias": [3]}
    for i in range(len(q["scale"])):
        w.update(head_weights("head.%d." % i, f))
    w.update(_lin("body.linear_encoding", d, d))
    w.update(_lin("body.mlp_head.0", 4 * d, d))
    w.update(_lin("body.mlp_head.3", d, 4 * d))
    w["body.query_embed.weight"] = [q["num_queries"], s * d]
    for i in range(q["num_layers"]):
        w.update(encoder_weights("body.encoder.layers.%d." % i, d))
    for i in range(q["num_layers"]):
        w.update(decoder_weights("body.decoder.layers.%d." % i, d))
    w["body.position_encoding.pe.weight"] = [s, d]
    for i, sc in enumerate(q["scale"]):
        w.update(tail_weights("tail.%d." % i, sc, f))
    return w


def shapes(op, p, b):
    """``(inputs, weights, outputs)`` of each op kind (see fixtures/FORMAT.md)."""
    q = resolve(op, p)
    f, pp = q["n_feats"], q["patch_size"]
    d, s = f * q["patch_dim"] ** 2, (pp // q["patch_dim"]) ** 2
    sc = q["scale"][q["task"]]
    h, w = q.get("img_size") or (pp, pp)
    if op == "ipt":
        return {"x": [b, 3, pp, pp]}, model_weights(q), {"out": [b, 3, pp * sc, pp * sc]}
    if op == "ipt_chop":
        return {"x": [b, 3, h, w]}, model_weights(q), {"out": [b, 3, h * sc, w * sc]}
    if op == "mean_shift":
        return {"x": [b, 3, h, w]}, {"weight": [3, 3, 1, 1], "bias": [3]}, {"out": [b, 3, h, w]}
    if op == "ipt_head":
        return {"x": [b, 3, h, w]}, head_weights("", f), {"out": [b, f, h, w]}
    if op == "ipt_tail":
        return {"x": [b, f, h, w]}, tail_weights("", sc, f), {"out": [b, 3, h * sc, w * sc]}
    if op == "ipt_encoder_layer":
        return {"x": [b, s, d]}, encoder_weights("", d), {"out": [b, s, d]}
    wts = decoder_weights("", d)
    wts["query_pos"] = [s, d]
    return {"tgt": [b, s, d], "memory": [b, s, d]}, wts, {"out": [b, s, d]}


def build(op, p):
    q = resolve(op, p)
    if op == "mean_shift":
        return MeanShift()
    return {"ipt": IPT, "ipt_chop": IPTChop, "ipt_head": HeadPart, "ipt_tail": TailPart,
            "ipt_encoder_layer": EncoderPart, "ipt_decoder_layer": DecoderPart}[op](q)


def _conv_macs(b, cin, cout, h, w, k):
    return b * cout * h * w * cin * k * k


def model_macs(q, b):
    """As vitbench counts them: convs, Linears (each attention input through the in_proj rows it needs,
    as PyTorch's multi_head_attention_forward computes) and the attention products QK^T and PV."""
    f, pp = q["n_feats"], q["patch_size"]
    d, s = f * q["patch_dim"] ** 2, (pp // q["patch_dim"]) ** 2
    sc = q["scale"][q["task"]]
    head = _conv_macs(b, 3, f, pp, pp, 3) + 4 * _conv_macs(b, f, f, pp, pp, 5)
    tl, hh = 0, pp
    if sc == 3:
        tl, hh = _conv_macs(b, f, 9 * f, pp, pp, 3), 3 * pp
    elif sc > 1:
        for _ in range(int(round(math.log2(sc)))):
            tl += _conv_macs(b, f, 4 * f, hh, hh, 3)
            hh *= 2
    tl += _conv_macs(b, f, 3, hh, hh, 3)
    attn = 2 * b * s * s * d
    enc = b * s * d * 3 * d + attn + b * s * d * d + 8 * b * s * d * d
    dec = 2 * (b * s * d * 3 * d + attn + b * s * d * d) + 8 * b * s * d * d
    return head + tl + b * s * d * d + q["num_layers"] * (enc + dec) + 8 * b * s * d * d


def chop_tiles(q):
    """Distinct tiles of one image (the main grid, the bottom and right strips, the corner)."""
    st = q["patch_size"] // 4
    nh, nw = (q["img_size"][0] - q["patch_size"]) // st + 1, (q["img_size"][1] - q["patch_size"]) // st + 1
    return nh * nw + nh + nw + 1


def macs(op, p, b):
    q = resolve(op, p)
    if op == "ipt":
        return model_macs(q, b)
    if op == "ipt_chop":
        return model_macs(q, b * chop_tiles(q))
    f = q["n_feats"]
    d, s = f * q["patch_dim"] ** 2, (q["patch_size"] // q["patch_dim"]) ** 2
    if op == "ipt_encoder_layer":
        return b * s * d * 3 * d + 2 * b * s * s * d + b * s * d * d + 8 * b * s * d * d
    if op == "ipt_decoder_layer":
        return 2 * (b * s * d * 3 * d + 2 * b * s * s * d + b * s * d * d) + 8 * b * s * d * d
    h, w = q["img_size"]
    if op == "mean_shift":
        return b * h * w * 9
    if op == "ipt_head":
        return _conv_macs(b, 3, f, h, w, 3) + 4 * _conv_macs(b, f, f, h, w, 5)
    sc, tl = q["scale"][0], 0
    if sc == 3:
        tl, h, w = _conv_macs(b, f, 9 * f, h, w, 3), 3 * h, 3 * w
    elif sc > 1:
        for _ in range(int(round(math.log2(sc)))):
            tl += _conv_macs(b, f, 4 * f, h, w, 3)
            h, w = 2 * h, 2 * w
    return tl + _conv_macs(b, f, 3, h, w, 3)


def independent_reference(op, inputs, weights, p):
    """Not independent code: the same module in float64 (it bounds the float32 rounding of the stored
    output); the parts are checked against plain recomputations in tests/test_ipt.py."""
    m = build(op, p).double().eval()
    m.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    with torch.no_grad():
        out = m(*[torch.from_numpy(v.astype(np.float64)) for v in inputs.values()])
    return {"out": out.numpy()}


_NET = {"n_feats": 64, "patch_size": 48, "patch_dim": 3, "num_heads": 12, "num_layers": 12, "num_queries": 1,
        "scale": [4], "task": 0}
# Each op kind's params and defaults (None: required), as the Go side reads them (fixtures/FORMAT.md).
PARAMS = {
    "ipt": dict(_NET),
    "ipt_chop": dict(_NET, img_size=None),
    "mean_shift": {"img_size": None},
    "ipt_head": {"n_feats": 64, "img_size": None},
    "ipt_tail": {"n_feats": 64, "scale": [4], "img_size": None},
    "ipt_encoder_layer": {"n_feats": 64, "patch_size": 48, "patch_dim": 3, "num_heads": 12},
    "ipt_decoder_layer": {"n_feats": 64, "patch_size": 48, "patch_dim": 3, "num_heads": 12},
}
TOLERANCE = {"ipt": "network", "ipt_chop": "network", "mean_shift": "elementwise", "ipt_head": "gemm",
             "ipt_tail": "gemm", "ipt_encoder_layer": "gemm", "ipt_decoder_layer": "gemm"}
CLASSES = {"ipt": "IPT", "ipt_chop": "IPTChop", "mean_shift": "MeanShift", "ipt_head": "HeadPart",
           "ipt_tail": "TailPart", "ipt_encoder_layer": "EncoderPart", "ipt_decoder_layer": "DecoderPart"}


def _int(op, key, v, low):
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise ValueError("%s: %s must be an integer >= %d, got %r" % (op, key, low, v))
    return v


def normalize(op, params):
    """Validate an IPT case's params (unknown keys, types, what the original can build) and return
    them with every default filled in, pairs as [h, w]."""
    spec = PARAMS[op]
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise ValueError("%s: unknown params %s" % (op, unknown))
    out = {}
    for key, default in spec.items():
        v = params.get(key, default)
        if v is None:
            raise ValueError("%s: missing required param %r" % (op, key))
        if key == "scale":
            if not isinstance(v, list) or not v:
                raise ValueError("%s: scale must be a non-empty list of integers" % op)
            v = [_int(op, key, s, 1) for s in v]
        elif key == "img_size":
            v = [v, v] if not isinstance(v, list) else v
            if len(v) != 2:
                raise ValueError("%s: img_size must be an int or [h, w]" % op)
            v = [_int(op, key, s, 1) for s in v]
        else:
            v = _int(op, key, v, 0 if key == "task" else 1)
        out[key] = v
    check(op, out)
    return out
