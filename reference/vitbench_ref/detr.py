"""DETR reference modules (the original facebookresearch/detr semantics, eval mode; see
../../docs/reference-notes.md) and the independent float64 NumPy recomputation of its transformer.

Op kind ``detr_transformer`` (:class:`DETRTransformer`): the sine position embedding of the padding
mask (normalized, scale 2*pi, **no** -0.5 offset, unlike Deformable DETR) and the original's
``Transformer``: six post-norm encoder and six post-norm decoder layers built on
``nn.MultiheadAttention`` (sequence-first, packed ``in_proj_weight`` / ``in_proj_bias``), positions
added to queries and keys but never to values, the decoder starting from zeros with the learned
queries as its query positions, and every decoder layer's output through the decoder's shared final
LayerNorm (return_intermediate).  ReLU feed-forward, LayerNorm eps 1e-5, dropout absent (eval).
"""

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

from .detector import ResNet50Body, position_embedding_sine, resnet_blocks
from .layers import MLP, box_cxcywh_to_xyxy, layernorm_float64

OPS = ("detr_transformer", "detr")


class EncoderLayer(nn.Module):
    """DETR's post-norm ``TransformerEncoderLayer``: ``x = norm1(x + attn(q = k = x + pos, v = x))``,
    ``x = norm2(x + linear2(relu(linear1(x))))``, on sequence-first ``[S, N, d]``."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads)
        self.linear1 = nn.Linear(d, ffn)
        self.linear2 = nn.Linear(ffn, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x, mask, pos):
        q = x + pos
        x = self.norm1(x + self.self_attn(q, q, value=x, key_padding_mask=mask, need_weights=False)[0])
        return self.norm2(x + self.linear2(F.relu(self.linear1(x))))


class DecoderLayer(nn.Module):
    """DETR's post-norm ``TransformerDecoderLayer``: self-attention (q = k = y + qpos, v = y) then
    norm1; cross-attention (q = y + qpos, k = memory + pos, v = memory, key padding mask) then
    norm2; the feed-forward layer then norm3."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, heads)
        self.multihead_attn = nn.MultiheadAttention(d, heads)
        self.linear1 = nn.Linear(d, ffn)
        self.linear2 = nn.Linear(ffn, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.norm3 = nn.LayerNorm(d)

    def forward(self, y, memory, mask, pos, qpos):
        q = y + qpos
        y = self.norm1(y + self.self_attn(q, q, value=y, need_weights=False)[0])
        y = self.norm2(y + self.multihead_attn(y + qpos, memory + pos, value=memory, key_padding_mask=mask,
                                               need_weights=False)[0])
        return self.norm3(y + self.linear2(F.relu(self.linear1(y))))


class Encoder(nn.Module):
    """The encoder's layers; no final norm (the original has one only with pre_norm)."""

    def __init__(self, d, heads, ffn, n):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ffn) for _ in range(n))

    def forward(self, x, mask, pos):
        for layer in self.layers:
            x = layer(x, mask, pos)
        return x


class Decoder(nn.Module):
    """The decoder's layers and its shared final ``norm``, applied to every layer's output
    (return_intermediate): returns ``[L, Q, N, d]``."""

    def __init__(self, d, heads, ffn, n):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d, heads, ffn) for _ in range(n))
        self.norm = nn.LayerNorm(d)

    def forward(self, y, memory, mask, pos, qpos):
        out = []
        for layer in self.layers:
            y = layer(y, memory, mask, pos, qpos)
            out.append(self.norm(y))
        return torch.stack(out)


class Transformer(nn.Module):
    """DETR's ``Transformer`` on sequence-first inputs: ``forward(src [S, N, d], mask [N, S] bool,
    query_embed [Q, d], pos [S, N, d])`` returns ``(hs [L, N, Q, d], memory [S, N, d])``; the
    decoder's input starts at zero, the queries (repeated over the batch) are its positions."""

    def __init__(self, d=256, heads=8, enc_layers=6, dec_layers=6, ffn=2048):
        super().__init__()
        self.encoder = Encoder(d, heads, ffn, enc_layers)
        self.decoder = Decoder(d, heads, ffn, dec_layers)

    def forward(self, src, mask, query_embed, pos):
        n = src.shape[1]
        qpos = query_embed.unsqueeze(1).repeat(1, n, 1)
        memory = self.encoder(src, mask, pos)
        hs = self.decoder(torch.zeros_like(qpos), memory, mask, pos, qpos)
        return hs.transpose(1, 2), memory


class DETRTransformer(nn.Module):
    """Op kind ``detr_transformer``: the transformer of DETR with the detector's ``query_embed``
    (state_dict names ``transformer.*`` and ``query_embed.weight``, as in the detector) on one
    feature map of ``feature_size`` (H, W).

    ``forward(src [N, H*W, d] (input_proj's output, flattened row-major), padding_mask=None [N, H*W]
    bool, True = padding)``: the sine positions of the mask (DETR's flavour, ``offset=0``; float32
    cumulative sums in float32, the input's dtype in float64), then the transformer.  Returns
    ``memory [N, H*W, d]`` and ``hs [dec_layers, N, Q, d]``."""

    def __init__(self, feature_size, d_model=256, heads=8, enc_layers=6, dec_layers=6, ffn_dim=2048, queries=100):
        super().__init__()
        self.feature_size = tuple(feature_size)
        self.transformer = Transformer(d_model, heads, enc_layers, dec_layers, ffn_dim)
        self.query_embed = nn.Embedding(queries, d_model)
        self.eval()

    def forward(self, src, padding_mask=None):
        n = src.shape[0]
        h, w = self.feature_size
        mask = torch.zeros(n, h * w, dtype=torch.bool) if padding_mask is None else padding_mask.bool()
        pos = position_embedding_sine(mask.reshape(n, h, w), src.shape[2] // 2, dtype=src.dtype, offset=0)
        pos = pos.flatten(2).permute(2, 0, 1)
        hs, memory = self.transformer(src.transpose(0, 1), mask, self.query_embed.weight, pos)
        return {"memory": memory.transpose(0, 1), "hs": hs}


class DETRBackbone(nn.Module):
    """DETR's ``Backbone``: its only child is ``body`` (keys ``body.*``); the sine positions of the
    Joiner have no parameters and are computed in :class:`DETR`."""

    def __init__(self, depth=50, dilate=False):
        super().__init__()
        self.body = ResNet50Body(depth, dilate)

    def forward(self, x):
        return self.body(x)[-1]


def detr_postprocess(logits, boxes, sizes):
    """DETR's ``PostProcess``: ``prob = softmax(logits [N, Q, C+1])``, the best of the first C
    columns (the last is "no object") gives each query's score and label, its box (cx, cy, w, h) ->
    (x0, y0, x1, y1) times ``[w, h, w, h]`` of ``sizes [N, 2]`` (each image's (h, w)).  Every query
    is kept.  Returns ``(scores [N, Q], labels [N, Q] (float), boxes [N, Q, 4])``."""
    prob = F.softmax(logits, -1)
    scores, labels = prob[..., :-1].max(-1)
    img_h, img_w = sizes.to(logits.dtype).unbind(1)
    scale = torch.stack([img_w, img_h, img_w, img_h], dim=1)
    return scores, labels.to(logits.dtype), box_cxcywh_to_xyxy(boxes) * scale[:, None, :]


class DETR(nn.Module):
    """Op kind ``detr``: the DETR detector for padded batch images of ``img_size`` (H, W).
    ``depth`` 50 or 101, ``dilate`` the DC5 variant.  Children in the original's order, so the
    state_dict is the original's: ``transformer.*``, ``class_embed`` (Linear(d, num_classes + 1)),
    ``bbox_embed.layers.{0,1,2}`` (MLP d -> d -> d -> 4), ``query_embed``, ``input_proj`` (1x1 conv
    2048 -> d), ``backbone.0.body.*`` (ResNet with FrozenBatchNorm2d).

    ``forward(images [N, 3, H, W], image_mask=None [N, H, W], nonzero = padded)``: C5 of the body;
    its mask ``F.interpolate(image_mask[None].float(), C5 size).to(bool)[0]`` (nearest: the top-left
    pixel of each cell); no mask means nothing is padded; the sine positions of that mask (no
    offset); ``input_proj(C5)`` flattened to ``[N, S, d]``; the transformer; the heads on the last
    decoder layer (``pred_logits [N, Q, C+1]``, ``pred_boxes = sigmoid(mlp) [N, Q, 4]``) and
    :func:`detr_postprocess` with each image's valid (h, w) (unpadded rows of column 0, columns of
    row 0; the whole image without a mask) as its target size."""

    def __init__(self, img_size, depth=50, dilate=False, num_classes=91, queries=100, d_model=256, heads=8,
                 enc_layers=6, dec_layers=6, ffn_dim=2048):
        super().__init__()
        self.img_size = tuple(img_size)
        self.transformer = Transformer(d_model, heads, enc_layers, dec_layers, ffn_dim)
        self.class_embed = nn.Linear(d_model, num_classes + 1)
        self.bbox_embed = MLP(d_model, d_model, 4, 3)
        self.query_embed = nn.Embedding(queries, d_model)
        self.input_proj = nn.Conv2d(2048, d_model, 1)
        self.backbone = nn.ModuleList([DETRBackbone(depth, dilate)])
        self.eval()

    def forward(self, images, image_mask=None):
        n, _, h, w = images.shape
        if (h, w) != self.img_size:
            raise ValueError("images are %dx%d, the module was built for %dx%d" % ((h, w) + self.img_size))
        mask = torch.zeros(n, h, w, dtype=torch.bool) if image_mask is None else image_mask != 0
        c5 = self.backbone[0](images)
        fh, fw = c5.shape[-2:]
        m = F.interpolate(mask[None].float(), size=(fh, fw)).to(torch.bool)[0]
        pos = position_embedding_sine(m, self.query_embed.weight.shape[1] // 2, dtype=images.dtype, offset=0)
        src = self.input_proj(c5)
        hs = self.transformer(src.flatten(2).permute(2, 0, 1), m.flatten(1), self.query_embed.weight,
                              pos.flatten(2).permute(2, 0, 1))[0]
        logits = self.class_embed(hs[-1])
        boxes = self.bbox_embed(hs[-1]).sigmoid()
        sizes = torch.stack([(~mask[:, :, 0]).sum(1), (~mask[:, 0, :]).sum(1)], 1)
        scores, labels, pboxes = detr_postprocess(logits, boxes, sizes)
        return {"pred_logits": logits, "pred_boxes": boxes, "scores": scores, "labels": labels, "boxes": pboxes}


# ---------------------------------------------------------------------------------------------
# Independent float64 NumPy recomputation.


def _linear(x, weights, name):
    return x @ weights[name + ".weight"].T + weights[name + ".bias"]


def sine_float64(mask, num_pos_feats=128, temperature=10000.0):
    """DETR's sine positions of a bool mask ``[N, H, W]`` in float64 -> ``[N, H*W, 2*F]`` (channels
    [y features, x features], sin on even and cos on odd channels; no -0.5 offset)."""
    nm = (~mask).astype(np.float64)
    y = np.cumsum(nm, 1)
    x = np.cumsum(nm, 2)
    y = y / (y[:, -1:, :] + 1e-6) * 2 * np.pi
    x = x / (x[:, :, -1:] + 1e-6) * 2 * np.pi
    i = np.arange(num_pos_feats)
    dim_t = temperature ** (2 * (i // 2) / num_pos_feats)

    def embed(e):
        a = e[..., None] / dim_t
        return np.where(i % 2 == 0, np.sin(a), np.cos(a))

    n, h, w = mask.shape
    return np.concatenate([embed(y), embed(x)], -1).reshape(n, h * w, 2 * num_pos_feats)


def mha_float64(q_in, k_in, v_in, weights, prefix, heads, key_mask=None):
    """nn.MultiheadAttention in float64 on batch-first ``[N, T, d]`` inputs: the packed in_proj's
    three row blocks for q, k and v, per head ``softmax(q k^T / sqrt(hd))`` with masked keys at
    -inf, then out_proj."""
    w, b = weights[prefix + "in_proj_weight"], weights[prefix + "in_proj_bias"]
    d = q_in.shape[-1]
    hd = d // heads
    q, k, v = (x @ w[i * d:(i + 1) * d].T + b[i * d:(i + 1) * d] for i, x in enumerate((q_in, k_in, v_in)))
    n, tq, tk = q.shape[0], q.shape[1], k.shape[1]
    q = q.reshape(n, tq, heads, hd).transpose(0, 2, 1, 3)
    k = k.reshape(n, tk, heads, hd).transpose(0, 2, 1, 3)
    v = v.reshape(n, tk, heads, hd).transpose(0, 2, 1, 3)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd)
    if key_mask is not None:
        s = np.where(key_mask[:, None, None, :], -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    ctx = (s / s.sum(-1, keepdims=True)) @ v
    return _linear(ctx.transpose(0, 2, 1, 3).reshape(n, tq, d), weights, prefix + "out_proj")


def detr_transformer_float64(src, padding_mask, weights, p):
    """``detr_transformer`` in float64 NumPy, batch-first: returns ``{"memory", "hs"}``."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    x = np.asarray(src, dtype=np.float64)
    n = x.shape[0]
    h, wd = p["feature_size"]
    mask = np.zeros((n, h * wd), bool) if padding_mask is None else np.asarray(padding_mask) != 0
    pos = sine_float64(mask.reshape(n, h, wd), x.shape[2] // 2)
    heads = p["heads"]

    def ln(v, name):
        return layernorm_float64(v, w[name + ".weight"], w[name + ".bias"], 1e-5)

    def ffn(v, pre):
        return _linear(np.maximum(_linear(v, w, pre + "linear1"), 0), w, pre + "linear2")

    for i in range(p["enc_layers"]):
        pre = "transformer.encoder.layers.%d." % i
        x = ln(x + mha_float64(x + pos, x + pos, x, w, pre + "self_attn.", heads, mask), pre + "norm1")
        x = ln(x + ffn(x, pre), pre + "norm2")
    qpos = np.broadcast_to(w["query_embed.weight"], (n,) + w["query_embed.weight"].shape)
    y = np.zeros_like(qpos)
    hs = []
    for i in range(p["dec_layers"]):
        pre = "transformer.decoder.layers.%d." % i
        y = ln(y + mha_float64(y + qpos, y + qpos, y, w, pre + "self_attn.", heads), pre + "norm1")
        y = ln(y + mha_float64(y + qpos, x + pos, x, w, pre + "multihead_attn.", heads, mask), pre + "norm2")
        y = ln(y + ffn(y, pre), pre + "norm3")
        hs.append(ln(y, "transformer.decoder.norm"))
    return {"memory": x, "hs": np.stack(hs)}


# ---------------------------------------------------------------------------------------------
# Case rules (cases.py calls these for the op kinds in OPS).


def check(op, p):
    """Raise ValueError for params DETR's modules cannot take."""
    if op == "detr":
        resnet_blocks(p["depth"])
    if p["d_model"] != 256:
        raise ValueError("%s: d_model must be 256 (the sine embedding's 2*128 features), got %d" % (op, p["d_model"]))
    if p["d_model"] % p["heads"]:
        raise ValueError("%s: d_model %d is not a multiple of heads %d" % (op, p["d_model"], p["heads"]))


def transformer_weights(p):
    """The ``transformer.*`` state_dict entries (name -> shape), in module order."""
    d, f = p["d_model"], p["ffn_dim"]
    out = {}

    def mha(pre):
        out.update({pre + "in_proj_weight": [3 * d, d], pre + "in_proj_bias": [3 * d],
                    pre + "out_proj.weight": [d, d], pre + "out_proj.bias": [d]})

    def lin_norms(pre, norms):
        out.update({pre + "linear1.weight": [f, d], pre + "linear1.bias": [f],
                    pre + "linear2.weight": [d, f], pre + "linear2.bias": [d]})
        for k in norms:
            out.update({pre + k + ".weight": [d], pre + k + ".bias": [d]})

    for i in range(p["enc_layers"]):
        pre = "transformer.encoder.layers.%d." % i
        mha(pre + "self_attn.")
        lin_norms(pre, ("norm1", "norm2"))
    for i in range(p["dec_layers"]):
        pre = "transformer.decoder.layers.%d." % i
        mha(pre + "self_attn.")
        mha(pre + "multihead_attn.")
        lin_norms(pre, ("norm1", "norm2", "norm3"))
    out.update({"transformer.decoder.norm.weight": [d], "transformer.decoder.norm.bias": [d]})
    return out


def backbone_weights(depth):
    """``backbone.0.body.*`` of ResNet-50/101 (name -> shape), in module order: each conv's weight,
    then its FrozenBatchNorm2d's weight, bias, running_mean, running_var."""
    out = {}

    def conv(name, bn, cout, cin, k):
        out["backbone.0.body.%s.weight" % name] = [cout, cin, k, k]
        for s in ("weight", "bias", "running_mean", "running_var"):
            out["backbone.0.body.%s.%s" % (bn, s)] = [cout]

    conv("conv1", "bn1", 64, 3, 7)
    cin = 64
    for stage, (blocks, width) in enumerate(zip(resnet_blocks(depth), (64, 128, 256, 512))):
        for j in range(blocks):
            pre = "layer%d.%d." % (stage + 1, j)
            conv(pre + "conv1", pre + "bn1", width, cin, 1)
            conv(pre + "conv2", pre + "bn2", width, width, 3)
            conv(pre + "conv3", pre + "bn3", 4 * width, width, 1)
            if j == 0:
                conv(pre + "downsample.0", pre + "downsample.1", 4 * width, cin, 1)
            cin = 4 * width
    return out


def c5_size(p):
    """The C5 map of ``detr``'s padded image: every stride-2 step maps n -> ceil(n / 2); five of them
    (four with dilate)."""
    h, w = p["img_size"]
    for _ in range(4 if p["dilate"] else 5):
        h, w = -(-h // 2), -(-w // 2)
    return h, w


def shapes(op, p, b):
    """``(inputs, weights, outputs)``.  ``detr_transformer``: inputs ``src [N, H*W, d]`` and, with
    padding_mask, ``padding_mask [N, H*W]`` (nonzero = padded); weights ``transformer.*`` then
    ``query_embed.weight [Q, d]``; outputs ``memory [N, H*W, d]`` and ``hs [dec_layers, N, Q, d]``.
    ``detr``: inputs ``images [N, 3, H, W]`` and, with padding_mask, ``image_mask [N, H, W]``;
    weights the detector's state_dict (:class:`DETR`); outputs ``pred_logits [N, Q, C+1]``,
    ``pred_boxes [N, Q, 4]``, ``scores [N, Q]``, ``labels [N, Q]``, ``boxes [N, Q, 4]``."""
    if op == "detr":
        h, w = p["img_size"]
        d, q, c = p["d_model"], p["queries"], p["num_classes"] + 1
        inputs = {"images": [b, 3, h, w]}
        if p["padding_mask"]:
            inputs["image_mask"] = [b, h, w]
        weights = transformer_weights(p)
        weights.update({"class_embed.weight": [c, d], "class_embed.bias": [c]})
        for j, o in enumerate((d, d, 4)):
            weights.update({"bbox_embed.layers.%d.weight" % j: [o, d], "bbox_embed.layers.%d.bias" % j: [o]})
        weights.update({"query_embed.weight": [q, d], "input_proj.weight": [d, 2048, 1, 1], "input_proj.bias": [d]})
        weights.update(backbone_weights(p["depth"]))
        return inputs, weights, {"pred_logits": [b, q, c], "pred_boxes": [b, q, 4], "scores": [b, q],
                                 "labels": [b, q], "boxes": [b, q, 4]}
    h, w = p["feature_size"]
    d, q = p["d_model"], p["queries"]
    inputs = {"src": [b, h * w, d]}
    if p["padding_mask"]:
        inputs["padding_mask"] = [b, h * w]
    weights = transformer_weights(p)
    weights["query_embed.weight"] = [q, d]
    return inputs, weights, {"memory": [b, h * w, d], "hs": [p["dec_layers"], b, q, d]}


def build(op, p):
    if op == "detr":
        return DETR(p["img_size"], p["depth"], p["dilate"], p["num_classes"], p["queries"], p["d_model"], p["heads"],
                    p["enc_layers"], p["dec_layers"], p["ffn_dim"])
    return DETRTransformer(p["feature_size"], p["d_model"], p["heads"], p["enc_layers"], p["dec_layers"],
                           p["ffn_dim"], p["queries"])


def macs(op, p, b):
    """MACs of the q, k and v projections (d columns each), the attention products, out_proj and the
    feed-forward layers; for ``detr`` also the backbone's convolutions (:func:`backbone_macs`),
    input_proj and the two heads."""
    if op == "detr":
        fh, fw = c5_size(p)
        d, q = p["d_model"], p["queries"]
        tp = dict(p, feature_size=[fh, fw])
        return (backbone_macs(p, b) + b * fh * fw * 2048 * d + macs("detr_transformer", tp, b)
                + b * q * d * (p["num_classes"] + 1) + b * q * (2 * d * d + 4 * d))
    h, w = p["feature_size"]
    s, q, d, f = h * w, p["queries"], p["d_model"], p["ffn_dim"]
    enc = 3 * b * s * d * d + 2 * b * s * s * d + b * s * d * d + 2 * b * s * d * f
    dec = (3 * b * q * d * d + 2 * b * q * q * d + b * q * d * d
           + b * q * d * d + 2 * b * s * d * d + 2 * b * q * s * d + b * q * d * d + 2 * b * q * d * f)
    return p["enc_layers"] * enc + p["dec_layers"] * dec


def backbone_macs(p, b):
    """The ResNet body's convolution MACs for ``detr``'s image size (stride-2 steps n -> ceil(n/2))."""
    h, w = p["img_size"]
    h, w = -(-h // 2), -(-w // 2)
    total = b * h * w * 64 * 3 * 49
    h, w = -(-h // 2), -(-w // 2)  # maxpool
    cin = 64
    for stage, (blocks, width) in enumerate(zip(resnet_blocks(p["depth"]), (64, 128, 256, 512))):
        for j in range(blocks):
            hi, wi = h, w
            if j == 0 and stage > 0 and not (stage == 3 and p["dilate"]):
                h, w = -(-h // 2), -(-w // 2)
            total += b * hi * wi * width * cin + b * h * w * width * width * 9 + b * h * w * 4 * width * width
            if j == 0:
                total += b * h * w * 4 * width * cin
            cin = 4 * width
    return total


def detr_float64(inputs, weights, p):
    """``detr`` run in float64: the module built afresh with the weights and inputs as float64 (the
    image mask stays a mask).  Not independent code: it bounds the float32 rounding of the stored
    outputs; the parts are tested separately (tests/test_detr_network.py)."""
    module = DETR(p["img_size"], p["depth"], p["dilate"], p["num_classes"], p["queries"], p["d_model"], p["heads"],
                  p["enc_layers"], p["dec_layers"], p["ffn_dim"]).double()
    module.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()},
                           strict=True)
    args = [torch.from_numpy(np.asarray(v, dtype=np.float64)) for v in inputs.values()]
    with torch.no_grad():
        out = module(*args)
    return {k: v.numpy() for k, v in out.items()}


def independent_reference(op, inputs, weights, p):
    if op == "detr":
        return detr_float64(inputs, weights, p)
    return detr_transformer_float64(inputs["src"], inputs.get("padding_mask"), weights, p)
