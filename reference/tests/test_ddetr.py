"""Deformable DETR's transformer (op kind ``ddetr_transformer``): the module against the float64
NumPy recomputation (with a padded batch), state_dict names and parameter counts (docs/reference-notes.md,
"Deformable DETR counts"), valid ratios and encoder reference points against hand-computed values, the stored
padding mask of ``ddetr_transformer_small_b2``, and the case rules (params, errors, shapes, MACs,
roles)."""

import math
import unittest

import _paths  # noqa: F401
import numpy as np
import torch

from vitbench_ref import cases as C
from vitbench_ref import export as E
from vitbench_ref import stored as ST
from vitbench_ref import synth as S
from vitbench_ref.modules import (DDETRTransformer, ddetr_transformer_float64, encoder_reference_points,
                                  encoder_reference_points_float64, valid_ratios_float64, valid_ratios_from_masks)

torch.set_num_threads(2)
DEFAULT_SHAPES = [[100, 134], [50, 67], [25, 34], [13, 17]]


def padded_mask(spatial_shapes, n, valid):
    """A flat [N, S] float mask: image i has valid (rows, cols) = valid[i][lvl] on level lvl."""
    out = []
    for i in range(n):
        levels = []
        for lvl, (h, w) in enumerate(spatial_shapes):
            m = np.ones((h, w))
            vh, vw = valid[i][lvl]
            m[:vh, :vw] = 0
            levels.append(m.reshape(-1))
        out.append(np.concatenate(levels))
    return np.array(out)


def small_params(**kw):
    p = {"spatial_shapes": [[6, 7], [3, 4], [2, 2]], "d_model": 24, "heads": 3, "enc_layers": 2, "dec_layers": 2,
         "ffn_dim": 40, "enc_points": 3, "dec_points": 2, "queries": 11, "padding_mask": True, "probe": True}
    p.update(kw)
    return C.normalize_params("ddetr_transformer", p)


class TestModuleVsFloat64(unittest.TestCase):
    def random_case(self, p, n, seed):
        rng = np.random.default_rng(seed)
        ins, ws, outs = C.shapes("ddetr_transformer", p, n)
        module = C.build_module("ddetr_transformer", p).double()
        weights = {}
        for k, shp in ws.items():
            if k.endswith("query_embed.weight"):
                a = rng.normal(size=shp)
            elif len(shp) == 2:
                a = rng.uniform(-1, 1, size=shp) / math.sqrt(shp[1])
            elif k.endswith("norm1.weight") or k.endswith("norm2.weight") or k.endswith("norm3.weight"):
                a = rng.uniform(0.9, 1.1, size=shp)
            else:
                a = rng.uniform(-0.05, 0.05, size=shp)
            weights[k] = a
        module.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
        src = rng.uniform(-1, 1, size=ins["src"])
        pos = rng.uniform(-1, 1, size=ins["pos"])
        mask = None
        if p["padding_mask"]:
            mask = padded_mask(p["spatial_shapes"], n, [[(5, 7), (3, 3), (2, 2)], [(6, 4), (2, 4), (1, 1)]][:n])
        return module, weights, src, pos, mask, outs

    def run_module(self, module, src, pos, mask):
        args = [torch.from_numpy(src), torch.from_numpy(pos)]
        if mask is not None:
            args.append(torch.from_numpy(mask) != 0)
        with torch.no_grad():
            return {k: v.numpy() for k, v in module(*args).items()}

    def test_float64_module_matches_numpy_with_padding(self):
        p = small_params()
        module, weights, src, pos, mask, outs = self.random_case(p, 2, 1)
        got = self.run_module(module, src, pos, mask)
        want = ddetr_transformer_float64(src, pos, mask, weights, p)
        self.assertEqual(sorted(got), sorted(outs))
        self.assertEqual(sorted(want), sorted(outs))
        for k in outs:
            self.assertEqual(list(got[k].shape), outs[k], k)
            np.testing.assert_allclose(got[k], want[k], rtol=1e-10, atol=1e-10, err_msg=k)
        # The padding matters: without it (valid ratios 1, nothing masked) every output moves.
        unpadded = self.run_module(module, src, pos, None)
        for k in ("memory", "hs", "stages.enc0", "stages.dec0"):
            self.assertGreater(float(np.max(np.abs(unpadded[k] - got[k]))), 1e-3, k)
        np.testing.assert_array_equal(unpadded["reference_points"], got["reference_points"])
        want_np = ddetr_transformer_float64(src, pos, None, weights, dict(p, padding_mask=False))
        np.testing.assert_allclose(unpadded["hs"], want_np["hs"], rtol=1e-10, atol=1e-10)
        # hs[-1] is the last decoder layer: with one decoder layer it equals stages.dec0.
        p1 = small_params(dec_layers=1, padding_mask=False)
        module1, _, src1, pos1, _, _ = self.random_case(p1, 1, 2)
        out1 = self.run_module(module1, src1, pos1, None)
        np.testing.assert_array_equal(out1["hs"], out1["stages.dec0"])

    def test_float32_within_detector_class(self):
        # The exporter's path: float32 torch against the float64 recomputation on the built-in small case.
        case = C.select("ddetr_transformer_small_b2$")[0]
        module, inputs, weights, shape_info, record = E.materialize(case, 1)
        self.assertEqual(list(inputs), ["src", "pos", "padding_mask"])
        self.assertNotIn("padding_mask", record)
        self.assertEqual(record["query_embed.weight"], {"center": 0.0, "scale": 1.0})
        outputs = E.run_reference(module, inputs)
        refs = ddetr_transformer_float64(inputs["src"], inputs["pos"], inputs["padding_mask"], weights, case["params"])
        for k, out in outputs.items():
            err = np.abs(out.astype(np.float64) - refs[k])
            self.assertLess(float(err.max()), 1e-4, k)
            self.assertLess(float(np.sum(err ** 2) / np.sum(refs[k] ** 2)), 1e-10, k)
        # the reference points spread (query_embed role (0, 1)) and stay inside (0, 1)
        rp = outputs["reference_points"]
        self.assertTrue(np.all((rp > 0) & (rp < 1)))
        self.assertGreater(float(rp.max() - rp.min()), 0.2)

    def test_no_probe(self):
        p = small_params(probe=False, padding_mask=False)
        module, weights, src, pos, mask, outs = self.random_case(p, 1, 3)
        self.assertEqual(sorted(outs), ["hs", "memory", "reference_points"])
        got = self.run_module(module, src, pos, mask)
        self.assertEqual(sorted(got), sorted(outs))
        want = ddetr_transformer_float64(src, pos, None, weights, p)
        for k in outs:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-10, atol=1e-10, err_msg=k)


class TestStateDict(unittest.TestCase):
    def test_default_names_and_counts(self):
        p = C.normalize_params("ddetr_transformer", {"spatial_shapes": DEFAULT_SHAPES})
        module = C.build_module("ddetr_transformer", p)
        sd = module.state_dict()
        _, ws, _ = C.shapes("ddetr_transformer", p, 1)
        self.assertEqual(sorted(sd), sorted(ws))
        for k, t in sd.items():
            self.assertEqual(list(t.shape), ws[k], k)
        count = {"transformer": 0, "query_embed": 0}
        for k, shp in ws.items():
            count[k.split(".")[0]] += int(np.prod(shp))
        self.assertEqual(count, {"transformer": 10665986, "query_embed": 153600})  # docs/reference-notes.md
        self.assertEqual(sum(t.numel() for t in module.parameters()), 10665986 + 153600)
        enc = sum(int(np.prod(s)) for k, s in ws.items() if k.startswith("transformer.encoder.layers.0."))
        dec = sum(int(np.prod(s)) for k, s in ws.items() if k.startswith("transformer.decoder.layers.0."))
        self.assertEqual((enc, dec), (756864, 1020544))
        # The names of the original detector (models/deformable_transformer.py, deformable_detr.py).
        for name, shp in (("transformer.level_embed", [4, 256]),
                          ("transformer.encoder.layers.0.self_attn.sampling_offsets.weight", [256, 256]),
                          ("transformer.encoder.layers.5.self_attn.attention_weights.bias", [128]),
                          ("transformer.encoder.layers.3.norm1.weight", [256]),
                          ("transformer.encoder.layers.3.linear1.weight", [1024, 256]),
                          ("transformer.encoder.layers.3.linear2.weight", [256, 1024]),
                          ("transformer.encoder.layers.3.norm2.bias", [256]),
                          ("transformer.decoder.layers.0.cross_attn.value_proj.weight", [256, 256]),
                          ("transformer.decoder.layers.5.cross_attn.output_proj.bias", [256]),
                          ("transformer.decoder.layers.2.norm1.weight", [256]),
                          ("transformer.decoder.layers.2.self_attn.in_proj_weight", [768, 256]),
                          ("transformer.decoder.layers.2.self_attn.in_proj_bias", [768]),
                          ("transformer.decoder.layers.2.self_attn.out_proj.weight", [256, 256]),
                          ("transformer.decoder.layers.2.self_attn.out_proj.bias", [256]),
                          ("transformer.decoder.layers.2.norm2.weight", [256]),
                          ("transformer.decoder.layers.2.linear1.bias", [1024]),
                          ("transformer.decoder.layers.2.norm3.bias", [256]),
                          ("transformer.reference_points.weight", [2, 256]),
                          ("transformer.reference_points.bias", [2]),
                          ("query_embed.weight", [300, 512])):
            self.assertEqual(ws[name], shp, name)
        self.assertEqual(len(ws), 1 + 6 * 16 + 6 * 22 + 2 + 1)
        self.assertNotIn("transformer.encoder.layers.6.norm1.weight", ws)

    def test_small_case_weights_match_module(self):
        for case in C.select("^ddetr_transformer"):
            module = C.build_module(case["op"], case["params"])
            _, ws, _ = C.shapes(case["op"], case["params"], case["batch"])
            self.assertEqual({k: list(v.shape) for k, v in module.state_dict().items()}, ws)


class TestValidRatiosAndReferencePoints(unittest.TestCase):
    # Level 0 is 4x5 with 3 valid rows and 4 valid columns; level 1 is 2x3 with 2 valid columns.
    SHAPES = [[4, 5], [2, 3]]

    def mask(self):
        return padded_mask(self.SHAPES, 1, [[(3, 4), (2, 2)]])

    def test_valid_ratios(self):
        want = [[[0.8, 0.75], [2 / 3, 1.0]]]  # (valid_W / W, valid_H / H)
        np.testing.assert_allclose(valid_ratios_float64(self.mask(), self.SHAPES), want, rtol=0, atol=1e-15)
        m = torch.from_numpy(self.mask()) != 0
        levels = [m[:, :20].reshape(1, 4, 5), m[:, 20:].reshape(1, 2, 3)]
        np.testing.assert_allclose(valid_ratios_from_masks(levels, torch.float64).numpy(), want, rtol=0, atol=1e-15)
        # Only the first row / column count: padding elsewhere does not change the ratios.
        odd = self.mask()
        odd[0, 2 * 5 + 1] = 1  # level 0, row 2, column 1
        np.testing.assert_allclose(valid_ratios_float64(odd, self.SHAPES), want, rtol=0, atol=1e-15)

    def test_encoder_reference_points(self):
        vr = valid_ratios_float64(self.mask(), self.SHAPES)
        ref = encoder_reference_points_float64(self.SHAPES, vr)
        self.assertEqual(ref.shape, (1, 26, 2, 2))
        # Level 0, row 0, col 0: base ((0.5) / (0.8*5), 0.5 / (0.75*4)) = (1/8, 1/6); times the ratios of
        # level 0 -> (0.1, 0.125), of level 1 -> (1/12, 1/6).
        np.testing.assert_allclose(ref[0, 0], [[0.1, 0.125], [1 / 12, 1 / 6]], rtol=0, atol=1e-15)
        # Level 1, row 1, col 1 (index 20 + 4): base (1.5 / (2/3*3), 1.5 / (1*2)) = (0.75, 0.75);
        # on level 0 -> (0.6, 0.5625), on level 1 -> (0.5, 0.75).
        np.testing.assert_allclose(ref[0, 24], [[0.6, 0.5625], [0.5, 0.75]], rtol=0, atol=1e-15)
        # Level 0, row 3 (padded), col 4 (padded): base (4.5/4, 3.5/3).
        np.testing.assert_allclose(ref[0, 19, 0], [4.5 / 4 * 0.8, 3.5 / 3 * 0.75], rtol=0, atol=1e-15)
        # On its own level every reference is its pixel centre, whatever the padding.
        for lvl, (st, (h, w)) in enumerate(zip([0, 20], self.SHAPES)):
            rows, cols = np.divmod(np.arange(h * w), w)
            np.testing.assert_allclose(ref[0, st:st + h * w, lvl], np.stack([(cols + 0.5) / w, (rows + 0.5) / h], -1),
                                       rtol=0, atol=1e-15)
        # The torch version (float64 and float32).
        got = encoder_reference_points(self.SHAPES, torch.from_numpy(vr)).numpy()
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15)
        got32 = encoder_reference_points(self.SHAPES, torch.from_numpy(vr).float()).numpy()
        np.testing.assert_allclose(got32, ref, rtol=0, atol=1e-6)
        # Without padding: ((col + 0.5)/W, (row + 0.5)/H) on every level.
        ones = encoder_reference_points_float64(self.SHAPES, np.ones((1, 2, 2)))
        np.testing.assert_allclose(ones[0, 24], [[0.5, 0.75], [0.5, 0.75]], rtol=0, atol=1e-15)


class TestStoredMask(unittest.TestCase):
    def test_small_b2_mask(self):
        case = C.select("ddetr_transformer_small_b2$")[0]
        ins = C.shapes(case["op"], case["params"], 2)[0]
        pm = ST.stored_inputs(case, ins)["padding_mask"]
        self.assertEqual((pm.dtype, pm.shape), (np.float32, (2, 108)))
        self.assertEqual(set(np.unique(pm)), {0.0, 1.0})
        shapes = case["params"]["spatial_shapes"]
        # Nearest interpolation of the image masks (61x77 padded; image 0 61x50, image 1 39x77) by hand:
        # source index floor(dst * in / out).
        (hp, wp), images = ST.IMAGE_SIZES[case["name"]]
        for i, (vh, vw) in enumerate(images):
            levels = []
            for h, w in shapes:
                ys = np.floor(np.arange(h) * np.float32(hp / h)).astype(int)
                xs = np.floor(np.arange(w) * np.float32(wp / w)).astype(int)
                levels.append(((ys[:, None] >= vh) | (xs[None, :] >= vw)).reshape(-1))
            np.testing.assert_array_equal(pm[i], np.concatenate(levels).astype(np.float32))
        vr = valid_ratios_float64(pm, shapes)
        np.testing.assert_allclose(vr[0], [[0.7, 1], [0.8, 1], [2 / 3, 1], [1, 1]], rtol=0, atol=1e-15)
        np.testing.assert_allclose(vr[1], [[1, 0.75], [1, 0.75], [1, 1], [1, 1]], rtol=0, atol=1e-15)


class TestCaseRules(unittest.TestCase):
    def test_defaults_written_out(self):
        p = C.normalize_params("ddetr_transformer", {"spatial_shapes": [[2, 3], [1, 1]]})
        self.assertEqual(p, {"spatial_shapes": [[2, 3], [1, 1]], "level_start_index": [0, 6], "d_model": 256,
                             "heads": 8, "enc_layers": 6, "dec_layers": 6, "ffn_dim": 1024, "enc_points": 4,
                             "dec_points": 4, "queries": 300, "padding_mask": False, "probe": False})
        self.assertEqual(C.normalize_params("ddetr_transformer", {"spatial_shapes": [[2, 3], [1, 1]],
                                                                  "level_start_index": [0, 6]}), p)
        self.assertEqual(C.TOLERANCE["ddetr_transformer"], "detector")
        self.assertEqual(C.KIND["ddetr_transformer"], "network")
        case = C.select("^ddetr_transformer$")[0]
        self.assertEqual(case["params"]["level_start_index"], [0, 13400, 16750, 17600])
        want_sampled = {"memory": {"axis": 1, "step": 64}}
        want_sampled.update({"stages.enc%d" % i: {"axis": 1, "step": 64} for i in range(5)})
        want_sampled.update({"stages.dec%d" % i: {"axis": 1, "step": 4} for i in range(1, 5)})
        self.assertEqual(case["sampled_outputs"], want_sampled)
        ins, ws, outs = C.shapes(case["op"], case["params"], 1)
        self.assertEqual(ins, {"src": [1, 17821, 256], "pos": [1, 17821, 256]})
        want = {"memory": [1, 17821, 256], "hs": [1, 300, 256], "reference_points": [1, 300, 2]}
        want.update({"stages.enc%d" % i: [1, 17821, 256] for i in range(5)})
        want.update({"stages.dec%d" % i: [1, 300, 256] for i in range(5)})
        self.assertEqual(outs, want)
        self.assertEqual(C.sampled_shape(outs["memory"], case["sampled_outputs"]["memory"]), [1, 279, 256])
        small = C.select("ddetr_transformer_small_b2$")[0]
        ins = C.shapes(small["op"], small["params"], 2)[0]
        self.assertEqual(list(ins), ["src", "pos", "padding_mask"])
        self.assertEqual(ins["padding_mask"], [2, 108])

    def test_errors(self):
        base = {"spatial_shapes": [[2, 3], [1, 1]]}
        with self.assertRaisesRegex(ValueError, "missing required param 'spatial_shapes'"):
            C.normalize_params("ddetr_transformer", {})
        with self.assertRaisesRegex(ValueError, "d_model 100 is not a multiple of heads 8"):
            C.normalize_params("ddetr_transformer", dict(base, d_model=100))
        with self.assertRaisesRegex(ValueError, r"level_start_index.*\[0, 6\]"):
            C.normalize_params("ddetr_transformer", dict(base, level_start_index=[0, 5]))
        with self.assertRaisesRegex(ValueError, "unknown params"):
            C.normalize_params("ddetr_transformer", dict(base, with_box_refine=True))
        for key in ("d_model", "heads", "enc_layers", "dec_layers", "ffn_dim", "enc_points", "dec_points", "queries"):
            for bad in (0, 1.5, True):
                with self.subTest(key=key, bad=bad), self.assertRaises(ValueError):
                    C.normalize_params("ddetr_transformer", dict(base, **{key: bad}))
        for key in ("padding_mask", "probe"):
            with self.subTest(key=key), self.assertRaises(ValueError):
                C.normalize_params("ddetr_transformer", dict(base, **{key: 1}))
        for bad in ([], [[2]], [[0, 3]], "4x4"):
            with self.subTest(spatial_shapes=bad), self.assertRaises(ValueError):
                C.normalize_params("ddetr_transformer", dict(base, spatial_shapes=bad))
        with self.assertRaises(ValueError):
            DDETRTransformer([[2, 2]], d_model=10, heads=4)

    def test_macs(self):
        case = C.select("^ddetr_transformer$")[0]
        n, s, d, f, q, m, nl, pts, hd = 1, 17821, 256, 1024, 300, 8, 4, 4, 32
        msd_enc = s * d * d + s * d * (m * nl * pts * 2) + s * d * (m * nl * pts) + s * d * d + s * m * nl * pts * hd * 5
        msd_dec = s * d * d + q * d * (m * nl * pts * 2) + q * d * (m * nl * pts) + q * d * d + q * m * nl * pts * hd * 5
        enc = msd_enc + 2 * s * d * f
        dec = msd_dec + 2 * q * d * 3 * d + q * d * d + 2 * q * q * d + 2 * q * d * f
        self.assertEqual(C.macs(case["op"], case["params"], n), 6 * enc + 6 * dec + q * d * 2)
        # docs/reference-notes.md, "Deformable DETR counts": about 13.8 GMACs per encoder layer and 1.5 per decoder
        # layer at 800x1066.
        self.assertAlmostEqual(enc / 1e9, 13.8, delta=0.05)
        self.assertAlmostEqual(dec / 1e9, 1.5, delta=0.1)
        # Linear in the batch.
        self.assertEqual(C.macs(case["op"], case["params"], 2), 2 * C.macs(case["op"], case["params"], 1))
        small = C.select("ddetr_transformer_small_b2$")[0]["params"]
        p2 = dict(small, enc_layers=0, dec_layers=0)  # only the reference_points Linear remains
        self.assertEqual(C.macs("ddetr_transformer", p2, 2), 2 * 20 * 64 * 2)

    def test_roles(self):
        self.assertEqual(S.default_role("query_embed.weight", [300, 512], False), (0.0, 1.0))
        self.assertEqual(S.default_role("transformer.level_embed", [4, 256], False), (0.0, 0.02))
        self.assertEqual(S.default_role("transformer.decoder.layers.0.self_attn.in_proj_weight", [768, 256], False),
                         (0.0, 1 / 16))
        self.assertEqual(S.default_role("transformer.decoder.layers.0.self_attn.in_proj_bias", [768], False),
                         (0.0, 0.02))
        self.assertEqual(S.default_role("transformer.decoder.layers.0.norm3.weight", [256], False), (1.0, 0.1))
        self.assertEqual(S.default_role("src", [1, 10, 256], True), (0.0, 1.0))
        self.assertEqual(S.default_role("pos", [1, 10, 256], True), (0.0, 1.0))


if __name__ == "__main__":
    unittest.main()
