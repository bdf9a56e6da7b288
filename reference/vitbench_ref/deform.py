"""Deformable attention (Deformable DETR; docs/reference-notes.md, "MSDeformAttn" and "Deformable attention sampling")
and deformable convolution (torchvision; "Deformable convolution"): ``MSDeformAttnCore``, ``MSDeformAttn``,
``DeformConv2d`` and their float64 recomputations."""

import torch
from torch import nn
import torch.nn.functional as F

from .layers import pair


def level_start_index(spatial_shapes):
    """``[0, cumsum(H*W)[:-1]]`` of a list of ``(H, W)`` level shapes (docs/reference-notes.md,
    "Deformable DETR backbone and positions")."""
    out, s = [], 0
    for h, w in spatial_shapes:
        out.append(s)
        s += int(h) * int(w)
    return out


def ms_deform_attn_core_pytorch(value, spatial_shapes, sampling_locations, attention_weights):
    """Deformable DETR's ``ms_deform_attn_core_pytorch`` (docs/reference-notes.md, "Deformable
    attention sampling"): per level, bilinear
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
    """The multi-scale deformable sampling core alone (docs/reference-notes.md, "Deformable attention
    sampling", the grid_sample path):
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
    """Deformable DETR's ``MSDeformAttn`` (docs/reference-notes.md, "MSDeformAttn") with the grid_sample core, the level
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
    """``torchvision.ops.deform_conv2d`` with its own ``weight [Cout, Cin/groups, kh, kw]`` and ``bias [Cout]``
    (docs/reference-notes.md, "Deformable convolution"): ``forward(x [B, Cin, H, W], offset [B, 2*G*kh*kw, Ho, Wo],
    mask=None [B, G*kh*kw, Ho, Wo]) -> [B, Cout, Ho, Wo]``; offsets are (dy, dx) pairs per tap (row-major over the
    kernel), G = offset groups (inferred by torchvision from the offset)."""

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
    """The multi-scale deformable sampling core recomputed in float64 NumPy the way the CUDA kernel
    ``ms_deformable_im2col_gpu_kernel`` does it (docs/reference-notes.md, "Deformable attention sampling"), without
    grid_sample: per sample h_im = loc_y*H - 0.5, w_im = loc_x*W - 0.5; evaluated only when -1 < h_im < H and -1 <
    w_im < W; floor-based bilinear weights with each corner outside [0, H-1] x [0, W-1] read as 0; the weighted
    samples accumulated over levels and points.  Queries are processed ``chunk`` at a time so the gathers stay small.
    Returns ``[N, Lq, M*D]`` float64."""
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
    """MSDeformAttn (docs/reference-notes.md, "MSDeformAttn") recomputed in float64 NumPy from the weights, with the
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
    """torchvision's deform_conv2d recomputed in float64 NumPy from docs/reference-notes.md, "Deformable convolution"
    (no torchvision): for output pixel (oy, ox), tap k = i*kw + j and offset group g, the sampling point is y = oy*sh
    - ph + i*dh + offset[2*(g*kh*kw + k)], x = ox*sw - pw + j*dw + offset[2*(g*kh*kw + k) + 1]; its value is 0 when y
    <= -1, y >= H, x <= -1 or x >= W, else floor-based bilinear with corners outside the image read as 0; times the
    mask (if any); input channel c belongs to offset group c // (Cin/G); then a grouped convolution of these columns
    with ``weight`` plus ``bias``."""
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
