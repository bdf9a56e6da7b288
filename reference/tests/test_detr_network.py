"""detr: the DETR detector's reference module against a composition of independent parts at shapes no
fixture has (torchvision's resnet50/resnet101 with FrozenBatchNorm2d and replace_stride_with_dilation
for the body, a NumPy nearest resize of the mask, the float64 NumPy transformer of detr.py, NumPy
heads and post-processing), the original's parameter counts, the state_dict names of the case rules,
the mask downsampling quirk (padding narrower than a 32-pixel cell vanishes) and MACs."""

import unittest

import _paths  # noqa: F401
import numpy as np
import torch
import torchvision
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.ops.misc import FrozenBatchNorm2d as TVFrozenBN

from vitbench_ref import cases as C
from vitbench_ref import detr


def _params(**kw):
    return C.normalize_params("detr", dict({"img_size": [70, 90], "queries": 9, "enc_layers": 2, "dec_layers": 2,
                                            "ffn_dim": 64, "num_classes": 7}, **kw))


def _randomize(module, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for k, v in module.state_dict().items():
            if k.endswith("running_var"):
                v.copy_(torch.rand(v.shape, generator=g, dtype=v.dtype) + 0.5)
            else:
                v.copy_(torch.randn(v.shape, generator=g, dtype=v.dtype) * (0.05 if "backbone" in k else 0.3))
    return {k: v.numpy() for k, v in module.state_dict().items()}


def _nearest(mask, h, w):
    """F.interpolate's nearest rule by hand: source index floor(i * in / out)."""
    hi, wi = mask.shape[1:]
    rows = (np.arange(h) * hi) // h
    cols = (np.arange(w) * wi) // w
    return mask[:, rows][:, :, cols]


class DETRNetworkTest(unittest.TestCase):
    def test_param_counts(self):
        for depth, dilate, want in ((50, False, 41524768), (101, False, 60464672), (50, True, 41524768)):
            m = detr.DETR((800, 1066), depth, dilate)
            self.assertEqual(sum(p.numel() for p in m.parameters()), want, (depth, dilate))
            # What main.py prints: the stem and layer1 do not train.
            frozen = sum(p.numel() for k, p in m.named_parameters()
                         if k.startswith(("backbone.0.body.conv1", "backbone.0.body.layer1")))
            self.assertEqual(frozen, 222400)  # 41,524,768 - 222,400 = 41,302,368 for R50

    def test_state_dict_names_are_the_case_rules(self):
        for kw in ({}, {"depth": 101}, {"dilate": True}):
            p = _params(**kw)
            m = C.build_module("detr", p)
            _, weights, _ = C.shapes("detr", p, 1)
            self.assertEqual([(k, list(v.shape)) for k, v in m.state_dict().items()], list(weights.items()), kw)

    def test_matches_independent_parts(self):
        # Batch 2 padded differently, an odd image size, R50 and the dilated R50.
        for dilate in (False, True):
            p = _params(dilate=dilate, padding_mask=True)
            m = C.build_module("detr", p).double()
            w = _randomize(m, 11)
            rng = np.random.default_rng(2)
            images = rng.standard_normal((2, 3, 70, 90))
            mask = np.zeros((2, 70, 90), bool)
            mask[0, :, 60:] = True
            mask[1, 40:, :] = True
            with torch.no_grad():
                got = m(torch.from_numpy(images), torch.from_numpy(mask))
            tv = torchvision.models.resnet50(norm_layer=TVFrozenBN, replace_stride_with_dilation=[False, False, dilate])
            body = IntermediateLayerGetter(tv, return_layers={"layer4": "0"}).double()
            body.load_state_dict({k[len("backbone.0.body."):]: torch.from_numpy(v) for k, v in w.items()
                                  if k.startswith("backbone.0.body.")}, strict=False)
            with torch.no_grad():
                c5 = body(torch.from_numpy(images))["0"].numpy()
            fh, fw = c5.shape[2:]
            self.assertEqual((fh, fw), detr.c5_size(p))
            fmask = _nearest(mask, fh, fw).reshape(2, -1)
            src = np.einsum("nchw,dc->nhwd", c5, w["input_proj.weight"][:, :, 0, 0]).reshape(2, fh * fw, -1)
            src = src + w["input_proj.bias"]
            tp = dict(p, feature_size=[fh, fw])
            hs = detr.detr_transformer_float64(src, fmask, w, tp)["hs"][-1]
            logits = hs @ w["class_embed.weight"].T + w["class_embed.bias"]
            h = hs
            for j in range(3):
                h = h @ w["bbox_embed.layers.%d.weight" % j].T + w["bbox_embed.layers.%d.bias" % j]
                h = np.maximum(h, 0) if j < 2 else h
            boxes = 1 / (1 + np.exp(-h))
            prob = np.exp(logits - logits.max(-1, keepdims=True))
            prob /= prob.sum(-1, keepdims=True)
            labels = prob[..., :-1].argmax(-1)
            scores = prob[..., :-1].max(-1)
            sizes = np.array([[70, 60], [40, 90]], float)  # each image's valid (h, w)
            cx, cy, bw, bh = np.moveaxis(boxes, -1, 0)
            xyxy = np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], -1)
            xyxy = xyxy * np.stack([sizes[:, 1], sizes[:, 0], sizes[:, 1], sizes[:, 0]], 1)[:, None]
            for k, want in (("pred_logits", logits), ("pred_boxes", boxes), ("scores", scores), ("labels", labels),
                            ("boxes", xyxy)):
                np.testing.assert_allclose(got[k].numpy(), want, atol=1e-8, rtol=0, err_msg="%s dilate=%s" % (k, dilate))

    def test_narrow_padding_vanishes_at_c5(self):
        # A 300x400 image padded to 320x416: no C5 cell is masked (each cell takes its top-left pixel).
        mask = np.ones((1, 320, 416), bool)
        mask[0, :300, :400] = False
        small = torch.nn.functional.interpolate(torch.from_numpy(mask)[None].float(), size=(10, 13)).bool()[0]
        self.assertFalse(bool(small.any()))
        np.testing.assert_array_equal(small.numpy(), _nearest(mask, 10, 13))

    def test_macs(self):
        # The original's counts at 800x1066 (forward hooks on Conv2d, Linear and the attention products).
        for kw, backbone, total in (({}, 69.98, 81.17), ({"dilate": True}, 106.02, 173.17),
                                    ({"depth": 101}, 133.43, 144.62)):
            p = C.normalize_params("detr", dict({"img_size": [800, 1066]}, **kw))
            self.assertAlmostEqual(detr.backbone_macs(p, 1) / 1e9, backbone, places=2)
            self.assertAlmostEqual(C.macs("detr", p, 1) / 1e9, total, places=2)

    def test_rules(self):
        with self.assertRaises(ValueError):
            _params(depth=34)


if __name__ == "__main__":
    unittest.main()
