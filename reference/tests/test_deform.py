"""Deformable attention (MSDeformAttn and its grid_sample core) and torchvision's deform_conv2d:
the reference modules against float64 recomputations written from the CUDA kernel / the spec's
sampling rule, hand-checked coordinate conventions, parameter counts, case rules (params, errors,
MACs, sampled outputs) and the stored border inputs."""

import math
import unittest

import _paths  # noqa: F401
import numpy as np
import torch

from vitbench_ref import cases as C
from vitbench_ref import stored as ST
from vitbench_ref import synth as S
from vitbench_ref.modules import (DeformConv2d, MSDeformAttn, MSDeformAttnCore, deform_conv2d_float64,
                                  ms_deform_attn_float64, ms_deform_sample_float64)

torch.set_num_threads(2)
TIGHT = dict(rtol=1e-12, atol=1e-12)


def rand(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def edge_locs64(size):
    """Normalized locations (float64) whose pixel coordinate loc*size - 0.5 is on the edges."""
    pix = [-1, size, 0, size - 1, -1 - 1e-3, -1 + 1e-3, size - 1e-3, size + 1e-3, -0.5, size - 0.5]
    return [(t + 0.5) / size for t in pix] + [-0.3, 1.4, 0.0, 1.0]


class TestMSDeformCore(unittest.TestCase):
    def core(self, shapes, value, loc, attn):
        with torch.no_grad():
            return MSDeformAttnCore(shapes)(torch.from_numpy(value), torch.from_numpy(loc),
                                            torch.from_numpy(attn)).numpy()

    def test_random_locations_float64(self):
        rng = np.random.default_rng(1)
        shapes = [[7, 5], [4, 3], [2, 2], [1, 3]]
        n, lq, m, d, p = 2, 13, 3, 5, 4
        s = sum(h * w for h, w in shapes)
        value = rand(rng, n, s, m, d)
        loc = rand(rng, n, lq, m, len(shapes), p, 2, lo=-0.2, hi=1.2)
        attn = rand(rng, n, lq, m, len(shapes), p, lo=0, hi=1)
        ref = ms_deform_sample_float64(value, shapes, loc, attn, chunk=5)  # chunks of queries too
        np.testing.assert_allclose(self.core(shapes, value, loc, attn), ref, **TIGHT)

    def test_border_locations_float64(self):
        rng = np.random.default_rng(2)
        shapes = [[6, 4], [3, 2], [1, 1]]
        n, m, d, p = 1, 2, 3, 4
        xs = [edge_locs64(w) for _, w in shapes]
        ys = [edge_locs64(h) for h, _ in shapes]
        lq = len(xs[0]) * len(ys[0])  # every (x, y) edge combination
        loc = np.empty((n, lq, m, len(shapes), p, 2))
        for lid in range(len(shapes)):
            grid = np.array([(x, y) for x in xs[lid] for y in ys[lid]])
            for mi in range(m):
                for pi in range(p):
                    loc[0, :, mi, lid, pi] = grid[rng.permutation(lq)]
        value = rand(rng, n, sum(h * w for h, w in shapes), m, d)
        attn = rand(rng, n, lq, m, len(shapes), p, lo=0, hi=1)
        ref = ms_deform_sample_float64(value, shapes, loc, attn)
        np.testing.assert_allclose(self.core(shapes, value, loc, attn), ref, **TIGHT)
        # The stored border locations of the fixture too.
        case = C.select("ms_deform_attn_core/borders$")[0]
        ins, _, _ = C.shapes(case["op"], case["params"], case["batch"])
        loc = ST.border_locations(case["params"], 1, ins["sampling_locations"]).astype(np.float64)
        value = rand(rng, *ins["value"])
        attn = rand(rng, *ins["attention_weights"], lo=0, hi=1)
        shapes = case["params"]["spatial_shapes"]
        np.testing.assert_allclose(self.core(shapes, value, loc, attn),
                                   ms_deform_sample_float64(value, shapes, loc, attn), **TIGHT)

    def test_hand_checked_pixel_mapping(self):
        # One level 2x4, one head, D = 1, value = 10*row + col; loc = ((col + 0.5)/W, (row + 0.5)/H)
        # hits the pixel centre exactly; half a pixel left of column 0 the zero padding halves it.
        shapes = [[2, 4]]
        value = np.array([10.0 * r + c for r in range(2) for c in range(4)]).reshape(1, 8, 1, 1)
        locs = [((2 + 0.5) / 4, (1 + 0.5) / 2), (0.0, (1 + 0.5) / 2), (1.0, 0.25), ((-1 + 0.5) / 4, 0.75),
                (0.5, 1.0 + 0.5 / 2)]
        want = [12.0, 0.5 * 10.0, 0.5 * 3.0, 0.0, 0.0]
        loc = np.array(locs).reshape(1, len(locs), 1, 1, 1, 2)
        attn = np.ones((1, len(locs), 1, 1, 1))
        np.testing.assert_allclose(self.core(shapes, value, loc, attn).reshape(-1), want, **TIGHT)
        np.testing.assert_allclose(ms_deform_sample_float64(value, shapes, loc, attn).reshape(-1), want, **TIGHT)


def random_msdeform(rng, d_model, heads, points, shapes, scale=1.0):
    module = MSDeformAttn(d_model, heads, points, shapes).double()
    weights = {}
    with torch.no_grad():
        for k, t in module.state_dict().items():
            a = rand(rng, *t.shape) * scale / math.sqrt(t.shape[-1] if t.dim() == 2 else 8)
            t.copy_(torch.from_numpy(a))
            weights[k] = a
    return module, weights


class TestMSDeformAttn(unittest.TestCase):
    def run_both(self, ref_dims, mask):
        rng = np.random.default_rng(3 + ref_dims)
        shapes = [[6, 4], [3, 5], [2, 2]]
        d_model, heads, points, n, lq = 12, 3, 2, 2, 9
        s = sum(h * w for h, w in shapes)
        module, weights = random_msdeform(rng, d_model, heads, points, shapes, scale=3.0)
        query = rand(rng, n, lq, d_model)
        ref = rand(rng, n, lq, len(shapes), ref_dims, lo=0, hi=1)
        src = rand(rng, n, s, d_model)
        pm = None
        if mask:
            pm = np.zeros((n, s))
            pm[0, 5:9] = 1
            pm[1, -3:] = 1
        with torch.no_grad():
            got = module(torch.from_numpy(query), torch.from_numpy(ref), torch.from_numpy(src),
                         None if pm is None else torch.from_numpy(pm != 0)).numpy()
        p = {"heads": heads, "points": points, "spatial_shapes": shapes}
        want = ms_deform_attn_float64(query, ref, src, pm, weights, p)
        np.testing.assert_allclose(got, want, **TIGHT)
        return got, module, (query, ref, src, pm)

    def test_ref2(self):
        self.run_both(2, False)

    def test_ref4(self):
        self.run_both(4, False)

    def test_padding_mask_changes_output(self):
        got, module, (query, ref, src, pm) = self.run_both(2, True)
        with torch.no_grad():
            unmasked = module(torch.from_numpy(query), torch.from_numpy(ref), torch.from_numpy(src)).numpy()
        self.assertGreater(float(np.max(np.abs(got - unmasked))), 1e-6)
        self.run_both(4, True)

    def test_offset_normalizer_is_w_h(self):
        # One level H=2, W=8 (non-square); value = column index; a zero-weight offset Linear whose
        # bias moves x by +1 pixel. With (W, H): pixel x = (0.5 + 1/8)*8 - 0.5 = 4.5 -> 4.5. Swapped
        # (H, W) it would be (0.5 + 1/2)*8 - 0.5 = 7.5 -> half of column 7 = 3.5.
        shapes = [[2, 8]]
        d = 2
        module = MSDeformAttn(d, 1, 1, shapes).double()
        with torch.no_grad():
            for lin in (module.value_proj, module.output_proj):
                lin.weight.copy_(torch.eye(d, dtype=torch.float64))
                lin.bias.zero_()
            for lin in (module.sampling_offsets, module.attention_weights):
                lin.weight.zero_()
                lin.bias.zero_()
            module.sampling_offsets.bias.copy_(torch.tensor([1.0, 0.0], dtype=torch.float64))
        weights = {k: v.numpy().copy() for k, v in module.state_dict().items()}
        src = np.array([[c, c] for r in range(2) for c in range(8)], dtype=np.float64)[None]
        query = np.zeros((1, 1, d))
        p = {"heads": 1, "points": 1, "spatial_shapes": shapes}
        # 4-d boxes: loc x = 0.5 + 1/P * w * 0.5: w = 0.25 -> pixel 4.5; w = 1 -> pixel 7.5.
        for ref, want in (([0.5, 0.5], 4.5), ([0.5, 0.5, 0.25, 1.0], 4.5), ([0.5, 0.5, 1.0, 1.0], 3.5)):
            refs = np.array(ref).reshape(1, 1, 1, len(ref))
            with torch.no_grad():
                got = module(torch.from_numpy(query), torch.from_numpy(refs), torch.from_numpy(src)).numpy()
            np.testing.assert_allclose(got.reshape(-1), [want, want], **TIGHT)
            np.testing.assert_allclose(ms_deform_attn_float64(query, refs, src, None, weights, p).reshape(-1),
                                       [want, want], **TIGHT)

    def test_parameter_count(self):
        m = MSDeformAttn(256, 8, 4, [[100, 134], [50, 67], [25, 34], [13, 17]])
        self.assertEqual(sum(t.numel() for t in m.parameters()), 230272)
        p = C.select("ms_deform_attn/ddetr_enc$")[0]["params"]
        _, ws, _ = C.shapes("ms_deform_attn", p, 1)
        self.assertEqual(sum(int(np.prod(s)) for s in ws.values()), 230272)
        self.assertEqual(sorted(ws), sorted(m.state_dict()))
        self.assertEqual(sorted(MSDeformAttnCore([[2, 2]]).state_dict()), [])


def deform_conv_loops(x, offset, mask, weight, bias, stride, padding, dilation):
    """deform_conv2d by scalar loops over every output element, tap and input channel, straight
    from docs/reference-notes.md, "Deformable convolution"."""
    b, cin, h, w = x.shape
    cout, cg, kh, kw = weight.shape
    groups = cin // cg
    ho, wo = offset.shape[2:]
    og = offset.shape[1] // (2 * kh * kw)
    out = np.zeros((b, cout, ho, wo))

    def at(bi, c, yy, xx):
        return x[bi, c, yy, xx] if 0 <= yy < h and 0 <= xx < w else 0.0

    def bilinear(bi, c, y, xx):
        if y <= -1 or y >= h or xx <= -1 or xx >= w:
            return 0.0
        y0, x0 = math.floor(y), math.floor(xx)
        ly, lx = y - y0, xx - x0
        return ((1 - ly) * (1 - lx) * at(bi, c, y0, x0) + (1 - ly) * lx * at(bi, c, y0, x0 + 1)
                + ly * (1 - lx) * at(bi, c, y0 + 1, x0) + ly * lx * at(bi, c, y0 + 1, x0 + 1))

    for bi in range(b):
        for o in range(cout):
            gi = o // (cout // groups)
            for oy in range(ho):
                for ox in range(wo):
                    acc = 0.0 if bias is None else bias[o]
                    for ci in range(cg):
                        c = gi * cg + ci
                        g = c // (cin // og)
                        for i in range(kh):
                            for j in range(kw):
                                k = i * kw + j
                                dy = offset[bi, g * 2 * kh * kw + 2 * k, oy, ox]
                                dx = offset[bi, g * 2 * kh * kw + 2 * k + 1, oy, ox]
                                y = oy * stride[0] - padding[0] + i * dilation[0] + dy
                                xx = ox * stride[1] - padding[1] + j * dilation[1] + dx
                                v = bilinear(bi, c, y, xx)
                                if mask is not None:
                                    v *= mask[bi, g * kh * kw + k, oy, ox]
                                acc += weight[o, ci, i, j] * v
                    out[bi, o, oy, ox] = acc
    return out


class TestDeformConv2d(unittest.TestCase):
    CONFIGS = [
        # in, out, (H, W), k, stride, padding, dilation, groups, offset_groups, bias, mask
        (4, 6, (6, 5), (3, 3), (1, 1), (1, 1), (1, 1), 2, 2, True, True),
        (6, 4, (7, 9), (3, 2), (2, 1), (2, 0), (2, 3), 1, 3, False, True),
        (3, 3, (5, 6), (2, 3), (1, 2), (0, 1), (1, 1), 3, 1, True, False),
        (4, 2, (4, 4), (1, 1), (1, 1), (0, 0), (1, 1), 1, 4, True, None),
    ]

    def test_against_loops(self):
        rng = np.random.default_rng(5)
        for cfg in self.CONFIGS:
            cin, cout, (h, w), (kh, kw), stride, padding, dil, groups, og, has_bias, has_mask = cfg
            p = C.normalize_params("deform_conv2d", {
                "in_chans": cin, "out_chans": cout, "img_size": [h, w], "kernel_size": [kh, kw], "stride": list(stride),
                "padding": list(padding), "dilation": list(dil), "groups": groups, "offset_groups": og,
                "bias": has_bias, "mask": bool(has_mask)})
            ins, ws, outs = C.shapes("deform_conv2d", p, 2)
            x = rand(rng, *ins["x"])
            offset = rand(rng, *ins["offset"], lo=-2.5, hi=2.5)
            ho, wo = ins["offset"][2:]
            # Tap (0, 0) of offset group 0: y exactly -1 at output (0, 0) of image 0, x exactly W at
            # the last output pixel of image 1 (channel 0 is dy, channel 1 dx).
            offset[0, 0, 0, 0] = -1.0 + padding[0]
            offset[1, 1, -1, -1] = float(w) - ((wo - 1) * stride[1] - padding[1])
            mask = rand(rng, *ins["mask"], lo=0, hi=1) if has_mask else None
            weight = rand(rng, *ws["weight"])
            bias = rand(rng, *ws["bias"]) if has_bias else None
            want = deform_conv_loops(x, offset, mask, weight, bias, p["stride"], p["padding"], p["dilation"])
            self.assertEqual(list(want.shape), outs["out"])
            module = C.build_module("deform_conv2d", p).double()
            with torch.no_grad():
                module.weight.copy_(torch.from_numpy(weight))
                if has_bias:
                    module.bias.copy_(torch.from_numpy(bias))
                got = module(torch.from_numpy(x), torch.from_numpy(offset),
                             None if mask is None else torch.from_numpy(mask)).numpy()
            with self.subTest(cfg=cfg):
                np.testing.assert_allclose(got, want, **TIGHT)
                np.testing.assert_allclose(deform_conv2d_float64(x, offset, mask, weight, bias, p), want, **TIGHT)

    def test_hand_checked_offset_layout(self):
        # 1x1 kernel, one channel, x = 10*row + col on 3x3; offset channel 0 is dy, channel 1 is dx.
        x = np.array([[10.0 * r + c for c in range(3)] for r in range(3)]).reshape(1, 1, 3, 3)
        off = np.zeros((1, 2, 3, 3))
        off[0, 0, 0, 0] = 1.0  # (0, 0) samples (1, 0) -> 10
        off[0, 1, 0, 1] = 0.5  # (0, 1) samples (0, 1.5) -> 1.5
        off[0, 0, 2, 2] = 0.5  # (2, 2) samples (2.5, 2): the row below is padding -> 11
        off[0, 1, 1, 1] = -2.0  # (1, 1) samples (1, -1): outside -> 0
        m = DeformConv2d(1, 1, 1).double()
        with torch.no_grad():
            m.weight.fill_(1.0)
            m.bias.zero_()
            got = m(torch.from_numpy(x), torch.from_numpy(off)).numpy().reshape(3, 3)
        want = [[10.0, 1.5, 2.0], [10.0, 0.0, 12.0], [20.0, 21.0, 11.0]]
        np.testing.assert_allclose(got, want, **TIGHT)


class TestCaseRules(unittest.TestCase):
    def test_defaults_written_out(self):
        p = C.normalize_params("ms_deform_attn", {"queries": 3, "d_model": 8, "heads": 2, "points": 1,
                                                  "spatial_shapes": [[2, 3], [1, 1]]})
        self.assertEqual(p, {"queries": 3, "d_model": 8, "heads": 2, "points": 1, "spatial_shapes": [[2, 3], [1, 1]],
                             "level_start_index": [0, 6], "head_dim": 4, "ref_dims": 2, "padding_mask": False})
        p = C.normalize_params("deform_conv2d", {"in_chans": 2, "out_chans": 3, "img_size": [5, 4], "kernel_size": 3})
        self.assertEqual(p, {"in_chans": 2, "out_chans": 3, "img_size": [5, 4], "kernel_size": [3, 3],
                             "stride": [1, 1], "padding": [0, 0], "dilation": [1, 1], "groups": 1, "offset_groups": 1,
                             "bias": True, "mask": True})
        core = {"queries": 3, "heads": 2, "head_dim": 4, "points": 1, "spatial_shapes": [[2, 3], [1, 1]]}
        self.assertEqual(C.normalize_params("ms_deform_attn_core", dict(core, level_start_index=[0, 6])),
                         C.normalize_params("ms_deform_attn_core", core))

    def test_errors(self):
        core = {"queries": 3, "heads": 2, "head_dim": 4, "points": 1, "spatial_shapes": [[2, 3], [1, 1]]}
        with self.assertRaisesRegex(ValueError, r"level_start_index.*\[0, 6\]"):
            C.normalize_params("ms_deform_attn_core", dict(core, level_start_index=[0, 5]))
        with self.assertRaisesRegex(ValueError, "level_start_index"):
            C.normalize_params("ms_deform_attn_core", dict(core, level_start_index=[0]))
        for bad in ([], [[2]], [[2, 0]], [2, 3], [[2, 3.5]], "2x3"):
            with self.subTest(spatial_shapes=bad), self.assertRaises(ValueError):
                C.normalize_params("ms_deform_attn_core", dict(core, spatial_shapes=bad))
        with self.assertRaisesRegex(ValueError, "missing required param 'head_dim'"):
            C.normalize_params("ms_deform_attn_core", {k: v for k, v in core.items() if k != "head_dim"})
        attn = {"queries": 3, "d_model": 8, "heads": 2, "points": 1, "spatial_shapes": [[2, 3]]}
        with self.assertRaisesRegex(ValueError, "head_dim"):
            C.normalize_params("ms_deform_attn", dict(attn, head_dim=3))
        with self.assertRaisesRegex(ValueError, "multiple of heads"):
            C.normalize_params("ms_deform_attn", dict(attn, heads=3))
        with self.assertRaisesRegex(ValueError, "ref_dims"):
            C.normalize_params("ms_deform_attn", dict(attn, ref_dims=3))
        dc = {"in_chans": 6, "out_chans": 4, "img_size": 5, "kernel_size": 3}
        with self.assertRaisesRegex(ValueError, "offset_groups"):
            C.normalize_params("deform_conv2d", dict(dc, offset_groups=4))
        with self.assertRaisesRegex(ValueError, "in_chans 6 is not a multiple of groups 4"):
            C.normalize_params("deform_conv2d", dict(dc, groups=4, out_chans=8))
        with self.assertRaisesRegex(ValueError, "out_chans 4 is not a multiple of groups 3"):
            C.normalize_params("deform_conv2d", dict(dc, groups=3))
        with self.assertRaisesRegex(ValueError, "no output pixel"):
            C.normalize_params("deform_conv2d", dict(dc, kernel_size=7))
        with self.assertRaisesRegex(ValueError, "unknown params"):
            C.normalize_params("deform_conv2d", dict(dc, deformable_groups=1))

    def test_macs_and_shapes(self):
        c = C.select("ms_deform_attn_core/ddetr_enc$")[0]
        self.assertEqual(C.macs(c["op"], c["params"], 1), 17821 * 8 * 4 * 4 * 32 * 5)
        c = C.select("ms_deform_attn/ddetr_dec$")[0]
        d, s, lq = 256, 17821, 300
        self.assertEqual(C.macs(c["op"], c["params"], 1),
                         s * d * d + lq * d * 256 + lq * d * 128 + lq * d * d + lq * 8 * 4 * 4 * 32 * 5)
        c = C.select("deform_conv2d/groups_b2$")[0]
        self.assertEqual(C.macs(c["op"], c["params"], 2), 2 * 8 * 9 * 7 * 6 * 9)
        ins, ws, outs = C.shapes(c["op"], c["params"], 2)
        self.assertEqual(ins, {"x": [2, 12, 9, 7], "offset": [2, 54, 9, 7], "mask": [2, 27, 9, 7]})
        self.assertEqual(ws, {"weight": [8, 6, 3, 3], "bias": [8]})
        self.assertEqual(list(C.shapes("deform_conv2d", C.select("stride2_dil2$")[0]["params"], 1)[0]), ["x", "offset"])
        c = C.select("ms_deform_attn/ref4_mask_b2$")[0]
        self.assertEqual(list(C.shapes(c["op"], c["params"], 2)[0]),
                         ["query", "reference_points", "input_flatten", "padding_mask"])
        for c in C.select("ms_deform_attn|deform_conv2d"):
            self.assertEqual(C.TOLERANCE[c["op"]], "sampling")

    def test_sampled_outputs(self):
        a = np.arange(2 * 10 * 3).reshape(2, 10, 3)
        spec = {"axis": 1, "step": 4}
        np.testing.assert_array_equal(C.sample_output(a, spec), a[:, [0, 4, 8]])
        self.assertEqual(C.sampled_shape([2, 10, 3], spec), [2, 3, 3])
        self.assertEqual(C.sampled_shape([2, 8, 3], spec), [2, 2, 3])
        np.testing.assert_array_equal(C.sample_output(a, {"axis": 2, "step": 1}), a)
        enc = C.select("ms_deform_attn_core/ddetr_enc$")[0]
        self.assertEqual(enc["sampled_outputs"], {"out": {"axis": 1, "step": 64}})
        full = C.shapes(enc["op"], enc["params"], 1)[2]["out"]
        self.assertEqual(C.sampled_shape(full, enc["sampled_outputs"]["out"]), [1, 279, 256])
        self.assertNotIn("sampled_outputs", C.select("ms_deform_attn_core/ddetr_dec$")[0])
        user = {"name": "gemm/u", "op": "gemm", "params": {"m": 4, "n": 3, "k": 2}}
        self.assertEqual(C.check_case(dict(user, sampled_outputs={"out": {"axis": 0, "step": 2}}))["sampled_outputs"],
                         {"out": {"axis": 0, "step": 2}})
        for bad in ({}, {"x": {"axis": 1, "step": 2}}, {"out": {"axis": 3, "step": 2}},
                    {"out": {"axis": -1, "step": 2}}, {"out": {"axis": 1, "step": 0}}, {"out": {"axis": 1.0, "step": 2}}, {"out": [1, 2]}):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                C.check_case(dict(user, sampled_outputs=bad))

    def test_default_roles(self):
        self.assertEqual(S.default_role("sampling_locations", [1, 2, 3, 4, 5, 2], True), (0.5, 0.6))
        self.assertEqual(S.default_role("attention_weights", [1, 2, 3, 4, 5], True), (0.5, 0.5))
        self.assertEqual(S.default_role("reference_points", [1, 2, 4, 2], True), (0.5, 0.5))
        self.assertEqual(S.default_role("offset", [1, 18, 4, 4], True), (0.0, 2.0))
        self.assertEqual(S.default_role("mask", [1, 9, 4, 4], True), (0.5, 0.5))
        self.assertEqual(S.default_role("padding_mask", [1, 9], True), (0.0, 0.0))
        self.assertEqual(S.default_role("value", [1, 9, 2, 3], True), (0.0, 1.0))
        self.assertEqual(S.default_role("query", [1, 9, 8], True), (0.0, 1.0))
        # Weights keep the weight rules, whatever their prefix.
        self.assertEqual(S.default_role("attention_weights.weight", [128, 256], False), (0.0, 1 / 16))
        self.assertEqual(S.default_role("attention_weights.bias", [128], False), (0.0, 0.02))
        pm = S.synth(1, "padding_mask", [4, 7], 0.0, 0.0)
        self.assertTrue(np.all(pm == 0) and not np.any(np.signbit(pm)))


class TestStoredInputs(unittest.TestCase):
    def test_border_locations_hit_edges(self):
        case = C.select("ms_deform_attn_core/borders$")[0]
        ins = C.shapes(case["op"], case["params"], 1)[0]
        loc = ST.border_locations(case["params"], 1, ins["sampling_locations"])
        self.assertEqual(loc.dtype, np.float32)
        np.testing.assert_array_equal(loc, ST.border_locations(case["params"], 1, ins["sampling_locations"]))
        for lid, (h, w) in enumerate(case["params"]["spatial_shapes"]):
            px = loc[:, :, :, lid, :, 0].astype(np.float64) * w - 0.5
            py = loc[:, :, :, lid, :, 1].astype(np.float64) * h - 0.5
            for size, v, other, osize in ((w, px, py, h), (h, py, px, w)):
                inside = (other > -1) & (other < osize)  # the other coordinate is evaluated
                for target in (-1, size, 0, size - 1):
                    for eps in (0.0, 1e-3, -1e-3):
                        self.assertTrue(np.any((np.abs(v - target - eps) < 1e-5) & inside), (size, target, eps))
                self.assertTrue(np.any((v < -1.05) & inside))  # far outside (loc -0.3)
                self.assertTrue(np.any((v > size + 0.05) & inside))  # far outside (loc 1.4)
            for target in (-1, w, 0, w - 1):  # W = 4, 2: exact in float32
                self.assertTrue(np.any((px == target) & (py > -1) & (py < h)))
            self.assertTrue(np.any(((px <= -1) | (px >= w)) & ((py <= -1) | (py >= h))))  # both on/over an edge

    def test_padding_masks(self):
        case = C.select("ms_deform_attn/ref4_mask_b2$")[0]
        pm = ST.STORED[case["name"]][1]["padding_mask"](case["params"], 2, [2, 30])
        lvl0 = pm[:, :24].reshape(2, 6, 4)
        np.testing.assert_array_equal(lvl0[0], [[0, 0, 0, 1]] * 5 + [[1, 1, 1, 1]])  # ceil(.75*6)=5, ceil(.6*4)=3
        np.testing.assert_array_equal(lvl0[1], [[0, 0, 1, 1]] * 6)  # ceil(.45*4)=2
        np.testing.assert_array_equal(pm[1, 24:].reshape(3, 2), [[0, 1]] * 3)
        self.assertTrue(set(np.unique(pm)) == {0.0, 1.0})

    def test_deform_border_offsets(self):
        case = C.select("deform_conv2d/borders$")[0]
        p = case["params"]
        ins = C.shapes(case["op"], p, 1)[0]
        off = ST.border_offsets(p, 1, ins["offset"]).astype(np.float64).reshape(1, 3, 3, 2, 5, 4)
        h, w = p["img_size"]
        ys = (np.arange(5) - 1)[None, None, :, None] + np.arange(3)[:, None, None, None] + off[0, :, :, 0]
        xs = (np.arange(4) - 1)[None, None, None, :] + np.arange(3)[None, :, None, None] + off[0, :, :, 1]
        for v, size, other, osize in ((ys, h, xs, w), (xs, w, ys, h)):
            inside = (other > -1) & (other < osize)
            for target in (-1, size, size - 1, 0):
                self.assertTrue(np.any((v == target) & inside), (size, target))
                self.assertTrue(np.any((np.abs(v - target - 1e-3) < 1e-6) & inside))
                self.assertTrue(np.any((np.abs(v - target + 1e-3) < 1e-6) & inside))
            self.assertTrue(np.any((v < -1) & inside) and np.any((v > size) & inside))
            self.assertTrue(np.any((np.abs(v - np.round(v)) == 0.5) & (v > 0) & (v < size - 1)))  # half-integers inside
        # dy, dx are integers or half-integers (up to the 1e-3 nudges)
        frac = np.abs(off * 2 - np.round(off * 2))
        self.assertTrue(np.all((frac < 1e-9) | (np.abs(frac - 2e-3) < 1e-5)))


if __name__ == "__main__":
    unittest.main()
