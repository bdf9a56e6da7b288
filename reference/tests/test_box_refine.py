"""Iterative box refinement (param ``box_refine``; docs/reference-notes.md, "Box refinement and two-stage") of
``ddetr_transformer`` and ``deformable_detr``: the refined decoder against a hand-written float64 loop (2-d references
switching to 4-d boxes after layer 0, the 4-d valid-ratio scaling and sampling rule), the module against the float64
NumPy transformer with a padded batch, the built-in case through the exporter's path, state_dict names and unique
parameter counts, the detector's shared ``transformer.decoder.bbox_embed`` / ``bbox_embed`` (the top-level copy wins
on load), its heads against a composition of independent parts, MACs and the params' defaults."""

import unittest

import _paths  # noqa: F401
import numpy as np
import torch

import test_ddetr as TD
import test_detr as TDR
from vitbench_ref import cases as C
from vitbench_ref import export as E
from vitbench_ref import stored as ST
from vitbench_ref.modules import (ddetr_transformer_float64, ms_deform_attn_float64,
                                  ms_deform_sample_float64, valid_ratios_float64)

torch.set_num_threads(2)
MLP_PARAMS = 256 * 256 + 256 + 256 * 256 + 256 + 4 * 256 + 4  # 132,612 (docs/reference-notes.md)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def inv_sigmoid(x, eps=1e-5):
    x = np.clip(x, 0, 1)
    return np.log(np.maximum(x, eps) / np.maximum(1 - x, eps))


def mlp(x, w, pre):
    def lin(v, name):
        return v @ w[pre + name + ".weight"].T + w[pre + name + ".bias"]
    return lin(np.maximum(lin(np.maximum(lin(x, "layers.0"), 0), "layers.1"), 0), "layers.2")


class TestTransformerRefinement(unittest.TestCase):
    def case(self, n=2, seed=11, **kw):
        p = TD.small_params(box_refine=True, dec_layers=3, **kw)
        return (p,) + TD.TestModuleVsFloat64.random_case(self, p, n, seed)

    def test_hand_written_refinement(self):
        """Every decoder layer's cross-attention input (hooked) against the references refined by
        hand from the hooked layer outputs, and layer 1's cross-attention output against the 4-d
        sampling rule written out here (loc = c + off / P * wh * 0.5)."""
        p, module, weights, src, pos, mask, outs = self.case()
        dec = module.transformer.decoder
        seen, layer_out = [], []
        for layer in dec.layers:
            layer.cross_attn.register_forward_hook(
                lambda mod, args, out: seen.append([a.numpy().copy() for a in args[:3]] + [out.numpy().copy()]))
            layer.register_forward_hook(lambda mod, args, out: layer_out.append(out.numpy().copy()))
        got = TD.TestModuleVsFloat64.run_module(self, module, src, pos, mask)
        self.assertEqual(len(seen), 3)
        vr = valid_ratios_float64(mask, p["spatial_shapes"])
        self.assertLess(float(vr.min()), 0.8)  # the padding makes the valid-ratio scaling visible
        ref = got["reference_points"]
        for i in range(3):
            ref_in = seen[i][1]
            if i == 0:
                self.assertEqual(ref_in.shape, (2, 11, 3, 2))
                want_in = ref[:, :, None] * vr[:, None]
            else:
                self.assertEqual(ref_in.shape, (2, 11, 3, 4))
                want_in = ref[:, :, None] * np.concatenate([vr, vr], -1)[:, None]
            np.testing.assert_allclose(ref_in, want_in, rtol=0, atol=1e-14, err_msg=str(i))
            tmp = mlp(layer_out[i], weights, "transformer.decoder.bbox_embed.%d." % i)
            if i == 0:  # the 2-d reference only moves the centre; w, h = sigmoid(tmp[2:])
                ref = sigmoid(np.concatenate([tmp[..., :2] + inv_sigmoid(ref), tmp[..., 2:]], -1))
            else:
                ref = sigmoid(tmp + inv_sigmoid(ref))
        np.testing.assert_allclose(got["last_reference"], ref, rtol=0, atol=1e-13)
        np.testing.assert_allclose(got["hs"], layer_out[-1], rtol=0, atol=0)
        # Layer 1's cross-attention with the 4-d sampling rule, by hand.
        query, ref4, memory, out = seen[1]
        w = {k[len("transformer.decoder.layers.1.cross_attn."):]: v for k, v in weights.items()
             if k.startswith("transformer.decoder.layers.1.cross_attn.")}
        n, lq, d = query.shape
        m, nl, pts = p["heads"], 3, p["dec_points"]
        value = memory @ w["value_proj.weight"].T + w["value_proj.bias"]
        value = np.where(mask[..., None] != 0, 0.0, value).reshape(n, -1, m, d // m)
        off = (query @ w["sampling_offsets.weight"].T + w["sampling_offsets.bias"]).reshape(n, lq, m, nl, pts, 2)
        logit = (query @ w["attention_weights.weight"].T + w["attention_weights.bias"]).reshape(n, lq, m, nl * pts)
        attn = np.exp(logit - logit.max(-1, keepdims=True))
        attn = (attn / attn.sum(-1, keepdims=True)).reshape(n, lq, m, nl, pts)
        loc = np.empty_like(off)
        for lvl in range(nl):
            for pt in range(pts):
                c, wh = ref4[:, :, None, lvl, :2], ref4[:, :, None, lvl, 2:]
                loc[:, :, :, lvl, pt] = c + off[:, :, :, lvl, pt] / pts * wh * 0.5
        core = ms_deform_sample_float64(value, p["spatial_shapes"], loc, attn)
        want = core @ w["output_proj.weight"].T + w["output_proj.bias"]
        np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-10)
        # ... which differs from the 2-d rule applied to the box centres.
        as2d = ms_deform_attn_float64(query, ref4[..., :2], memory, mask, w,
                                      {"heads": m, "points": pts, "spatial_shapes": p["spatial_shapes"]})
        self.assertGreater(float(np.abs(as2d - out).max()), 1e-3)

    def test_module_vs_float64_numpy(self):
        p, module, weights, src, pos, mask, outs = self.case()
        self.assertEqual(sorted(outs), ["hs", "last_reference", "memory", "reference_points", "stages.dec0",
                                        "stages.dec1", "stages.enc0"])
        got = TD.TestModuleVsFloat64.run_module(self, module, src, pos, mask)
        refs = []
        want = ddetr_transformer_float64(src, pos, mask, weights, p, refs_out=refs)
        self.assertEqual(sorted(got), sorted(outs))
        self.assertEqual(sorted(want), sorted(outs))
        for k in outs:
            self.assertEqual(list(got[k].shape), outs[k], k)
            np.testing.assert_allclose(got[k], want[k], rtol=1e-10, atol=1e-10, err_msg=k)
        self.assertEqual([r.shape[-1] for r in refs], [4, 4, 4])
        np.testing.assert_array_equal(refs[-1], want["last_reference"])
        # The refinement matters from layer 1 on: the same weights without it (the MLPs dropped) give
        # the same layer-0 output and a different last one.
        p0 = dict(p)
        del p0["box_refine"]
        plain = C.build_module("ddetr_transformer", p0).double()
        plain.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items() if ".bbox_embed." not in k},
                              strict=True)
        base = TD.TestModuleVsFloat64.run_module(self, plain, src, pos, mask)
        np.testing.assert_array_equal(base["stages.dec0"], got["stages.dec0"])
        np.testing.assert_array_equal(base["reference_points"], got["reference_points"])
        self.assertGreater(float(np.abs(base["hs"] - got["hs"]).max()), 1e-3)
        # One decoder layer: last_reference is the 2-d -> 4-d refinement of the initial references.
        p1 = TD.small_params(box_refine=True, dec_layers=1, padding_mask=False, probe=False)
        m1, w1, s1, q1, _, _ = TD.TestModuleVsFloat64.random_case(self, p1, 1, 5)
        g1 = TD.TestModuleVsFloat64.run_module(self, m1, s1, q1, None)
        tmp = mlp(g1["hs"], w1, "transformer.decoder.bbox_embed.0.")
        tmp[..., :2] += inv_sigmoid(g1["reference_points"])
        np.testing.assert_allclose(g1["last_reference"], sigmoid(tmp), rtol=0, atol=1e-13)

    def test_builtin_case_float32(self):
        case = C.select("^ddetr_transformer_refine_b2$")[0]
        self.assertTrue(C.FIXTURE[case["name"]])
        self.assertEqual(case["params"], dict(C.select("^ddetr_transformer_small_b2$")[0]["params"], box_refine=True))
        module, inputs, weights, shape_info, record = E.materialize(case, 1)
        self.assertEqual(list(inputs), ["src", "pos", "padding_mask"])
        self.assertNotIn("padding_mask", record)
        self.assertEqual(shape_info[2]["last_reference"], [2, 20, 4])
        self.assertEqual(record["transformer.decoder.bbox_embed.2.layers.2.weight"], {"center": 0.0, "scale": 0.125})
        outputs = E.run_reference(module, inputs)
        refs = ddetr_transformer_float64(inputs["src"], inputs["pos"], inputs["padding_mask"], weights, case["params"])
        for k, out in outputs.items():
            err = np.abs(out.astype(np.float64) - refs[k])
            self.assertLess(float(err.max()), 1e-4, k)
            self.assertLess(float(np.sum(err ** 2) / np.sum(refs[k] ** 2)), 1e-10, k)
        lr = outputs["last_reference"]
        self.assertTrue(np.all((lr > 0.01) & (lr < 0.99)))
        self.assertGreater(float(lr.max() - lr.min()), 0.3)
        # The stored padded-batch mask: 61x77 padded, image 0 61x41 (right padding), image 1 48x77 (bottom).
        vr = valid_ratios_float64(inputs["padding_mask"], case["params"]["spatial_shapes"])
        self.assertEqual(ST.IMAGE_SIZES[case["name"]], ((61, 77), [(61, 41), (48, 77)]))
        np.testing.assert_allclose(vr[0, :, 1], 1)
        np.testing.assert_allclose(vr[1, :, 0], 1)
        np.testing.assert_allclose(vr[0, :, 0], [0.6, 0.6, 2 / 3, 1], rtol=0, atol=1e-15)
        np.testing.assert_allclose(vr[1, :, 1], [0.875, 1, 1, 1], rtol=0, atol=1e-15)

    def test_state_dict_and_count(self):
        p = C.normalize_params("ddetr_transformer", {"spatial_shapes": TD.DEFAULT_SHAPES, "box_refine": True})
        module = C.build_module("ddetr_transformer", p)
        sd = module.state_dict()
        _, ws, outs = C.shapes("ddetr_transformer", p, 1)
        self.assertEqual({k: list(v.shape) for k, v in sd.items()}, ws)
        extra = set(ws) - set(C.shapes("ddetr_transformer", dict(p, box_refine=False), 1)[1])
        self.assertEqual(extra, {"transformer.decoder.bbox_embed.%d.layers.%d.%s" % (i, j, n)
                                 for i in range(6) for j in range(3) for n in ("weight", "bias")})
        self.assertEqual(ws["transformer.decoder.bbox_embed.5.layers.2.weight"], [4, 256])
        self.assertEqual(outs["last_reference"], [1, 300, 4])
        # Independent clones: 10,665,986 + 6 * 132,612 + 153,600 unique parameters.
        self.assertEqual(MLP_PARAMS, 132612)
        self.assertEqual(sum(t.numel() for t in module.parameters()), 10665986 + 6 * 132612 + 153600)
        bb = module.transformer.decoder.bbox_embed
        self.assertEqual(len({id(m) for m in bb}), 6)

    def test_params_and_macs(self):
        base = {"spatial_shapes": [[2, 3], [1, 1]]}
        p = C.normalize_params("ddetr_transformer", base)
        self.assertNotIn("box_refine", p)  # default false: not written out (committed case.json files)
        self.assertEqual(C.normalize_params("ddetr_transformer", dict(base, box_refine=False)), p)
        pr = C.normalize_params("ddetr_transformer", dict(base, box_refine=True))
        self.assertEqual(pr, dict(p, box_refine=True))
        self.assertEqual(list(pr)[-1], "box_refine")
        for bad in (1, 0, "true", None):
            with self.subTest(bad=bad), self.assertRaisesRegex(ValueError, "box_refine must be true or false"):
                C.normalize_params("ddetr_transformer", dict(base, box_refine=bad))
        full = C.select("^ddetr_transformer$")[0]["params"]
        n, q, d = 2, 300, 256
        self.assertEqual(C.macs("ddetr_transformer", dict(full, box_refine=True), n)
                         - C.macs("ddetr_transformer", full, n), 6 * n * q * (2 * d * d + 4 * d))
        small = C.select("^ddetr_transformer_refine_b2$")[0]["params"]
        self.assertEqual(C.macs("ddetr_transformer", small, 2)
                         - C.macs("ddetr_transformer", C.select("^ddetr_transformer_small_b2$")[0]["params"], 2),
                         3 * 2 * 20 * (2 * 64 * 64 + 4 * 64))


def manual_refine_detector(images, image_mask, weights, p):
    """:func:`test_detr.manual_detector` with box refinement: the NumPy transformer refines with the
    TOP-LEVEL ``bbox_embed.{i}`` (what the loaded module holds) and the box head adds
    inverse_sigmoid of the reference after layer dec_layers - 2."""
    w = dict(weights)
    for k in list(w):
        if k.startswith("transformer.decoder.bbox_embed."):
            w[k] = weights[k[len("transformer.decoder."):]]
    return TDR.manual_detector(images, image_mask, w, p)


class TestDetectorRefinement(unittest.TestCase):
    def test_shared_bbox_embed_top_level_wins(self):
        p = TDR.tiny_params(dec_layers=3, padding_mask=False, probe=False, box_refine=True)
        module = C.build_module("deformable_detr", p)
        self.assertIs(module.transformer.decoder.bbox_embed, module.bbox_embed)
        self.assertIsNot(module.bbox_embed[0], module.bbox_embed[2])
        self.assertIsNot(module.class_embed[0], module.class_embed[2])
        self.assertEqual(list(dict(module.named_children())),
                         ["transformer", "class_embed", "bbox_embed", "query_embed", "input_proj", "backbone"])
        sd = module.state_dict()
        self.assertIn("transformer.decoder.bbox_embed.1.layers.0.weight", sd)
        self.assertIn("bbox_embed.1.layers.0.weight", sd)
        self.assertEqual({k: list(v.shape) for k, v in sd.items()}, C.shapes("deformable_detr", p, 1)[1])
        weights = TDR.synth_weights(p, 1)
        for i in range(3):
            self.assertFalse(np.array_equal(weights["transformer.decoder.bbox_embed.%d.layers.0.weight" % i],
                                            weights["bbox_embed.%d.layers.0.weight" % i]))
        module.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
        for i in range(3):
            for j in range(3):
                for n in ("weight", "bias"):
                    got = getattr(module.transformer.decoder.bbox_embed[i].layers[j], n).detach().numpy()
                    np.testing.assert_array_equal(got, weights["bbox_embed.%d.layers.%d.%s" % (i, j, n)])
            np.testing.assert_array_equal(module.class_embed[i].weight.detach().numpy(),
                                          weights["class_embed.%d.weight" % i])
        # The transformer.decoder.bbox_embed.* values have no effect; the bbox_embed.* values do.
        images, _ = TDR.TestDetector.inputs(self, p, 1)
        x = torch.from_numpy(images)
        with torch.no_grad():
            a = module(x)
            alt = dict(weights)
            alt.update({k: v + 1 for k, v in weights.items() if k.startswith("transformer.decoder.bbox_embed.")})
            module.load_state_dict({k: torch.from_numpy(v) for k, v in alt.items()}, strict=True)
            b = module(x)
            alt["bbox_embed.0.layers.2.bias"] = weights["bbox_embed.0.layers.2.bias"] + 0.5
            module.load_state_dict({k: torch.from_numpy(v) for k, v in alt.items()}, strict=True)
            c = module(x)
        for k in a:
            np.testing.assert_array_equal(a[k].numpy(), b[k].numpy(), err_msg=k)
        self.assertGreater(float((c["pred_boxes"] - a["pred_boxes"]).abs().max()), 1e-3)

    def test_against_composition_with_padding(self):
        for dec_layers in (3, 1):
            with self.subTest(dec_layers=dec_layers):
                p = TDR.tiny_params(box_refine=True, dec_layers=dec_layers, probe=dec_layers == 3)
                weights = TDR.synth_weights(p, 2)
                images, mask = TDR.TestDetector.inputs(self, p, 2)
                want = manual_refine_detector(images, mask, weights, p)
                module = TDR.TestDetector.build(self, p, weights, torch.float64)
                with torch.no_grad():
                    got = {k: v.numpy() for k, v in module(torch.from_numpy(images).double(),
                                                           torch.from_numpy(mask)).items()}
                outs = C.shapes("deformable_detr", p, 2)[2]
                self.assertEqual(sorted(got), sorted(outs))
                for k in outs:
                    np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-9, err_msg=k)
                self.assertEqual(len([k for k in weights if k.startswith("transformer.decoder.bbox_embed.")]),
                                 6 * dec_layers)

    def test_state_dict_and_count(self):
        p = C.normalize_params("deformable_detr", {"img_size": [800, 1066], "box_refine": True})
        module = C.build_module("deformable_detr", p)
        sd = module.state_dict()
        _, ws, _ = C.shapes("deformable_detr", p, 1)
        self.assertEqual({k: list(v.shape) for k, v in sd.items()}, ws)
        self.assertEqual(len(sd), 265 + 16 + 232 + 36 + 12 + 36)
        # docs/reference-notes.md, "Deformable DETR counts": 40,849,660 unique parameters (the shared decoder
        # bbox_embed counts once), 40,627,260 requiring grad in the original (stem and layer1 frozen).
        total = sum(t.numel() for t in module.parameters())
        self.assertEqual(total, 40849660)
        self.assertEqual(total - (40069665 - 39847265), 40627260)
        parts = {}
        for name, t in module.named_parameters():
            parts[name.split(".")[0]] = parts.get(name.split(".")[0], 0) + t.numel()
        # named_parameters lists a shared tensor once, under its first name: the bbox MLPs appear as
        # transformer.decoder.bbox_embed.* (the transformer is registered first, as in the original).
        self.assertEqual(parts, {"backbone": 23454912, "input_proj": 5639168, "transformer": 10665986 + 6 * 132612,
                                 "query_embed": 153600, "class_embed": 6 * 23387})

    def test_params_macs_and_cases(self):
        base = {"img_size": [128, 160]}
        p = C.normalize_params("deformable_detr", base)
        self.assertNotIn("box_refine", p)
        self.assertEqual(C.normalize_params("deformable_detr", dict(base, box_refine=False)), p)
        self.assertEqual(C.normalize_params("deformable_detr", dict(base, box_refine=True)), dict(p, box_refine=True))
        with self.assertRaisesRegex(ValueError, "box_refine must be true or false"):
            C.normalize_params("deformable_detr", dict(base, box_refine=1))
        self.assertTrue(C.detr_transformer_params(dict(p, box_refine=True))["box_refine"])
        self.assertNotIn("box_refine", C.detr_transformer_params(p))
        full = C.select("^deformable_detr_r50_refine_800$")[0]["params"]
        # The 800x1066 detectors have fixtures too, checked only by vitbench check (builtin.json "large").
        self.assertTrue(C.FIXTURE["deformable_detr_r50_refine_800"])
        self.assertIn("deformable_detr_r50_refine_800", C.LARGE)
        self.assertTrue(C.FIXTURE["deformable_detr_r50_refine"])
        self.assertEqual(C.macs("deformable_detr", full, 1) - C.macs("deformable_detr", C.select("^deformable_detr_r50$")[0]["params"], 1),
                         6 * 300 * (2 * 256 * 256 + 4 * 256))
        ins, ws, outs = C.shapes("deformable_detr", C.select("^deformable_detr_r50_refine$")[0]["params"], 1)
        self.assertEqual(ins, {"images": [1, 3, 128, 160]})
        self.assertEqual(outs, {"pred_logits": [1, 300, 91], "pred_boxes": [1, 300, 4], "scores": [1, 100],
                                "labels": [1, 100], "boxes": [1, 100, 4]})
        self.assertEqual(len(ws), 265 + 16 + 232 + 36 + 12 + 36)


if __name__ == "__main__":
    unittest.main()
