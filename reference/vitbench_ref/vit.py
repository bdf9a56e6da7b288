"""ViT / DeiT reference module (docs/reference-notes.md, "ViT and DeiT"): ``VisionTransformer`` and its float64
recomputation ``vit_float64``."""

import torch
from torch import nn

from .layers import Block, PatchEmbed, block_float64, layernorm_float64, run_blocks


class VisionTransformer(nn.Module):
    """timm's VisionTransformer / DeiT (docs/reference-notes.md, "ViT and DeiT"), written from the spec: PatchEmbed,
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
