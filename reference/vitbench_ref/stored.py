"""Stored (not synthesized) inputs of a few built-in cases, built deterministically with NumPy.

The generator of FORMAT.md draws uniform values, which almost never land exactly on the edges of
a bilinear sampler, and it cannot make a padding mask shaped like a padded batch.  For the cases
listed in ``STORED`` the exporter writes the named inputs to ``inputs.npz`` instead (they are
left out of ``case.json``'s ``synth.arrays``); the case's other inputs stay synthesized.

- ``ms_deform_attn_core/borders``: ``sampling_locations`` whose pixel coordinate
  ``loc*size - 0.5`` (x with the level's W, y with its H) is exactly -1, size, 0 and size-1, each
  also +-1e-3 px, plus locations -0.3 and 1.4 (far outside) and exactly 0 and 1; mixed with
  in-range values so that x is on an edge while y is inside, y on an edge while x is inside, and
  both on edges (the in-range test and per-corner zero of docs/reference-notes.md, "Deformable
  attention sampling").  With the levels
  [[6, 4], [3, 2]] the x values are exact in float32 (W = 4, 2 are powers of two); the y values of
  H = 6, 3 are the nearest float32.
- ``ms_deform_attn/ref4_mask_b2``, ``ms_deform_attn/hd71_mask``: ``padding_mask`` as a padded
  batch makes it: image i has a valid height/width ratio (vh, vw); on each level (H, W) the rows
  >= ceil(vh*H) and the columns >= ceil(vw*W) are padding (1.0), the rest 0.0 (flattened
  row-major per level, levels concatenated).
- ``ddetr_transformer_small_b2``, ``ddetr_transformer_refine_b2``, ``ddetr_transformer_two_stage_ties_b2``:
  ``padding_mask`` as Deformable DETR builds it for a padded
  batch (docs/reference-notes.md, "Deformable DETR backbone and positions"): each image has a
  valid (height, width) inside the padded batch image,
  whose size is the one listed here (consistent with the levels: level l of a padded image
  (Hp, Wp) is (ceil(Hp / (8*2^l)), ceil(Wp / (8*2^l)))); the batch's image mask ``[N, Hp, Wp]`` (True = padding)
  goes to every level by ``F.interpolate(mask[None].float(), size=(H_l, W_l)).to(torch.bool)[0]`` (mode
  nearest: source index floor(dst * in/out)), flattened row-major per level, levels concatenated.
- ``deformable_detr_r50_b2``: ``image_mask [N, H, W]`` of a padded batch (1.0 = padding): image i is
  valid in its top-left (height, width) of ``IMAGE_VALID`` and padded elsewhere (image 0 at the bottom,
  image 1 on the right); the detector interpolates it to every level itself.
- ``deform_conv2d/borders``: ``offset`` (dy, dx) chosen so that the sampling points
  (oy*sh - ph + i*dh + dy, ox*sw - pw + j*dw + dx) land exactly on y = -1, H, H-1, 0 and
  x = -1, W, W-1, 0 (each also +-1e-3), half a pixel outside, well outside, and inside on
  integer and half-integer positions (the range test and per-corner zero of
  docs/reference-notes.md, "Deformable convolution").

Every builder is generic in the case's shapes (a different batch works too) and draws from
``numpy.random.default_rng`` with a fixed seed, so the arrays are the same on every run.
"""

from fractions import Fraction
import math

import numpy as np

SEED = 20240601


def _structured_pairs(xs_edge, xs_in, ys_edge, ys_in, n, rng):
    """``n`` (x, y) pairs: every edge x with an inside y, every edge y with an inside x, edge x with
    edge y, then random pairs over all candidates; shuffled."""
    pairs = [(x, rng.choice(ys_in)) for x in xs_edge]
    pairs += [(rng.choice(xs_in), y) for y in ys_edge]
    pairs += list(zip(xs_edge, rng.permutation(ys_edge)))
    all_x, all_y = list(xs_edge) + list(xs_in), list(ys_edge) + list(ys_in)
    while len(pairs) < n:
        pairs.append((rng.choice(all_x), rng.choice(all_y)))
    pairs = np.array(pairs, dtype=np.float64)
    return pairs[rng.permutation(len(pairs))[:n]]


def _edge_locs(size):
    """Normalized locations of the sampler's edge cases for a level of extent ``size``."""
    out = []
    for pix in (-1, size, 0, size - 1):
        for eps in (0.0, -1e-3, 1e-3):
            out.append((pix + 0.5 + eps) / size)
    return out + [-0.3, 1.4, 0.0, 1.0]


def border_locations(params, batch, shape):
    """``sampling_locations [N, Lq, M, L, P, 2]`` hitting the edge cases on every level."""
    rng = np.random.default_rng(SEED)
    n, lq, m, nl, pts, _ = shape
    loc = np.empty(shape, dtype=np.float64)
    for lid, (h, w) in enumerate(params["spatial_shapes"]):
        count = n * lq * m * pts
        pairs = _structured_pairs(_edge_locs(w), rng.uniform(0.1, 0.9, 8), _edge_locs(h), rng.uniform(0.1, 0.9, 8),
                                  count, rng)
        loc[:, :, :, lid] = pairs.reshape(n, lq, m, pts, 2)
    return loc.astype(np.float32)


# Valid (height, width) ratios per image of the padded-batch cases (image i uses entry i mod len).
VALID_RATIOS = {"ms_deform_attn/ref4_mask_b2": [("0.75", "0.6"), ("1.0", "0.45")],
                "ms_deform_attn/hd71_mask": [("0.7", "0.8")]}


def padding_mask(name):
    """Builder of ``padding_mask [N, S]`` for the case ``name`` (ratios in ``VALID_RATIOS``)."""
    def build(params, batch, shape):
        ratios = VALID_RATIOS[name]
        out = np.zeros(shape, dtype=np.float32)
        for i in range(shape[0]):
            vh, vw = (Fraction(r) for r in ratios[i % len(ratios)])
            levels = []
            for h, w in params["spatial_shapes"]:
                lvl = np.zeros((h, w), dtype=np.float32)
                lvl[math.ceil(vh * h):, :] = 1.0
                lvl[:, math.ceil(vw * w):] = 1.0
                levels.append(lvl.reshape(-1))
            out[i] = np.concatenate(levels)
        return out
    return build


# Padded batch image (Hp, Wp) and each image's valid (height, width) inside it, per case (image i uses
# entry i mod len).  Image 0 is padded on the right, image 1 at the bottom.
IMAGE_SIZES = {"ddetr_transformer_small_b2": ((61, 77), [(61, 50), (39, 77)]),
               "ddetr_transformer_refine_b2": ((61, 77), [(61, 41), (48, 77)]),
               "ddetr_transformer_two_stage_ties_b2": ((61, 77), [(61, 40), (48, 77)])}


def image_padding_mask(name):
    """Builder of ``padding_mask [N, S]`` for the case ``name`` from image masks interpolated to
    every level (sizes in ``IMAGE_SIZES``)."""
    def build(params, batch, shape):
        import torch
        import torch.nn.functional as F
        (hp, wp), images = IMAGE_SIZES[name]
        for lvl, (h, w) in enumerate(params["spatial_shapes"]):
            stride = 8 << lvl
            if (h, w) != (-(-hp // stride), -(-wp // stride)):
                raise AssertionError("%s: level %d is %dx%d, a %dx%d image gives %dx%d"
                                     % (name, lvl, h, w, hp, wp, -(-hp // stride), -(-wp // stride)))
        mask = torch.ones(shape[0], hp, wp, dtype=torch.bool)  # the batch's image mask, True = padding
        for i in range(shape[0]):
            vh, vw = images[i % len(images)]
            mask[i, :vh, :vw] = False
        levels = [F.interpolate(mask[None].float(), size=(h, w)).to(torch.bool)[0].reshape(shape[0], -1)
                  for h, w in params["spatial_shapes"]]
        return torch.cat(levels, 1).numpy().astype(np.float32)
    return build


# DETR's feature-level masks: the padded batch image (Hp, Wp) and each image's valid (height, width);
# the C5 map is (ceil(Hp / 32), ceil(Wp / 32)).
DETR_IMAGE_SIZES = {"detr_transformer_small_b2": ((150, 220), [(150, 120), (90, 220)])}


def detr_feature_mask(name):
    """Builder of ``padding_mask [N, H*W]`` for the ``detr_transformer`` case ``name``: the batch's
    image mask (``DETR_IMAGE_SIZES``, True = padding) taken to the C5 size ``feature_size`` as DETR
    does, ``F.interpolate(mask[None].float(), size=(H, W)).to(torch.bool)[0]`` (nearest: source
    index floor(dst * in/out)), flattened row-major."""
    def build(params, batch, shape):
        import torch
        import torch.nn.functional as F
        (hp, wp), images = DETR_IMAGE_SIZES[name]
        h, w = params["feature_size"]
        if (h, w) != (-(-hp // 32), -(-wp // 32)):
            raise AssertionError("%s: feature_size %dx%d, a %dx%d image gives %dx%d"
                                 % (name, h, w, hp, wp, -(-hp // 32), -(-wp // 32)))
        mask = torch.ones(shape[0], hp, wp, dtype=torch.bool)
        for i in range(shape[0]):
            vh, vw = images[i % len(images)]
            mask[i, :vh, :vw] = False
        small = F.interpolate(mask[None].float(), size=(h, w)).to(torch.bool)[0]
        return small.reshape(shape[0], -1).numpy().astype(np.float32)
    return build


# Valid (height, width) of each image of a padded batch whose image mask is stored (image i uses entry i mod len).
IMAGE_VALID = {"deformable_detr_r50_b2": [(96, 128), (128, 100)], "detr_r50_small_b2": [(100, 90), (70, 130)]}


def image_mask(name):
    """Builder of ``image_mask [N, H, W]`` (1.0 = padding) for the case ``name`` (``IMAGE_VALID``)."""
    def build(params, batch, shape):
        valid = IMAGE_VALID[name]
        out = np.ones(shape, dtype=np.float32)
        for i in range(shape[0]):
            vh, vw = valid[i % len(valid)]
            if not (1 <= vh <= shape[1] and 1 <= vw <= shape[2]):
                raise AssertionError("%s: valid size %dx%d outside the %dx%d batch image"
                                     % (name, vh, vw, shape[1], shape[2]))
            out[i, :vh, :vw] = 0.0
        return out
    return build


def border_offsets(params, batch, shape):
    """``offset [B, 2*G*kh*kw, Ho, Wo]`` putting deform_conv2d's sampling points on the edges."""
    rng = np.random.default_rng(SEED + 1)
    b, _, ho, wo = shape
    (h, w), (kh, kw) = params["img_size"], params["kernel_size"]
    (sh, sw), (ph, pw), (dh, dw) = params["stride"], params["padding"], params["dilation"]
    g = params["offset_groups"]

    def edges(size):
        out = [t + e for t in (-1, size, size - 1, 0) for e in (0.0, -1e-3, 1e-3)]
        return out + [-0.5, size - 0.5, -2.0, size + 1.5]

    def inside(size):
        return [0.5 * k for k in range(1, 2 * size - 2)]  # 0.5, 1, ..., size-1.5

    count = b * g * kh * kw * ho * wo
    pairs = _structured_pairs(edges(w), inside(w), edges(h), inside(h), count, rng)
    target = pairs.reshape(b, g, kh, kw, ho, wo, 2)  # (x, y) per sample
    base_y = (np.arange(ho) * sh - ph)[:, None] + (np.arange(kh) * dh)[:, None, None]  # [kh, Ho, 1]
    base_x = (np.arange(wo) * sw - pw)[None, :] + (np.arange(kw) * dw)[:, None, None]  # [kw, 1, Wo]
    dy = target[..., 1] - base_y[None, None, :, None]
    dx = target[..., 0] - base_x[None, None, None, :]
    off = np.stack([dy, dx], axis=-1)  # [B, G, kh, kw, Ho, Wo, 2]
    off = off.transpose(0, 1, 2, 3, 6, 4, 5).reshape(b, 2 * g * kh * kw, ho, wo)
    return off.astype(np.float32)


def token_ids(params, batch, shape):
    """CLIP's ``text [N, L]`` as the tokenizer lays it out: start-of-text (vocab_size - 2, 49406 in
    the released vocabulary), random tokens in [1, vocab_size - 2), end-of-text (vocab_size - 1, the
    largest id, where the text tower pools) and zeros up to the context length.  The first
    sequence fills the whole context; the others end at random positions (sequences shorter than
    the context)."""
    rng = np.random.default_rng(SEED + 2)
    n, length = shape
    vocab = params["vocab_size"]
    if vocab < 4 or length < 2:
        raise ValueError("token ids need vocab_size >= 4 and context_length >= 2")
    out = np.zeros(shape, dtype=np.float64)
    for i in range(n):
        end = length - 1 if i == 0 else int(rng.integers(1, length))
        out[i, 0] = vocab - 2
        out[i, 1:end] = rng.integers(1, vocab - 2, end - 1)
        out[i, end] = vocab - 1
    return out.astype(np.float32)


def codebook_ties(params, batch, shape):
    """``z [B, C, H, W]`` of a vector_quantize case that puts the codebook search on its edges: the
    codebook is the generator's ``embedding.weight`` at seed 1 (the case's), and the positions in
    raster order take, in turn, a codebook row exactly (distance about 0, the expanded form may be
    slightly negative), the float32 midpoint of two rows (a near-tie between them: their distances
    differ only by the midpoint's rounding), a midpoint moved 1e-3 of the rows' distance towards
    the first (a clear winner by a small margin) and a random vector."""
    from .synth import default_role, synth
    rng = np.random.default_rng(SEED + 3)
    codes, c = params["codes"], params["chans"]
    name = "embedding.weight"
    e = synth(1, name, [codes, c], *default_role(name, [codes, c], False)).astype(np.float32)
    b, _, h, w = shape
    n = b * h * w
    z = np.empty((n, c), dtype=np.float32)
    for i in range(n):
        a, o = rng.choice(codes, 2, replace=False)
        kind = i % 4
        if kind == 0:
            z[i] = e[a]
        elif kind == 1:
            z[i] = (e[a] + e[o]) / np.float32(2)
        elif kind == 2:
            z[i] = (e[a] + e[o]) / np.float32(2) + np.float32(1e-3) * (e[a] - e[o])
        else:
            z[i] = rng.standard_normal(c).astype(np.float32) * np.float32(0.2)
    return np.ascontiguousarray(z.reshape(b, h, w, c).transpose(0, 3, 1, 2))


# op kind -> {input name: builder}: inputs stored for every case of the op kind (CLIP's token ids,
# which uniform values cannot be).
BY_OP = {op: {"text": token_ids} for op in ("clip_text", "clip")}
BY_OP["mingpt"] = {"idx": lambda params, batch, shape: _code_ids(params, batch, shape)}


def _code_ids(params, batch, shape):
    from .mingpt import code_ids
    return code_ids(params, batch, shape)

# case name -> (op kind, {input name: builder(params, batch, shape) -> float32 array})
STORED = {
    "ms_deform_attn_core/borders": ("ms_deform_attn_core", {"sampling_locations": border_locations}),
    "ms_deform_attn/ref4_mask_b2": ("ms_deform_attn", {"padding_mask": padding_mask("ms_deform_attn/ref4_mask_b2")}),
    "ms_deform_attn/hd71_mask": ("ms_deform_attn", {"padding_mask": padding_mask("ms_deform_attn/hd71_mask")}),
    "detr_r50_small_b2": ("detr", {"image_mask": image_mask("detr_r50_small_b2")}),
    "detr_transformer_small_b2": ("detr_transformer",
                                  {"padding_mask": detr_feature_mask("detr_transformer_small_b2")}),
    "deform_conv2d/borders": ("deform_conv2d", {"offset": border_offsets}),
    "ddetr_transformer_small_b2": ("ddetr_transformer", {"padding_mask": image_padding_mask("ddetr_transformer_small_b2")}),
    "ddetr_transformer_refine_b2": ("ddetr_transformer",
                                    {"padding_mask": image_padding_mask("ddetr_transformer_refine_b2")}),
    "ddetr_transformer_two_stage_ties_b2": ("ddetr_transformer",
                                            {"padding_mask": image_padding_mask("ddetr_transformer_two_stage_ties_b2")}),
    "deformable_detr_r50_b2": ("deformable_detr", {"image_mask": image_mask("deformable_detr_r50_b2")}),
    "vector_quantize/ties_b2": ("vector_quantize", {"z": codebook_ties}),
}


def stored_inputs(case, in_shapes):
    """The stored inputs of ``case`` (name -> float32 array of the shape in ``in_shapes``), or {}."""
    entry = STORED.get(case["name"])
    if entry is None and case["op"] in BY_OP:
        entry = (case["op"], BY_OP[case["op"]])
    if entry is None or entry[0] != case["op"]:
        return {}
    out = {}
    for name, build in entry[1].items():
        if name in in_shapes:
            arr = build(case["params"], case["batch"], in_shapes[name])
            if list(arr.shape) != list(in_shapes[name]):
                raise AssertionError("%s: stored %s has shape %s, want %s"
                                     % (case["name"], name, list(arr.shape), in_shapes[name]))
            out[name] = np.ascontiguousarray(arr, dtype=np.float32)
    return out
