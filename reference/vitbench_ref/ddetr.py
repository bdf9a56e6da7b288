"""Deformable DETR reference modules (docs/reference-notes.md, "Deformable DETR").

Its transformer (same notes, "Deformable DETR encoder and decoder"): single-stage or two-stage, optional iterative box refinement,
return_intermediate_dec True, ReLU, post-norm; dropout is absent (eval); ``DDETRTransformer`` (op
kind ``ddetr_transformer``) and its float64 recomputation ``ddetr_transformer_float64``.  The whole
detector (``DeformableDETR``, op kind ``deformable_detr``): the ResNet-50 backbone of
:mod:`.detector`, sine position embedding, input projections, the transformer, the heads of the
last decoder layer and PostProcess.  Default config, optional box refinement, optional two-stage
(with box refinement)."""

import math

import torch
from torch import nn
import torch.nn.functional as F

from .deform import MSDeformAttn, level_start_index, ms_deform_attn_float64
from .detector import RESNET50_BLOCKS, PositionEmbeddingSine, ResNet50Body, _conv_size, resnet50_layout
from .layers import MLP, box_cxcywh_to_xyxy, layernorm_float64, pair


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
    """``DeformableTransformerEncoder.get_reference_points`` (docs/reference-notes.md,
    "Deformable DETR encoder and decoder"): per level the
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
    """Encoder layer (docs/reference-notes.md, "Deformable DETR encoder and decoder"): ``src2 = self_attn(src + pos,
    ref, src, mask)``; ``src = norm1(src + src2)``; ``src = norm2(src + linear2(relu(linear1(src))))``."""

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
    """Decoder layer (docs/reference-notes.md, "Deformable DETR encoder and decoder"): ``q = k = tgt + query_pos``,
    value ``tgt`` through ``self_attn`` (nn.MultiheadAttention, sequence-first), ``tgt = norm2(tgt + .)``; then
    ``cross_attn(tgt + query_pos, ref, memory, mask)``, ``tgt = norm1(tgt + .)``; then the FFN and ``norm3``."""

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
    """Deformable DETR's ``gen_encoder_output_proposals`` without the memory part (docs/reference-notes.md,
    "Box refinement and two-stage"): for each level l (H, W), valid_H / valid_W = the unpadded entries of the level's
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
    """Deformable DETR's ``get_proposal_pos_embed`` (docs/reference-notes.md, "Box refinement and two-stage"):
    ``dim_t[i] = temperature^(2*(i//2)/F)`` (i < F = num_pos_feats), ``p = sigmoid(proposals) * 2 pi``, ``pos = p[...,
    None] / dim_t`` -> [N, Q, 4, F], then per coordinate sin of the even and cos of the odd channels interleaved
    (sin(a0), cos(a1), sin(a2), ...) -> [N, Q, 4F] (coordinate-major).  The original fixes F = 128, so 4F = 512 = 2
    d_model (pos_trans's input) only for d_model 256, which two_stage therefore requires."""
    dim_t = torch.arange(num_pos_feats, dtype=proposals.dtype)
    dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_pos_feats)
    pos = (proposals.sigmoid() * scale)[:, :, :, None] / dim_t
    return torch.stack((pos[:, :, :, 0::2].sin(), pos[:, :, :, 1::2].cos()), dim=4).flatten(3).flatten(2)


class DeformableTransformer(nn.Module):
    """Deformable DETR's ``DeformableTransformer`` (docs/reference-notes.md, "Deformable DETR"), taking the already
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
        """The two-stage query selection (docs/reference-notes.md, "Box refinement and two-stage"): ``output_memory``
        = memory with padded and invalid-proposal rows zeroed, through ``enc_output`` and ``enc_output_norm``; scores
        ``decoder.class_embed[L](output_memory)`` and coordinates ``decoder.bbox_embed[L](output_memory) + proposals``
        (L = dec_layers); the ``queries`` largest class-0 scores per image, descending, equal scores lower row first
        (a stable sort); the selected coordinates (detached), their sigmoid as the 4-d initial references, and
        ``pos_trans_norm(pos_trans(proposal_pos_embed(coords)))`` split into ``query_pos`` (first d) and ``tgt``.
        Returns ``(reference_points [N, Q, 4], query_pos, tgt, proposal_logits [N, Q, num_classes])``, the last
        the selected proposals' class logits in query order (column 0 ranked them)."""
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
        proposal_logits = torch.gather(enc_class, 1, topk.unsqueeze(-1).repeat(1, 1, enc_class.shape[-1]))
        reference_points = coords.sigmoid()
        pos_trans_out = self.pos_trans_norm(self.pos_trans(proposal_pos_embed(coords)))
        query_pos, tgt = torch.split(pos_trans_out, d, dim=2)
        return reference_points, query_pos, tgt, proposal_logits

    def forward(self, src_flatten, pos_flatten, mask_flatten, query_embed, stages=None):
        """Returns ``(hs [dec_layers, N, Q, d], init_reference_out [N, Q, 2] (two-stage: [N, Q, 4]),
        inter_references [dec_layers, N, Q, 2 or 4] (the reference after each layer's refinement; the
        initial one repeated without refinement), memory [N, S, d], proposal_logits)``, the last the
        two-stage selection's class logits ``[N, Q, num_classes]`` (None without two_stage).
        ``query_embed`` is None with two_stage."""
        n = src_flatten.shape[0]
        lvl_pos = torch.cat([pos_flatten[:, s:s + h * w] + self.level_embed[lvl].view(1, 1, -1)
                             for lvl, (s, (h, w)) in enumerate(zip(self.level_start_index, self.spatial_shapes))], 1)
        if mask_flatten is None:
            valid_ratios = torch.ones(n, len(self.spatial_shapes), 2, dtype=src_flatten.dtype)
        else:
            valid_ratios = valid_ratios_from_masks(self.level_masks(mask_flatten), src_flatten.dtype)
        memory = self.encoder(src_flatten, valid_ratios, lvl_pos, mask_flatten, stages)
        proposal_logits = None
        if self.two_stage:
            reference_points, query_pos, tgt, proposal_logits = self.two_stage_queries(memory, mask_flatten)
        else:
            query_pos, tgt = torch.split(query_embed, self.d_model, dim=1)
            query_pos = query_pos.unsqueeze(0).expand(n, -1, -1)
            tgt = tgt.unsqueeze(0).expand(n, -1, -1)
            reference_points = self.reference_points(query_pos).sigmoid()
        hs, inter_references = self.decoder(tgt, reference_points, memory, valid_ratios, query_pos, mask_flatten,
                                            stages)
        return hs, reference_points, inter_references, memory, proposal_logits


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
        hs, ref, inter_refs, memory, proposal_logits = self.transformer(src, pos, padding_mask, qe, stages)
        out = {"memory": memory, "hs": hs[-1], "reference_points": ref}
        if self.box_refine:
            out["last_reference"] = inter_refs[-1]
        if self.two_stage:
            out["proposal_logits"] = proposal_logits
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

    With ``two_stage`` the queries come from the encoder, as written in docs/reference-notes.md,
    "Box refinement and two-stage" (:func:`encoder_output_proposals_float64`, padded / invalid
    memory rows zeroed, enc_output + LayerNorm, class head and box MLP ``transformer.decoder.{class,bbox}_embed.{dec_layers}``, the
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
        enc_class = lin(om, "transformer.decoder.class_embed.%d" % last)
        score = enc_class[..., 0]
        coord = mlp(om, "transformer.decoder.bbox_embed.%d.layers." % last) + prop
        top = np.argsort(-score, axis=1, kind="stable")[:, :p["queries"]]
        coords = np.take_along_axis(coord, top[..., None], 1)
        out["proposal_logits"] = np.take_along_axis(enc_class, top[..., None], 1)
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


def ddetr_level_shapes(img_size):
    """The four level shapes ``[[H, W], ...]`` of the detector for a padded batch image ``img_size``:
    C3, C4, C5 (outputs of layer2-4, strides 8/16/32) and the extra level of input_proj[3]
    (3x3 s2 p1 conv on C5).  Every stride-2 step maps n -> ceil(n / 2) (docs/reference-notes.md,
    "Deformable DETR backbone and positions")."""
    convs = resnet50_layout(img_size)
    ends = {c["conv"]: c["out"] for c in convs}
    levels = [list(ends["layer%d.%d.conv3" % (i + 1, RESNET50_BLOCKS[i] - 1)]) for i in (1, 2, 3)]
    h5, w5 = levels[-1]
    levels.append([_conv_size(h5, 3, 2, 1), _conv_size(w5, 3, 2, 1)])
    return levels


class DDETRBackbone(nn.Module):
    """Deformable DETR's ``Backbone``: its only child is ``body`` (so the keys are ``body.*``)."""

    def __init__(self):
        super().__init__()
        self.body = ResNet50Body()

    def forward(self, x):
        return self.body(x)


def inverse_sigmoid(x, eps=1e-5):
    """Deformable DETR's ``inverse_sigmoid`` (docs/reference-notes.md, "Box refinement and two-stage"): clamp to [0,
    1], then ``log(clamp(x, eps) / clamp(1 - x, eps))``."""
    x = x.clamp(min=0, max=1)
    return torch.log(x.clamp(min=eps) / (1 - x).clamp(min=eps))


def ddetr_postprocess(logits, boxes, sizes, top_k):
    """Deformable DETR's ``PostProcess`` (docs/reference-notes.md, "Deformable DETR heads and
    post-processing"): ``prob = sigmoid(logits [N, Q, C])``,
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
    """Op kind ``deformable_detr``: the Deformable DETR detector, optionally with iterative box refinement and
    two-stage (docs/reference-notes.md, "Deformable DETR"), default config, 4 feature levels, for padded batch images
    of ``img_size`` (H, W) (the level shapes of the transformer are fixed at construction,
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
        hs, init_reference, inter_references, memory, proposal_logits = self.transformer(
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
        if self.two_stage:
            out["proposal_logits"] = proposal_logits
        if self.probe:
            out.update({"stages.c3": feats[0], "stages.c5": feats[2], "stages.src": src_flatten,
                        "stages.memory": memory, "stages.hs": hs})
        return out
