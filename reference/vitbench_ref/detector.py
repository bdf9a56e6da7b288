"""Parts shared by the DETR-style detectors (docs/reference-notes.md, "Deformable DETR backbone and
positions"): torchvision's ResNet-50 body with
FrozenBatchNorm2d (``resnet50_layout`` lists its convolutions) and the sine position embedding of a
padding mask."""

import math

import torch
from torch import nn
import torch.nn.functional as F

from .layers import pair


RESNET50_BLOCKS = (3, 4, 6, 3)


RESNET50_WIDTHS = (64, 128, 256, 512)  # bottleneck width per stage; output channels are 4x


def resnet_blocks(depth):
    """The blocks per stage of ResNet-50 or ResNet-101."""
    if depth not in (50, 101):
        raise ValueError("ResNet depth must be 50 or 101, got %r" % (depth,))
    return RESNET50_BLOCKS if depth == 50 else (3, 4, 23, 3)


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


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, all four buffers (docs/reference-notes.md,
    "Deformable DETR backbone and positions"):
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

    def __init__(self, cin, width, stride, downsample, dilation=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = FrozenBatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, dilation, dilation, bias=False)
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
    bn2, conv3, bn3}``, ``layer{1..4}.0.downsample.{0, 1}``.  ``depth=101``: ResNet-101 (23 blocks in
    layer3); ``dilate``: torchvision's replace_stride_with_dilation on layer4 (DETR's DC5): no stride
    there, its first block's 3x3 conv keeps dilation 1, the others get dilation (and padding) 2."""

    def __init__(self, depth=50, dilate=False):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = FrozenBatchNorm2d(64)
        cin = 64
        for stage, (blocks, width) in enumerate(zip(resnet_blocks(depth), RESNET50_WIDTHS)):
            layer = []
            for j in range(blocks):
                stride = 2 if (j == 0 and stage > 0) else 1
                dil = 1
                if stage == 3 and dilate:
                    stride, dil = 1, (2 if j > 0 else 1)
                layer.append(Bottleneck(cin, width, stride, j == 0, dil))
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


def position_embedding_sine(mask, num_pos_feats=128, temperature=10000, scale=2 * math.pi, dtype=torch.float32,
                            offset=0.5):
    """Deformable DETR's ``PositionEmbeddingSine`` (normalize True; docs/reference-notes.md,
    "Deformable DETR backbone and positions") of a bool mask
    ``[N, H, W]`` (True = padding) -> ``[N, 2*num_pos_feats, H, W]``: cumulative sums of the
    unpadded entries down the rows (y) and along the columns (x), ``(embed - 0.5) / (last + 1e-6) *
    scale`` (the -0.5 offset is Deformable DETR's), divided by ``temperature^(2*(i//2)/F)``, sin on
    even and cos on odd channels (interleaved), channels ``[pos_y, pos_x]``.  The original computes
    in float32 (``cumsum(dtype=float32)``); here in ``dtype`` so the float64 check is float64
    throughout (float32 gives the original's arithmetic).  ``offset=0`` is the original DETR's flavour
    (``embed / (last + 1e-6) * scale``, no -0.5)."""
    not_mask = ~mask
    y_embed = not_mask.cumsum(1, dtype=dtype)
    x_embed = not_mask.cumsum(2, dtype=dtype)
    eps = 1e-6
    y_embed = (y_embed - offset) / (y_embed[:, -1:, :] + eps) * scale
    x_embed = (x_embed - offset) / (x_embed[:, :, -1:] + eps) * scale
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
