"""The whole Deformable DETR detector (op kind ``deformable_detr``): the ResNet-50 body against torchvision's resnet50
(FrozenBatchNorm2d) IntermediateLayerGetter, the sine position embedding against NumPy on a padded mask, the whole
forward (float64) against a composition of independent parts (torchvision body, NumPy masks / position embedding, the
float64 NumPy transformer of ``ddetr_transformer``, NumPy heads and post-processing), state_dict names and the unique
parameter count (docs/reference-notes.md, "Deformable DETR counts"), post-processing on a hand-made example, the
stored image mask, level shapes, MACs, and the case rules."""

import math
import unittest

import _paths  # noqa: F401
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.ops.misc import FrozenBatchNorm2d as TVFrozenBN

from vitbench_ref import cases as C
from vitbench_ref import export as E
from vitbench_ref import stored as ST
from vitbench_ref import synth as S
from vitbench_ref.modules import (DeformableDETR, ResNet50Body, ddetr_level_shapes, ddetr_postprocess,
                                  ddetr_transformer_float64, level_start_index, position_embedding_sine,
                                  resnet50_layout)

torch.set_num_threads(2)
BODY = "backbone.0.body."


def tv_body(state, dtype=torch.float64):
    """torchvision's resnet50 (FrozenBatchNorm2d, eps 1e-5) as Deformable DETR's IntermediateLayerGetter
    (layer2-4), loaded from the ``backbone.0.body.*`` entries of ``state``."""
    net = torchvision.models.resnet50(norm_layer=TVFrozenBN)
    sd = {k[len(BODY):]: v for k, v in state.items() if k.startswith(BODY)}
    own = net.state_dict()
    sd.update({k: own[k] for k in own if k.startswith("fc.")})
    net.load_state_dict(sd, strict=True)
    body = IntermediateLayerGetter(net, return_layers={"layer2": "0", "layer3": "1", "layer4": "2"})
    return body.to(dtype).eval()


def synth_weights(p, batch, seed=3):
    """The case's weights by the exporter's role table (float32 values)."""
    _, ws, _ = C.shapes("deformable_detr", p, batch)
    return {k: S.synth(seed, k, shp, *S.default_role(k, shp, False)) for k, shp in ws.items()}


def pos_numpy(mask, num_pos_feats, temperature=10000.0):
    """Deformable DETR's PositionEmbeddingSine (normalize, -0.5 offset) in float64 NumPy, by loops
    over the channels: [N, 2F, H, W] from a bool mask [N, H, W] (True = padding)."""
    nm = (~mask).astype(np.float64)
    y = np.cumsum(nm, 1)
    x = np.cumsum(nm, 2)
    y = (y - 0.5) / (y[:, -1:, :] + 1e-6) * 2 * math.pi
    x = (x - 0.5) / (x[:, :, -1:] + 1e-6) * 2 * math.pi
    n, h, w = mask.shape
    out = np.empty((n, 2 * num_pos_feats, h, w))
    for i in range(num_pos_feats):
        dim = temperature ** (2 * (i // 2) / num_pos_feats)
        fn = np.sin if i % 2 == 0 else np.cos
        out[:, i] = fn(y / dim)
        out[:, num_pos_feats + i] = fn(x / dim)
    return out


def nearest_mask(mask, h, w):
    """F.interpolate(mode nearest) of a bool mask [N, Hp, Wp] to (h, w), by hand: source index
    floor(float32(dst) * float32(in / out)) (a float32 product), at most in - 1."""
    _, hp, wp = mask.shape
    ys = np.minimum(np.floor(np.arange(h, dtype=np.float32) * np.float32(hp / h)).astype(int), hp - 1)
    xs = np.minimum(np.floor(np.arange(w, dtype=np.float32) * np.float32(wp / w)).astype(int), wp - 1)
    return mask[:, ys][:, :, xs]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def manual_detector(images, image_mask, weights, p):
    """The detector composed from independent parts, float64: torchvision's body, torch's functional
    conv / group_norm for input_proj, NumPy level masks and position embeddings, the NumPy
    transformer (ddetr_transformer_float64), NumPy heads (the LAST class_embed / bbox_embed copy;
    with box_refine the reference after layer dec_layers - 2, refined by the transformer's
    ``transformer.decoder.bbox_embed.*`` entries of ``weights``) and NumPy post-processing."""
    w64 = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    t = {k: torch.from_numpy(v) for k, v in w64.items()}
    x = torch.from_numpy(np.asarray(images, dtype=np.float64))
    n, _, hp, wp = x.shape
    with torch.no_grad():
        feats = list(tv_body(t)(x).values())
        srcs = []
        for lvl, f in enumerate(feats + [feats[-1]]):
            pre = "input_proj.%d." % lvl
            y = F.conv2d(f, t[pre + "0.weight"], t[pre + "0.bias"], stride=2 if lvl == 3 else 1,
                         padding=1 if lvl == 3 else 0)
            srcs.append(F.group_norm(y, 32, t[pre + "1.weight"], t[pre + "1.bias"], 1e-5).numpy())
    mask = np.zeros((n, hp, wp), bool) if image_mask is None else np.asarray(image_mask) != 0
    d = p["d_model"]
    levels = [list(s.shape[-2:]) for s in srcs]
    src_f, pos_f, mask_f = [], [], []
    for s in srcs:
        h, w = s.shape[-2:]
        m = nearest_mask(mask, h, w)
        src_f.append(s.reshape(n, d, h * w).transpose(0, 2, 1))
        pos_f.append(pos_numpy(m, d // 2).reshape(n, d, h * w).transpose(0, 2, 1))
        mask_f.append(m.reshape(n, h * w))
    tp = dict(C.detr_transformer_params(p), spatial_shapes=levels)
    tw = {k: v for k, v in w64.items() if k.startswith("transformer.") or k == "query_embed.weight"}
    refs = []
    tr = ddetr_transformer_float64(np.concatenate(src_f, 1), np.concatenate(pos_f, 1),
                                   None if image_mask is None else np.concatenate(mask_f, 1), tw, tp, refs)
    hs, ref = tr["hs"], tr["reference_points"]
    last = p["dec_layers"] - 1
    if p.get("box_refine") and last > 0:
        ref = refs[last - 1]  # the 4-d reference after layer last - 1

    def lin(v, name):
        return v @ w64[name + ".weight"].T + w64[name + ".bias"]

    logits = lin(hs, "class_embed.%d" % last)
    bb = "bbox_embed.%d.layers." % last
    tmp = lin(np.maximum(lin(np.maximum(lin(hs, bb + "0"), 0), bb + "1"), 0), bb + "2")
    r = np.clip(ref, 0, 1)
    inv = np.log(np.maximum(r, 1e-5) / np.maximum(1 - r, 1e-5))
    tmp[..., :ref.shape[-1]] += inv  # only (cx, cy) for a 2-d reference
    boxes = sigmoid(tmp)
    c, k = p["num_classes"], p["top_k"]
    prob = sigmoid(logits).reshape(n, -1)
    idx = np.argsort(-prob, axis=1, kind="stable")[:, :k]
    scores = np.take_along_axis(prob, idx, 1)
    qi, labels = idx // c, idx % c
    cx, cy, bw, bh = [np.take_along_axis(boxes[..., j], qi, 1) for j in range(4)]
    vh = (~mask[:, :, 0]).sum(1).astype(np.float64)[:, None]
    vw = (~mask[:, 0, :]).sum(1).astype(np.float64)[:, None]
    xyxy = np.stack([(cx - 0.5 * bw) * vw, (cy - 0.5 * bh) * vh, (cx + 0.5 * bw) * vw, (cy + 0.5 * bh) * vh], -1)
    out = {"pred_logits": logits, "pred_boxes": boxes, "scores": scores, "labels": labels.astype(np.float64),
           "boxes": xyxy}
    if p.get("two_stage"):
        out["proposal_logits"] = tr["proposal_logits"]
    if p["probe"]:
        out.update({"stages.c3": feats[0].numpy(), "stages.c5": feats[2].numpy(),
                    "stages.src": np.concatenate(src_f, 1), "stages.memory": tr["memory"], "stages.hs": hs})
    return out


def tiny_params(**kw):
    p = {"img_size": [70, 90], "num_classes": 7, "queries": 9, "d_model": 64, "heads": 4, "enc_layers": 2,
         "dec_layers": 2, "ffn_dim": 48, "enc_points": 2, "dec_points": 3, "top_k": 10, "padding_mask": True,
         "probe": True}
    p.update(kw)
    return C.normalize_params("deformable_detr", p)


class TestBackbone(unittest.TestCase):
    def test_body_matches_torchvision(self):
        # Odd sizes, so that every stride-2 step rounds up; float64 so any difference is structural.
        p = tiny_params(img_size=[75, 53])
        weights = synth_weights(p, 2)
        body = ResNet50Body().double()
        sd = {k[len(BODY):]: torch.from_numpy(v).double() for k, v in weights.items() if k.startswith(BODY)}
        body.load_state_dict(sd, strict=True)
        x = torch.from_numpy(S.synth(5, "images", [2, 3, 75, 53])).double()
        with torch.no_grad():
            got = body.eval()(x)
            want = list(tv_body({BODY + k: v for k, v in sd.items()})(x).values())
        self.assertEqual([list(t.shape) for t in got], [[2, 512, 10, 7], [2, 1024, 5, 4], [2, 2048, 3, 2]])
        for g, w_ in zip(got, want):
            self.assertEqual(g.shape, w_.shape)
            np.testing.assert_allclose(g.numpy(), w_.numpy(), rtol=1e-12, atol=1e-12)
        # The same key set as torchvision's resnet50 without fc (FrozenBN: 4 buffers, no num_batches_tracked).
        tv_keys = {k for k in torchvision.models.resnet50(norm_layer=TVFrozenBN).state_dict()
                   if not k.startswith("fc.")}
        self.assertEqual(set(body.state_dict()), tv_keys)
        # Float32 too (the exporter's path), within float32 rounding.
        body32 = ResNet50Body()
        body32.load_state_dict({k: v.float() for k, v in sd.items()}, strict=True)
        with torch.no_grad():
            got32 = body32.eval()(x.float())
        for g, w_ in zip(got32, want):
            np.testing.assert_allclose(g.numpy(), w_.numpy(), rtol=1e-4, atol=1e-5)

    def test_layout_and_level_shapes(self):
        # The level sizes listed in docs/reference-notes.md, "Deformable DETR backbone and positions", and
        # the built-in cases' sizes.
        self.assertEqual(ddetr_level_shapes([800, 1066]), [[100, 134], [50, 67], [25, 34], [13, 17]])
        self.assertEqual(ddetr_level_shapes([800, 1333]), [[100, 167], [50, 84], [25, 42], [13, 21]])
        self.assertEqual(ddetr_level_shapes([800, 1216]), [[100, 152], [50, 76], [25, 38], [13, 19]])
        self.assertEqual(ddetr_level_shapes([128, 160]), [[16, 20], [8, 10], [4, 5], [2, 3]])
        self.assertEqual(ddetr_level_shapes([128, 128]), [[16, 16], [8, 8], [4, 4], [2, 2]])
        for n in range(1, 200):  # every stride-2 step is n -> ceil(n / 2)
            self.assertEqual(ddetr_level_shapes([n, n + 1]),
                             [[-(-n // s), -(-(n + 1) // s)] for s in (8, 16, 32, 64)])
        convs = resnet50_layout([224, 224])
        self.assertEqual(len(convs), 53)
        self.assertEqual(sum(c["cout"] * c["cin"] * c["k"] ** 2 for c in convs), 23454912)  # docs/reference-notes.md
        self.assertAlmostEqual(sum(c["cout"] * c["out"][0] * c["out"][1] * c["cin"] * c["k"] ** 2 for c in convs) / 1e9,
                               4.087, delta=0.001)  # the usual 4.09 GMACs of ResNet-50 at 224 (fc excluded)


class TestPositionEmbedding(unittest.TestCase):
    def mask(self):
        m = np.ones((2, 5, 6), bool)
        m[0, :3, :4] = False  # 3 valid rows, 4 valid columns
        m[1, :, :5] = False  # only the last column padded
        return m

    def test_against_numpy(self):
        m = self.mask()
        want = pos_numpy(m, 8)
        got = position_embedding_sine(torch.from_numpy(m), 8, dtype=torch.float64).numpy()
        self.assertEqual(got.shape, (2, 16, 5, 6))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
        # Hand values, image 0: row 1 (y_embed 2 of 3 valid rows), column 2 (x_embed 3 of 4): the -0.5 offset.
        a_y = (2 - 0.5) / (3 + 1e-6) * 2 * math.pi
        a_x = (3 - 0.5) / (4 + 1e-6) * 2 * math.pi
        dim2 = 10000 ** (2 / 8)
        self.assertAlmostEqual(got[0, 0, 1, 2], math.sin(a_y), places=12)
        self.assertAlmostEqual(got[0, 1, 1, 2], math.cos(a_y), places=12)
        self.assertAlmostEqual(got[0, 2, 1, 2], math.sin(a_y / dim2), places=12)
        self.assertAlmostEqual(got[0, 3, 1, 2], math.cos(a_y / dim2), places=12)
        self.assertAlmostEqual(got[0, 8, 1, 2], math.sin(a_x), places=12)
        self.assertAlmostEqual(got[0, 9, 1, 2], math.cos(a_x), places=12)
        # Padding below a valid column keeps the last valid cumulative count (row 4 = row 2).
        np.testing.assert_array_equal(got[0, :8, 4, 2], got[0, :8, 2, 2])
        # Float32 (the original's arithmetic) agrees wherever the normaliser is nonzero; in a fully
        # padded column (y_embed all 0) the argument is -0.5 / 1e-6 * 2 pi, where float32 and float64
        # disagree (it never reaches an unpadded output: those rows/columns are masked out).
        got32 = position_embedding_sine(torch.from_numpy(m), 8, dtype=torch.float32).numpy()
        np.testing.assert_allclose(got32[0, :, :3, :4], want[0, :, :3, :4], rtol=0, atol=2e-6)
        np.testing.assert_allclose(got32[1, :, :, :5], want[1, :, :, :5], rtol=0, atol=2e-6)

    def test_unpadded(self):
        m = np.zeros((1, 4, 3), bool)
        got = position_embedding_sine(torch.from_numpy(m), 4, dtype=torch.float64).numpy()
        rows = (np.arange(4) + 0.5) / (4 + 1e-6) * 2 * math.pi
        np.testing.assert_allclose(got[0, 0], np.repeat(np.sin(rows)[:, None], 3, 1), rtol=0, atol=1e-12)
        np.testing.assert_allclose(got, pos_numpy(m, 4), rtol=0, atol=1e-12)


class TestPostProcess(unittest.TestCase):
    def test_hand_example(self):
        # Q = 3 queries, C = 2 classes; flat index q*C + c.
        logits = torch.tensor([[[0.0, 2.0], [1.0, -1.0], [3.0, -2.0]],
                               [[-3.0, -1.0], [0.5, 4.0], [-0.5, 1.5]]], dtype=torch.float64)
        boxes = torch.tensor([[[0.5, 0.5, 0.2, 0.4], [0.25, 0.75, 0.5, 0.5], [0.1, 0.2, 0.2, 0.2]]] * 2,
                             dtype=torch.float64)
        sizes = torch.tensor([[10, 20], [4, 8]])  # (h, w) per image
        scores, labels, out = ddetr_postprocess(logits, boxes, sizes, 3)
        sg = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
        # image 0: 3.0 (q2, c0), 2.0 (q0, c1), 1.0 (q1, c0); image 1: 4.0 (q1, c1), 1.5 (q2, c1), 0.5 (q1, c0)
        np.testing.assert_allclose(scores.numpy(), [[sg(3), sg(2), sg(1)], [sg(4), sg(1.5), sg(0.5)]], rtol=1e-15)
        np.testing.assert_array_equal(labels.numpy(), [[0, 1, 0], [1, 1, 0]])
        self.assertEqual(labels.dtype, torch.float64)
        xyxy = {0: [0.4, 0.3, 0.6, 0.7], 1: [0.0, 0.5, 0.5, 1.0], 2: [0.0, 0.1, 0.2, 0.3]}
        want = [[np.multiply(xyxy[q], [20, 10, 20, 10]) for q in (2, 0, 1)],
                [np.multiply(xyxy[q], [8, 4, 8, 4]) for q in (1, 2, 1)]]
        np.testing.assert_allclose(out.numpy(), want, rtol=0, atol=1e-12)


class TestDetector(unittest.TestCase):
    def build(self, p, weights, dtype):
        module = C.build_module("deformable_detr", p).to(dtype)
        module.load_state_dict({k: torch.from_numpy(v).to(dtype) for k, v in weights.items()}, strict=True)
        return module.eval()

    def inputs(self, p, n):
        h, w = p["img_size"]
        images = S.synth(9, "images", [n, 3, h, w])
        mask = np.ones((n, h, w), np.float32)
        mask[0, :, :60] = 0  # image 0: 70 x 60 (right padding)
        if n > 1:
            mask[1, :45, :] = 0  # image 1: 45 x 90 (bottom padding)
        return images, mask

    def test_against_composition_with_padding(self):
        p = tiny_params()
        weights = synth_weights(p, 2)
        images, mask = self.inputs(p, 2)
        want = manual_detector(images, mask, weights, p)
        module = self.build(p, weights, torch.float64)
        with torch.no_grad():
            got = {k: v.numpy() for k, v in module(torch.from_numpy(images).double(), torch.from_numpy(mask)).items()}
        outs = C.shapes("deformable_detr", p, 2)[2]
        self.assertEqual(sorted(got), sorted(outs))
        for k in outs:
            self.assertEqual(list(got[k].shape), outs[k], k)
            np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-9, err_msg=k)
        # Float32 module within the detector class, labels identical.
        module32 = self.build(p, weights, torch.float32)
        with torch.no_grad():
            got32 = {k: v.numpy() for k, v in module32(torch.from_numpy(images), torch.from_numpy(mask)).items()}
        # The memory rows of padded positions are left out: in a fully padded row or column the sine
        # embedding's argument is about -0.5 / 1e-6 * 2 pi, whose float32 rounding changes the sin/cos
        # entirely (those rows never reach an unpadded output: their values are masked out).
        valid = ~np.concatenate([nearest_mask(mask != 0, h, w).reshape(2, -1)
                                 for h, w in ddetr_level_shapes(p["img_size"])], 1)
        for k in outs:
            g, r = (got32[k][valid], want[k][valid]) if k == "stages.memory" else (got32[k], want[k])
            err = np.abs(g - r)
            self.assertTrue(np.all(err <= 1e-3 + 1e-3 * np.abs(r)), k)
            self.assertLess(float(np.sum(err ** 2) / np.sum(r ** 2)), 1e-6, k)
        self.assertGreater(float(np.abs(got32["stages.memory"][~valid] - want["stages.memory"][~valid]).max()), 1e-3)
        np.testing.assert_array_equal(got32["labels"], want["labels"])
        # The padding matters.
        with torch.no_grad():
            nomask = module(torch.from_numpy(images).double(), torch.zeros(2, 70, 90))
        self.assertGreater(float(np.abs(nomask["pred_logits"].numpy() - got["pred_logits"]).max()), 1e-3)

    def test_without_mask_equals_all_false_mask(self):
        p = tiny_params(padding_mask=False, probe=False, dec_layers=1)
        weights = synth_weights(p, 1)
        images, _ = self.inputs(p, 1)
        module = self.build(p, weights, torch.float64)
        x = torch.from_numpy(images).double()
        with torch.no_grad():
            a = module(x)
            b = module(x, torch.zeros(1, 70, 90))
        for k in a:
            np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), rtol=1e-12, atol=1e-12, err_msg=k)
        want = manual_detector(images, None, weights, p)
        for k in a:
            np.testing.assert_allclose(a[k].numpy(), want[k], rtol=1e-9, atol=1e-9, err_msg=k)

    def test_shared_heads_keep_the_last_copy(self):
        p = tiny_params(dec_layers=3, padding_mask=False, probe=False)
        module = C.build_module("deformable_detr", p)
        self.assertIs(module.class_embed[0], module.class_embed[2])
        self.assertIs(module.bbox_embed[0], module.bbox_embed[2])
        weights = synth_weights(p, 1)
        self.assertFalse(np.array_equal(weights["class_embed.0.weight"], weights["class_embed.2.weight"]))
        module.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
        np.testing.assert_array_equal(module.class_embed[0].weight.detach().numpy(), weights["class_embed.2.weight"])
        np.testing.assert_array_equal(module.bbox_embed[1].layers[1].bias.detach().numpy(),
                                      weights["bbox_embed.2.layers.1.bias"])


class TestStateDict(unittest.TestCase):
    def test_default_names_and_count(self):
        p = C.normalize_params("deformable_detr", {"img_size": [800, 1066]})
        module = C.build_module("deformable_detr", p)
        sd = module.state_dict()
        _, ws, _ = C.shapes("deformable_detr", p, 1)
        self.assertEqual({k: list(v.shape) for k, v in sd.items()}, ws)
        # The expected list: torchvision's resnet50 keys without fc under backbone.0.body, input_proj,
        # ddetr_transformer's keys, and the six copies of the heads.
        tv = [BODY + k for k in torchvision.models.resnet50(norm_layer=TVFrozenBN).state_dict()
              if not k.startswith("fc.")]
        expected = set(tv)
        for lvl in range(4):
            expected |= {"input_proj.%d.%d.%s" % (lvl, i, n) for i in (0, 1) for n in ("weight", "bias")}
        tp = C.normalize_params("ddetr_transformer", {"spatial_shapes": [[100, 134], [50, 67], [25, 34], [13, 17]]})
        expected |= set(C.shapes("ddetr_transformer", tp, 1)[1])
        for i in range(6):
            expected |= {"class_embed.%d.weight" % i, "class_embed.%d.bias" % i}
            expected |= {"bbox_embed.%d.layers.%d.%s" % (i, j, n) for j in range(3) for n in ("weight", "bias")}
        self.assertEqual(set(sd), expected)
        self.assertEqual(len(sd), 265 + 16 + 232 + 12 + 36)
        for name, shp in (("backbone.0.body.conv1.weight", [64, 3, 7, 7]),
                          ("backbone.0.body.bn1.running_var", [64]),
                          ("backbone.0.body.layer2.0.conv2.weight", [128, 128, 3, 3]),
                          ("backbone.0.body.layer4.0.downsample.0.weight", [2048, 1024, 1, 1]),
                          ("backbone.0.body.layer4.0.downsample.1.running_mean", [2048]),
                          ("backbone.0.body.layer3.5.bn3.weight", [1024]),
                          ("input_proj.0.0.weight", [256, 512, 1, 1]), ("input_proj.2.0.weight", [256, 2048, 1, 1]),
                          ("input_proj.3.0.weight", [256, 2048, 3, 3]), ("input_proj.3.1.bias", [256]),
                          ("query_embed.weight", [300, 512]), ("class_embed.5.weight", [91, 256]),
                          ("bbox_embed.5.layers.2.weight", [4, 256]), ("bbox_embed.0.layers.0.bias", [256])):
            self.assertEqual(ws[name], shp, name)
        self.assertFalse(any(k.endswith("num_batches_tracked") for k in sd))
        # docs/reference-notes.md, "Deformable DETR counts": 40,069,665 unique parameters (FrozenBN buffers are not
        # parameters; the shared heads count once).
        self.assertEqual(sum(t.numel() for t in module.parameters()), 40069665)
        parts = {}
        for name, t in module.named_parameters():
            parts[name.split(".")[0]] = parts.get(name.split(".")[0], 0) + t.numel()
        self.assertEqual(parts, {"backbone": 23454912, "input_proj": 5639168, "transformer": 10665986,
                                 "query_embed": 153600, "class_embed": 23387, "bbox_embed": 132612})
        # requires_grad in the original excludes the stem and layer1 (what main.py prints): 39,847,265.
        frozen = sum(int(np.prod(s)) for k, s in ws.items() if k.endswith(".weight") and len(s) == 4
                     and (k.startswith(BODY + "conv1") or k.startswith(BODY + "layer1.")))
        self.assertEqual(40069665 - frozen, 39847265)


class TestCases(unittest.TestCase):
    def test_defaults_and_errors(self):
        p = C.normalize_params("deformable_detr", {"img_size": [128, 160]})
        self.assertEqual(p, {"img_size": [128, 160], "num_classes": 91, "queries": 300, "d_model": 256, "heads": 8,
                             "enc_layers": 6, "dec_layers": 6, "ffn_dim": 1024, "enc_points": 4, "dec_points": 4,
                             "top_k": 100, "padding_mask": False, "probe": False})
        self.assertEqual(C.normalize_params("deformable_detr", {"img_size": 96})["img_size"], [96, 96])
        self.assertEqual((C.TOLERANCE["deformable_detr"], C.KIND["deformable_detr"]), ("detector", "network"))
        base = {"img_size": [64, 64]}
        with self.assertRaisesRegex(ValueError, "missing required param 'img_size'"):
            C.normalize_params("deformable_detr", {})
        with self.assertRaisesRegex(ValueError, "top_k 2731 exceeds queries \\* num_classes = 2730"):
            C.normalize_params("deformable_detr", dict(base, queries=30, top_k=2731))
        self.assertEqual(C.normalize_params("deformable_detr", dict(base, queries=30, top_k=2730))["top_k"], 2730)
        with self.assertRaisesRegex(ValueError, "d_model 48 is not a multiple of 32"):
            C.normalize_params("deformable_detr", dict(base, d_model=48, heads=4))
        with self.assertRaisesRegex(ValueError, "d_model 64 is not a multiple of heads 3"):
            C.normalize_params("deformable_detr", dict(base, d_model=64, heads=3))
        for bad in ({"with_box_refine": False}, {"as_two_stage": False}, {"spatial_shapes": [[8, 8]]}):
            with self.subTest(bad=bad), self.assertRaisesRegex(ValueError, "unknown params"):
                C.normalize_params("deformable_detr", dict(base, **bad))
        for key in ("num_classes", "queries", "d_model", "heads", "enc_layers", "dec_layers", "ffn_dim", "enc_points",
                    "dec_points", "top_k"):
            for bad in (0, 2.5, True):
                with self.subTest(key=key, bad=bad), self.assertRaises(ValueError):
                    C.normalize_params("deformable_detr", dict(base, **{key: bad}))
        for bad in (0, [64], [64, 0], "64x64", [64.0, 64]):
            with self.subTest(img_size=bad), self.assertRaises(ValueError):
                C.normalize_params("deformable_detr", {"img_size": bad})
        for key in ("padding_mask", "probe"):
            with self.subTest(key=key), self.assertRaises(ValueError):
                C.normalize_params("deformable_detr", dict(base, **{key: 1}))

    def test_builtin_cases(self):
        full, small, b2 = (C.select(n)[0] for n in ("^deformable_detr_r50$", "_small$", "^deformable_detr_r50_b2$"))
        self.assertTrue(C.FIXTURE["deformable_detr_r50"])
        self.assertEqual([c["name"] for c in C.select("^deformable_detr", fixtures_only=True)],
                         ["deformable_detr_r50", "deformable_detr_r50_small", "deformable_detr_r50_b2",
                          "deformable_detr_r50_refine", "deformable_detr_r50_refine_800",
                          "deformable_detr_r50_two_stage", "deformable_detr_r50_two_stage_800"])
        self.assertEqual(C.LARGE & {c["name"] for c in C.select("^deformable_detr")},
                         {"deformable_detr_r50", "deformable_detr_r50_refine_800", "deformable_detr_r50_two_stage_800"})
        ins, _, outs = C.shapes("deformable_detr", full["params"], 1)
        self.assertEqual(ins, {"images": [1, 3, 800, 1066]})
        self.assertEqual(outs, {"pred_logits": [1, 300, 91], "pred_boxes": [1, 300, 4], "scores": [1, 100],
                                "labels": [1, 100], "boxes": [1, 100, 4]})
        ins, _, outs = C.shapes("deformable_detr", small["params"], 1)
        self.assertEqual(outs["stages.c3"], [1, 512, 16, 20])
        self.assertEqual(outs["stages.c5"], [1, 2048, 4, 5])
        self.assertEqual(outs["stages.src"], [1, 426, 256])
        self.assertEqual(outs["stages.memory"], [1, 426, 256])
        self.assertEqual(outs["stages.hs"], [1, 300, 256])
        ins, _, outs = C.shapes("deformable_detr", b2["params"], 2)
        self.assertEqual(list(ins), ["images", "image_mask"])
        self.assertEqual(ins["image_mask"], [2, 128, 128])
        self.assertEqual(outs, {"pred_logits": [2, 50, 91], "pred_boxes": [2, 50, 4], "scores": [2, 30],
                                "labels": [2, 30], "boxes": [2, 30, 4]})

    def test_macs(self):
        full = C.select("^deformable_detr_r50$")[0]["params"]
        total = C.macs("deformable_detr", full, 1)
        tp = C.detr_transformer_params(full)
        self.assertEqual(tp["spatial_shapes"], [[100, 134], [50, 67], [25, 34], [13, 17]])
        self.assertEqual(tp["level_start_index"], [0, 13400, 16750, 17600])
        tr = C.macs("ddetr_transformer", tp, 1)
        heads = 300 * 256 * 91 + 300 * (256 * 256 * 2 + 256 * 4)
        convs = total - tr - heads
        # docs/reference-notes.md, "Deformable DETR counts": ResNet-50 70.0 + input_proj 4.1 GMACs, about 166 in all,
        # at 800x1066.
        self.assertAlmostEqual(convs / 1e9, 74.1, delta=0.1)
        self.assertAlmostEqual(total / 1e9, 166, delta=1)
        self.assertEqual(C.macs("deformable_detr", full, 2), 2 * total)
        # The conv part equals a count of every nn.Conv2d the module runs (forward hooks).
        p = tiny_params(padding_mask=False, probe=False)
        module = C.build_module("deformable_detr", p)
        counted = []

        def hook(mod, inp, out):
            counted.append(out.numel() * mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1])

        for mod in module.modules():
            if isinstance(mod, torch.nn.Conv2d):
                mod.register_forward_hook(hook)
        with torch.no_grad():
            module(torch.zeros(2, 3, 70, 90))
        self.assertEqual(len(counted), 57)
        d, q, c = 64, 9, 7
        want = (sum(counted) + C.macs("ddetr_transformer", C.detr_transformer_params(p), 2)
                + 2 * q * d * c + 2 * q * (d * d * 2 + d * 4))
        self.assertEqual(C.macs("deformable_detr", p, 2), want)

    def test_roles(self):
        self.assertEqual(S.default_role("images", [1, 3, 8, 8], True), (0.0, 1.0))
        self.assertEqual(S.default_role("image_mask", [1, 8, 8], True), (0.0, 0.0))
        self.assertEqual(S.default_role("backbone.0.body.conv1.weight", [64, 3, 7, 7], False),
                         (0.0, 1 / math.sqrt(147)))
        self.assertEqual(S.default_role("backbone.0.body.bn1.running_var", [64], False), (1.0, 0.1))
        self.assertEqual(S.default_role("backbone.0.body.bn1.running_mean", [64], False), (0.0, 0.02))
        self.assertEqual(S.default_role("input_proj.0.1.weight", [256], False), (1.0, 0.1))
        self.assertEqual(S.default_role("class_embed.5.bias", [91], False), (0.0, 0.02))


class TestStoredMask(unittest.TestCase):
    def test_b2_image_mask(self):
        case = C.select("^deformable_detr_r50_b2$")[0]
        module, inputs, _, _, record = E.materialize(case, 1)
        self.assertEqual(list(inputs), ["images", "image_mask"])
        self.assertNotIn("image_mask", record)
        m = inputs["image_mask"]
        self.assertEqual((m.dtype, m.shape), (np.float32, (2, 128, 128)))
        want = np.ones((2, 128, 128), np.float32)
        want[0, :96, :] = 0  # image 0: 96 x 128, bottom padding
        want[1, :, :100] = 0  # image 1: 128 x 100, right padding
        np.testing.assert_array_equal(m, want)
        self.assertEqual(ST.IMAGE_VALID[case["name"]], [(96, 128), (128, 100)])
        # Per level (nearest, source row floor(r * 128 / h)): image 0 has 12, 6, 3 and 2 (of 2: none padded)
        # valid rows; image 1 has 13, 7, 4 (of 4) and 2 (of 2) valid columns.
        masks = [F.interpolate(torch.from_numpy(m != 0)[None].float(), size=hw).to(torch.bool)[0]
                 for hw in ddetr_level_shapes([128, 128])]
        for lvl, (r0, c1) in enumerate(((12, 13), (6, 7), (3, 4), (2, 2))):
            h = masks[lvl].shape[1]
            self.assertEqual(int((~masks[lvl][0, :, 0]).sum()), r0, lvl)
            self.assertEqual(int((~masks[lvl][1, 0, :]).sum()), c1, lvl)
            self.assertTrue(bool(masks[lvl][0, r0:].all()) and not bool(masks[lvl][0, :r0].any()))
            self.assertEqual(int(masks[lvl][1].sum()), h * (h - c1))
        self.assertEqual(level_start_index(ddetr_level_shapes([128, 128])), [0, 256, 320, 336])


if __name__ == "__main__":
    unittest.main()
