"""VOLO (docs/reference-notes.md, "VOLO"): the reference modules against their float64 NumPy recomputations
(explicit pooling and scatter-add fold loops for the outlook attention) on small random shapes with
odd H/W and several head counts, a hand-checked fold (overlaps summed), ClassBlock's pass-through of
the patch tokens, the network's output composed independently, state_dict names vs the case rules,
parameter counts and MACs (docs/reference-notes.md) and the parameter rules."""

import unittest

import _paths  # noqa: F401
import numpy as np
import torch
import torch.nn.functional as F

from vitbench_ref import cases as C
from vitbench_ref import export as E
from vitbench_ref import volo
from vitbench_ref.synth import default_role

torch.set_num_threads(2)

D1 = {"layers": [4, 4, 8, 2], "embed_dims": [192, 384, 384, 384], "heads": [6, 12, 12, 12]}
D2 = {"layers": [6, 4, 10, 4], "embed_dims": [256, 512, 512, 512], "heads": [8, 16, 16, 16]}
D3 = {"layers": [8, 8, 16, 4], "embed_dims": [256, 512, 512, 512], "heads": [8, 16, 16, 16]}
D4 = {"layers": [8, 8, 16, 4], "embed_dims": [384, 768, 768, 768], "heads": [12, 16, 16, 16]}
D5 = {"layers": [12, 12, 20, 4], "embed_dims": [384, 768, 768, 768], "heads": [12, 16, 16, 16], "mlp_ratio": 4.0,
      "stem_hidden_dim": 128}
CONFIGS = {"d1": D1, "d2": D2, "d3": D3, "d4": D4, "d5": D5}
# docs/reference-notes.md, "VOLO" (parameter counts).
PARAMS = {"d1": (26632040, 26777960, 26857832, 26949992), "d2": (58678336, 58872896, 58979392, 59102272),
          "d3": (86325072, 86519632, 86626128, 86749008), "d4": (192961520, 193253360, 193413104, 193597424),
          "d5": (295455584, 295747424, 295907168, 296091488)}
# docs/reference-notes.md, "VOLO" (GMACs of the count).
GMACS = {("d1", 224): 6.92, ("d1", 384): 22.68, ("d2", 224): 14.31, ("d2", 384): 46.06, ("d3", 224): 20.73,
         ("d3", 448): 96.13, ("d4", 224): 44.26, ("d4", 448): 196.84, ("d5", 224): 72.3, ("d5", 448): 314.65,
         ("d5", 512): 424.56}


def randomize(module, seed):
    """Fill every float state_dict entry with uniform noise of the exporter's (center, scale) for its
    name (a torch generator, not the fixture generator); returns {name: float32 ndarray}."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    with torch.no_grad():
        for name, t in module.state_dict().items():
            if name.endswith("num_batches_tracked"):
                continue
            c, s = default_role(name, list(t.shape), False)
            t.copy_(c + s * (2 * torch.rand(t.shape, generator=g) - 1))
            out[name] = t.numpy().copy()
    return out


def nmse(got, ref):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.sum((got - ref) ** 2) / np.sum(ref ** 2))


def run(op, params, batch, seed=0):
    """Build op's module from ``params`` (normalised here), randomize it, run it on a random input;
    return (normalised params, input, weights, module output(s) as ndarrays)."""
    p = C.normalize_params(op, params)
    ins, ws, outs = C.shapes(op, p, batch)
    m = C.build_module(op, p)
    w = randomize(m, seed)
    x = torch.randn(*ins["x"], generator=torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        y = m(x)
    y = {k: v.numpy() for k, v in y.items()} if isinstance(y, dict) else {"out": y.numpy()}
    return p, x.numpy(), w, y, outs


class TestOutlookAttention(unittest.TestCase):
    def test_hand_checked_fold_sums(self):
        # One channel, one head, v and proj identity, attn weight 0 / bias 0: every window's attention
        # is uniform (1/9) over its 3x3 sources, so a window's output at each of its 9 targets is
        # (number of in-image sources) / 9 for x = 1, and the fold SUMS the windows covering a pixel.
        m = volo.OutlookAttention(1, 1)
        with torch.no_grad():
            m.v.weight.fill_(1.0)
            m.attn.weight.zero_()
            m.attn.bias.zero_()
            m.proj.weight.fill_(1.0)
            m.proj.bias.zero_()
            out = m(torch.ones(1, 4, 4, 1))[0, :, :, 0] * 9
        # Windows start at -1 and 1 (rows and columns): row/col 0 lies in window 0 only, 1 in both,
        # 2 and 3 in window 1 only (the last odd row of an even size has one window).  Valid sources:
        # window 0 covers 2 of its 3 rows, window 1 all 3.
        valid = [2, 3]
        cover = [[0], [0, 1], [1], [1]]
        want = torch.tensor([[float(sum(valid[a] * valid[b] for a in cover[y] for b in cover[x])) for x in range(4)]
                             for y in range(4)])
        self.assertEqual(want[0, 0].item(), 4.0)
        self.assertEqual(want[1, 1].item(), 25.0)
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-5)

    def test_logits_from_pooled_x_with_partial_windows(self):
        # attn Linear reads the ceil-mode average of x (partial windows: valid pixels only), not v:
        # with v = 0 the output is proj.bias whatever the logits, so check the pooled input directly
        # through a hook on the attn Linear.
        m = volo.OutlookAttention(2, 1)
        seen = []
        m.attn.register_forward_hook(lambda mod, args, out: seen.append(args[0].detach().clone()))
        x = torch.arange(2 * 3 * 5 * 2, dtype=torch.float32).reshape(2, 3, 5, 2)
        with torch.no_grad():
            m(x)
        pooled = seen[0]  # [B, 2, 3, C]
        self.assertEqual(tuple(pooled.shape), (2, 2, 3, 2))
        # bottom-right window: the single pixel (2, 4); bottom-middle: pixels (2, 2) and (2, 3).
        torch.testing.assert_close(pooled[:, 1, 2], x[:, 2, 4])
        torch.testing.assert_close(pooled[:, 1, 1], (x[:, 2, 2] + x[:, 2, 3]) / 2)
        torch.testing.assert_close(pooled[:, 0, 0], x[:, :2, :2].mean(dim=(1, 2)))

    def test_against_float64(self):
        cases = [({"dim": 12, "heads": 1, "img_size": [5, 7]}, 2), ({"dim": 12, "heads": 3, "img_size": 6}, 1),
                 ({"dim": 16, "heads": 4, "img_size": [9, 4]}, 2), ({"dim": 8, "heads": 2, "img_size": [3, 1]}, 1),
                 ({"dim": 18, "heads": 6, "img_size": [1, 1]}, 1), ({"dim": 45, "heads": 5, "img_size": [7, 5]}, 1),
                 ({"dim": 10, "heads": 2, "img_size": [7, 6], "kernel_size": 5, "padding": 2}, 1),
                 ({"dim": 12, "heads": 3, "img_size": [8, 7], "kernel_size": 3, "padding": 1, "stride": 3}, 2),
                 ({"dim": 6, "heads": 2, "img_size": [4, 5], "kernel_size": 1, "padding": 0, "stride": 1}, 1),
                 ({"dim": 6, "heads": 3, "img_size": [4, 5], "kernel_size": 3, "padding": 1, "stride": 1}, 1)]
        for i, (params, batch) in enumerate(cases):
            with self.subTest(params=params):
                p, x, w, y, outs = run("outlook_attention", params, batch, seed=i)
                self.assertEqual(list(y["out"].shape), outs["out"])
                ref = volo.outlook_attention_float64(x, w, p)
                np.testing.assert_allclose(y["out"], ref, rtol=1e-4, atol=1e-5)
                self.assertLess(nmse(y["out"], ref), 1e-10)

    def test_outlooker_against_float64(self):
        for i, (params, batch) in enumerate([({"dim": 24, "heads": 3, "img_size": [11, 6], "mlp_ratio": 2.0}, 2),
                                             ({"dim": 16, "heads": 2, "img_size": [5, 5]}, 1),
                                             ({"dim": 20, "heads": 4, "img_size": [4, 9], "eps": 1e-6}, 1)]):
            with self.subTest(params=params):
                p, x, w, y, _ = run("outlooker", params, batch, seed=10 + i)
                ref = volo.outlooker_float64(x, w, p)
                np.testing.assert_allclose(y["out"], ref, rtol=1e-4, atol=1e-5)
                self.assertLess(nmse(y["out"], ref), 1e-10)

    def test_outlooker_is_residual_composition(self):
        p, x, w, y, _ = run("outlooker", {"dim": 12, "heads": 2, "img_size": [5, 6]}, 1, seed=3)
        m = C.build_module("outlooker", p)
        m.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()})
        xt = torch.from_numpy(x)
        with torch.no_grad():
            h = xt + m.attn(F.layer_norm(xt, (12,), m.norm1.weight, m.norm1.bias, 1e-5))
            want = h + m.mlp.fc2(F.gelu(m.mlp.fc1(F.layer_norm(h, (12,), m.norm2.weight, m.norm2.bias, 1e-5))))
        torch.testing.assert_close(torch.from_numpy(y["out"]), want)


class TestClassAttention(unittest.TestCase):
    def test_against_float64(self):
        for i, (params, batch) in enumerate([({"tokens": 10, "dim": 30, "heads": 3}, 2),
                                             ({"tokens": 1, "dim": 8, "heads": 1}, 1),
                                             ({"tokens": 17, "dim": 24, "heads": 8}, 3)]):
            with self.subTest(params=params):
                p, x, w, y, outs = run("class_attention", params, batch, seed=20 + i)
                self.assertEqual(list(y["out"].shape), outs["out"])
                ref = volo.class_attention_float64(x, w, p)
                np.testing.assert_allclose(y["out"], ref, rtol=1e-4, atol=1e-5)
                self.assertLess(nmse(y["out"], ref), 1e-10)

    def test_keys_include_class_token(self):
        # One token: the softmax over the single key is 1, so the output is proj(v(x0)).
        p, x, w, y, _ = run("class_attention", {"tokens": 1, "dim": 6, "heads": 2}, 2, seed=5)
        v = x[:, 0].astype(np.float64) @ w["kv.weight"][6:].T.astype(np.float64)
        np.testing.assert_allclose(y["out"][:, 0], v @ w["proj.weight"].T + w["proj.bias"], rtol=1e-5, atol=1e-6)

    def test_class_block_against_float64_and_pass_through(self):
        for i, (params, batch) in enumerate([({"tokens": 10, "dim": 30, "heads": 3, "mlp_ratio": 2.0}, 2),
                                             ({"tokens": 5, "dim": 16, "heads": 4}, 1),
                                             ({"tokens": 2, "dim": 12, "heads": 6, "eps": 1e-6}, 2)]):
            with self.subTest(params=params):
                p, x, w, y, outs = run("class_block", params, batch, seed=30 + i)
                self.assertEqual(list(y["out"].shape), outs["out"])
                self.assertTrue(np.array_equal(y["out"][:, 1:], x[:, 1:]))  # patch tokens unchanged
                ref = volo.class_block_float64(x, w, p)
                np.testing.assert_allclose(y["out"], ref, rtol=1e-4, atol=1e-5)
                self.assertLess(nmse(y["out"][:, :1], ref[:, :1]), 1e-10)


class TestStem(unittest.TestCase):
    def test_against_float64_and_torch_functional(self):
        for i, (params, batch) in enumerate([({"img_size": [45, 61], "hidden_dim": 16, "embed_dim": 24}, 2),
                                             ({"img_size": 32, "hidden_dim": 8, "embed_dim": 12, "in_chans": 1}, 1),
                                             ({"img_size": [17, 9], "hidden_dim": 4, "embed_dim": 6,
                                               "patch_size": 4}, 1)]):
            with self.subTest(params=params):
                p, x, w, y, outs = run("volo_stem", params, batch, seed=40 + i)
                self.assertEqual(list(y["out"].shape), outs["out"])
                ref = volo.volo_stem_float64(x, w, p)
                np.testing.assert_allclose(y["out"], ref, rtol=1e-4, atol=1e-4)
                self.assertLess(nmse(y["out"], ref), 1e-10)
                # the same with torch.nn.functional, NCHW then permuted
                t = {k: torch.from_numpy(v) for k, v in w.items()}
                h = torch.from_numpy(x)
                for conv, bn, s_, pad in ((0, 1, 2, 3), (3, 4, 1, 1), (6, 7, 1, 1)):
                    h = F.conv2d(h, t["conv.%d.weight" % conv], None, s_, pad)
                    h = F.relu(F.batch_norm(h, t["conv.%d.running_mean" % bn], t["conv.%d.running_var" % bn],
                                            t["conv.%d.weight" % bn], t["conv.%d.bias" % bn], False, 0.0, 1e-5))
                h = F.conv2d(h, t["proj.weight"], t["proj.bias"], p["patch_size"] // 2).permute(0, 2, 3, 1)
                torch.testing.assert_close(torch.from_numpy(y["out"]), h, rtol=1e-4, atol=1e-5)

    def test_grid(self):
        self.assertEqual(volo.stem_grid(224), (28, 28))
        self.assertEqual(volo.stem_grid([45, 61]), (5, 7))  # ceil(45/2) = 23 -> 5, 31 -> 7
        self.assertEqual(C.shapes("volo_stem", C.normalize_params("volo_stem", {"img_size": 224, "embed_dim": 192}),
                                  1)[2]["out"], [1, 28, 28, 192])


TINY = {"img_size": [40, 48], "layers": [2, 1, 2, 1], "embed_dims": [16, 24, 24, 24], "heads": [4, 2, 3, 6],
        "mlp_ratio": 2.0, "stem_hidden_dim": 8, "num_classes": 11}


class TestNetwork(unittest.TestCase):
    def test_transformer_is_block_on_tokens(self):
        t = volo.Transformer(12, 3, 2.0)
        randomize(t, 1)
        x = torch.randn(2, 3, 5, 12)
        with torch.no_grad():
            want = super(volo.Transformer, t).forward(x.reshape(2, 15, 12)).reshape(2, 3, 5, 12)
            torch.testing.assert_close(t(x), want)
        self.assertEqual(sorted(t.state_dict()), sorted(["norm1.weight", "norm1.bias", "attn.qkv.weight",
                                                         "attn.proj.weight", "attn.proj.bias", "norm2.weight",
                                                         "norm2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
                                                         "mlp.fc2.weight", "mlp.fc2.bias"]))
        self.assertEqual(t.norm1.eps, 1e-5)

    def test_against_float64(self):
        for i, params in enumerate([dict(TINY, probe=True), C.select("^volo_tiny_odd$")[0]["params"],
                                    dict(TINY, img_size=[33, 49], probe=True)]):
            with self.subTest(params=params):
                p, x, w, y, outs = run("volo", params, 2, seed=50 + i)
                self.assertEqual({k: list(v.shape) for k, v in y.items()}, outs)
                ref = volo.volo_float64(x, w, p)
                self.assertEqual(set(ref), set(y))
                for k in y:
                    np.testing.assert_allclose(y[k], ref[k], rtol=1e-3, atol=1e-4, err_msg=k)
                    self.assertLess(nmse(y[k], ref[k]), 1e-9, k)

    def test_output_composed_independently(self):
        # logits = head(norm(x)[:, 0]) + 0.5 * max over tokens of aux_head(norm(x)[:, 1:]), from the
        # probed post-network tokens; the stages chain through the module's own parts.
        p, x, w, y, _ = run("volo", dict(TINY, probe=True), 2, seed=60)
        m = C.build_module("volo", p)
        m.load_state_dict({k: torch.from_numpy(v) for k, v in w.items()}, strict=False)
        t = {k: torch.from_numpy(v).double() for k, v in w.items()}
        post = torch.from_numpy(y["stages.post"]).double()
        z = F.layer_norm(post, (24,), t["norm.weight"], t["norm.bias"], 1e-5)
        cls = z[:, 0] @ t["head.weight"].T + t["head.bias"]
        aux = z[:, 1:] @ t["aux_head.weight"].T + t["aux_head.bias"]
        want = cls + 0.5 * torch.stack([aux[:, j] for j in range(aux.shape[1])]).max(dim=0).values
        np.testing.assert_allclose(y["logits"], want.numpy(), rtol=1e-5, atol=1e-5)
        # The stages: stem -> outlookers -> downsample + pos_embed -> transformers -> class blocks.
        with torch.no_grad():
            stem = torch.from_numpy(y["stages.stem"])
            torch.testing.assert_close(m.patch_embed(torch.from_numpy(x)), stem)
            o = m.network[0](stem)
            torch.testing.assert_close(o, torch.from_numpy(y["stages.outlookers"]))
            d = F.conv2d(o.permute(0, 3, 1, 2), m.network[1].proj.weight, m.network[1].proj.bias, 2).permute(0, 2, 3, 1)
            tr = m.network[4](m.network[3](m.network[2](d + m.pos_embed)))
            torch.testing.assert_close(tr, torch.from_numpy(y["stages.transformers"]))
            tok = torch.cat([m.cls_token.expand(2, -1, -1), tr.reshape(2, -1, 24)], dim=1)
            torch.testing.assert_close(m.post_network[1](m.post_network[0](tok)), torch.from_numpy(y["stages.post"]))
            self.assertTrue(torch.equal(torch.from_numpy(y["stages.post"])[:, 1:], tok[:, 1:]))

    def test_state_dict_matches_shapes(self):
        for params in (dict(TINY, probe=True), C.select("^volo_tiny_odd$")[0]["params"], dict(D1, img_size=224)):
            p = C.normalize_params("volo", params)
            m = C.build_module("volo", p)
            sd = {k: list(v.shape) for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")}
            ws = C.shapes("volo", p, 1)[1]
            self.assertEqual(sd, ws)
        for case in C.select("^(outlook_attention|outlooker|class_attention|class_block|patch_embed/volo)"):
            m = C.build_module(case["op"], case["params"])
            sd = {k: list(v.shape) for k, v in m.state_dict().items() if not k.endswith("num_batches_tracked")}
            self.assertEqual(sd, C.shapes(case["op"], case["params"], 1)[1], case["name"])
            self.assertFalse(m.training)

    def test_named_weights(self):
        ws = C.shapes("volo", C.normalize_params("volo", dict(D1, img_size=224)), 1)[1]
        for name, shape in (("patch_embed.conv.0.weight", [64, 3, 7, 7]), ("patch_embed.conv.7.running_var", [64]),
                            ("patch_embed.proj.weight", [192, 64, 4, 4]), ("pos_embed", [1, 14, 14, 384]),
                            ("network.0.3.attn.attn.weight", [486, 192]), ("network.0.0.attn.v.weight", [192, 192]),
                            ("network.1.proj.weight", [384, 192, 2, 2]), ("network.2.3.attn.qkv.weight", [1152, 384]),
                            ("network.3.7.mlp.fc1.weight", [1152, 384]), ("network.4.1.mlp.fc2.bias", [384]),
                            ("cls_token", [1, 1, 384]), ("post_network.1.attn.kv.weight", [768, 384]),
                            ("post_network.0.attn.q.weight", [384, 384]), ("norm.weight", [384]),
                            ("head.weight", [1000, 384]), ("aux_head.bias", [1000])):
            self.assertEqual(ws[name], shape, name)
        self.assertNotIn("network.2.0.attn.qkv.bias", ws)
        self.assertNotIn("network.4.2.norm1.weight", ws)


class TestCounts(unittest.TestCase):
    def test_param_count_d1_module(self):
        m = C.build_module("volo", C.normalize_params("volo", dict(D1, img_size=224)))
        self.assertEqual(sum(t.numel() for t in m.parameters()), 26632040)
        self.assertEqual(C.param_count("volo", C.normalize_params("volo", dict(D1, img_size=224))), 26632040)

    def test_param_count_table(self):
        for model, counts in PARAMS.items():
            for res, want in zip((224, 384, 448, 512), counts):
                with self.subTest(model=model, res=res):
                    self.assertEqual(C.param_count("volo", C.normalize_params("volo", dict(CONFIGS[model],
                                                                                             img_size=res))), want)

    def test_component_param_counts(self):
        # docs/reference-notes.md, "VOLO": stem 280,320; Outlooker (C 192) 390,438; ClassBlock (C 384) 1,478,016.
        self.assertEqual(C.param_count("volo_stem", C.normalize_params("volo_stem", {"img_size": 224,
                                                                                    "embed_dim": 192})), 280320)
        self.assertEqual(C.param_count("outlooker", C.normalize_params("outlooker", {"dim": 192, "heads": 6,
                                                                                    "img_size": 28})), 390438)
        self.assertEqual(C.param_count("class_block", C.normalize_params("class_block", {"tokens": 197, "dim": 384,
                                                                                        "heads": 12})), 1478016)

    def test_macs_table(self):
        for (model, res), gmacs in GMACS.items():
            with self.subTest(model=model, res=res):
                got = C.macs("volo", C.normalize_params("volo", dict(CONFIGS[model], img_size=res)), 1)
                self.assertLess(abs(got / 1e9 - gmacs) / gmacs, 0.01)
        self.assertLess(abs(C.macs("volo", C.select("^volo_d1$")[0]["params"], 1) / 6.92e9 - 1), 0.01)
        self.assertLess(abs(C.macs("volo", C.select("^volo_d5_512$")[0]["params"], 1) / 424.56e9 - 1), 0.01)
        self.assertEqual(C.macs("volo", C.select("^volo_d1_b2$")[0]["params"], 2),
                         2 * C.macs("volo", C.select("^volo_d1$")[0]["params"], 1))

    def test_macs_formulas(self):
        p = C.normalize_params("outlook_attention", {"dim": 12, "heads": 3, "img_size": [5, 7]})
        # v + proj 2*35*144, attn Linear 3*4*12*81*3, attn@v 3*4*81*12
        self.assertEqual(C.macs("outlook_attention", p, 2), 2 * (2 * 35 * 144 + 12 * 12 * 81 * 3 + 12 * 81 * 12))
        q = C.normalize_params("outlooker", {"dim": 12, "heads": 3, "img_size": [5, 7], "mlp_ratio": 2.0})
        self.assertEqual(C.macs("outlooker", q, 2), C.macs("outlook_attention", p, 2) + 2 * 2 * 35 * 12 * 24)
        p = C.normalize_params("class_attention", {"tokens": 10, "dim": 30, "heads": 3})
        self.assertEqual(C.macs("class_attention", p, 2), 2 * (10 * 30 * 60 + 900 + 2 * 10 * 30 + 900))
        q = C.normalize_params("class_block", {"tokens": 10, "dim": 30, "heads": 3})
        self.assertEqual(C.macs("class_block", q, 2), C.macs("class_attention", p, 2) + 2 * 2 * 30 * 90)
        s = C.normalize_params("volo_stem", {"img_size": 224, "embed_dim": 192})
        self.assertEqual(C.macs("volo_stem", s, 1), 64 * 112 * 112 * (3 * 49 + 2 * 64 * 9) + 192 * 28 * 28 * 64 * 16)
        # the network: the sum of its parts (TINY: H8 x W8 = 5 x 6, tokens 2 x 3)
        n = C.normalize_params("volo", TINY)
        parts = (C.macs("volo_stem", C.normalize_params("volo_stem", {"img_size": [40, 48], "hidden_dim": 8,
                                                                      "embed_dim": 16}), 2)
                 + 2 * C.macs("outlooker", C.normalize_params("outlooker", {"dim": 16, "heads": 4, "img_size": [5, 6],
                                                                            "mlp_ratio": 2.0}), 2)
                 + 2 * 6 * 24 * 16 * 4
                 + 4 * C.macs("block", {"tokens": 6, "dim": 24, "heads": 2, "mlp_ratio": 2.0}, 2)
                 + 2 * C.macs("class_block", C.normalize_params("class_block", {"tokens": 7, "dim": 24, "heads": 6,
                                                                                "mlp_ratio": 2.0}), 2)
                 + 2 * 24 * 11 + 2 * 6 * 24 * 11)
        self.assertEqual(C.macs("volo", n, 2), parts)


class TestParams(unittest.TestCase):
    def test_defaults(self):
        self.assertEqual(C.normalize_params("outlook_attention", {"dim": 8, "heads": 2, "img_size": 6}),
                         {"dim": 8, "heads": 2, "img_size": [6, 6], "kernel_size": 3, "padding": 1, "stride": 2})
        self.assertEqual(C.normalize_params("outlooker", {"dim": 8, "heads": 2, "img_size": [6, 5]}),
                         {"dim": 8, "heads": 2, "img_size": [6, 5], "kernel_size": 3, "padding": 1, "stride": 2,
                          "mlp_ratio": 3.0, "eps": 1e-5})
        self.assertEqual(C.normalize_params("class_block", {"tokens": 3, "dim": 8, "heads": 2}),
                         {"tokens": 3, "dim": 8, "heads": 2, "mlp_ratio": 3.0, "eps": 1e-5})
        self.assertEqual(C.normalize_params("volo_stem", {"img_size": 32, "embed_dim": 8}),
                         {"img_size": [32, 32], "in_chans": 3, "hidden_dim": 64, "embed_dim": 8, "patch_size": 8})
        self.assertEqual(C.normalize_params("volo", dict(D1, img_size=224)),
                         dict(D1, img_size=[224, 224], mlp_ratio=3.0, stem_hidden_dim=64, num_classes=1000,
                              in_chans=3, probe=False))
        self.assertEqual(C.normalize_params("outlook_attention", {"dim": 8, "heads": 2, "img_size": 6,
                                                                  "kernel_size": 1, "padding": 0, "stride": 1})["padding"], 0)

    def test_rejected(self):
        base_oa = {"dim": 12, "heads": 3, "img_size": [8, 9]}
        bad = [
            ("outlook_attention", dict(base_oa, heads=5)),  # 12 % 5
            ("outlook_attention", dict(base_oa, bogus=1)),
            ("outlook_attention", dict(base_oa, padding=0)),  # k3 p0 s2: 3 windows on 8, ceil(8/2) = 4
            ("outlook_attention", dict(base_oa, kernel_size=2, padding=0)),  # W = 9: 4 windows vs 5
            ("outlook_attention", dict(base_oa, kernel_size=1, padding=1)),  # (8+2-1)//2+1 = 5 vs 4
            ("outlook_attention", dict(base_oa, stride=0)),
            ("outlook_attention", dict(base_oa, padding=-1)),
            ("outlook_attention", dict(base_oa, kernel_size=[3, 3])),  # a single integer
            ("outlook_attention", dict(base_oa, img_size=[8, 9, 1])),
            ("outlook_attention", {"dim": 12, "heads": 3}),  # img_size required
            ("outlooker", dict(base_oa, mlp_ratio=0)),
            ("outlooker", dict(base_oa, eps=-1.0)),
            ("outlooker", dict(base_oa, dim=10)),
            ("class_attention", {"tokens": 5, "dim": 10, "heads": 3}),
            ("class_attention", {"tokens": 5, "dim": 12, "heads": 3, "mlp_ratio": 3.0}),
            ("class_block", {"tokens": 0, "dim": 12, "heads": 3}),
            ("class_block", {"tokens": 5, "dim": 12, "heads": 3, "qkv_bias": True}),
            ("volo_stem", {"img_size": 32, "embed_dim": 8, "patch_size": 7}),
            ("volo_stem", {"img_size": 2, "embed_dim": 8}),
            ("volo_stem", {"img_size": 32}),
            ("volo_stem", {"img_size": 32, "embed_dim": 8, "stem_conv": True}),
            ("volo", dict(D1, img_size=224, embed_dims=[192, 384, 384, 512])),  # unequal embed_dims[1:]
            ("volo", dict(D1, img_size=224, embed_dims=[192, 384, 512, 512])),
            ("volo", dict(D1, img_size=224, heads=[5, 12, 12, 12])),  # 192 % 5
            ("volo", dict(D1, img_size=224, heads=[6, 12, 12, 7])),
            ("volo", dict(D1, img_size=224, layers=[4, 4, 8])),
            ("volo", dict(D1, img_size=224, layers=[4, 4, 8, 0])),
            ("volo", dict(D1, img_size=224, layers=[4, 4, 8, 2.0])),
            ("volo", dict(D1, img_size=224, drop_path_rate=0.1)),
            ("volo", dict(D1, img_size=31)),  # pos_embed 31//16 = 1 vs the stem's (16//4)//2 = 2
            ("volo", dict(D1, img_size=[224, 15])),  # too small
            ("volo", dict(D1, img_size=224, probe=1)),
            ("volo", {"img_size": 224, "layers": [1, 1, 1, 1], "embed_dims": [8, 8, 8, 8]}),  # heads required
        ]
        for op, params in bad:
            with self.subTest(op=op, params=params), self.assertRaises(ValueError):
                C.normalize_params(op, params)

    def test_error_messages(self):
        with self.assertRaisesRegex(ValueError, "windows along W = 9"):
            C.normalize_params("outlook_attention", {"dim": 12, "heads": 3, "img_size": [8, 9], "kernel_size": 2,
                                                     "padding": 0})
        with self.assertRaisesRegex(ValueError, "embed_dims"):
            C.normalize_params("volo", dict(D1, img_size=224, embed_dims=[192, 384, 384, 512]))
        with self.assertRaisesRegex(ValueError, "pos_embed"):
            C.normalize_params("volo", dict(D1, img_size=31))
        with self.assertRaisesRegex(ValueError, "unknown params"):
            C.normalize_params("class_block", {"tokens": 5, "dim": 12, "heads": 3, "qkv_bias": True})

    def test_builtin_cases(self):
        cases = C.select("^(outlook_attention|outlooker|class_attention|class_block|patch_embed/volo|volo)")
        names = {c["name"] for c in cases}
        self.assertLessEqual({"outlook_attention/volo_d1", "outlooker/volo_d1", "class_attention/volo_d1",
                              "class_block/volo_d1", "patch_embed/volo_d1", "volo_d1", "volo_d5_512", "volo_tiny_odd"},
                             names)
        self.assertEqual({c["op"] for c in cases}, set(volo.OPS))
        for case in cases:
            with self.subTest(case=case["name"]):
                self.assertIn(case["op"], volo.OPS)
                self.assertEqual(C.check_case(dict(case)), case)
                ins, ws, outs = C.shapes(case["op"], case["params"], case["batch"])
                self.assertEqual(list(ins), ["x"])
                self.assertGreater(C.macs(case["op"], case["params"], case["batch"]), 0)
                self.assertEqual(C.KIND.get(case["op"], "component"), "network" if case["op"] == "volo" else "component")


class TestExporterPath(unittest.TestCase):
    def test_outlook_logits_role(self):
        self.assertEqual(default_role("attn.weight", [486, 192], False), (0.0, 16 / np.sqrt(192)))
        self.assertEqual(default_role("network.0.3.attn.attn.weight", [486, 192], False), (0.0, 16 / np.sqrt(192)))
        self.assertEqual(default_role("attn.attn.bias", [486], False), (0.0, 0.02))
        self.assertEqual(default_role("attn.v.weight", [192, 192], False), (0.0, 1 / np.sqrt(192)))
        self.assertEqual(default_role("blocks.0.attn.qkv.weight", [1152, 384], False), (0.0, 1 / np.sqrt(384)))

    def test_fixture_weights_make_the_logits_matter(self):
        # With the exporter's weights, an outlook attention that ignored its logits (uniform 1/9
        # attention: attn Linear zeroed) must fail the case's tolerance class by a wide margin.
        for name, key, (atol, rtol) in (("outlook_attention/odd_b2", "out", (1e-3, 1e-3)),
                                        ("outlooker/odd_b2", "out", (1e-3, 1e-3)),
                                        ("volo_tiny_odd", "logits", (1e-2, 1e-2))):
            case = C.select("^%s$" % name)[0]
            module, inputs, _, _, _ = E.materialize(case, 1)
            ref = E.run_reference(module, inputs)[key]
            with torch.no_grad():
                for m in module.modules():
                    if isinstance(m, volo.OutlookAttention):
                        m.attn.weight.zero_()
                        m.attn.bias.zero_()
            bad = E.run_reference(module, inputs)[key]
            self.assertGreater(float(np.max(np.abs(bad - ref) / (atol + rtol * np.abs(ref)))), 5.0, name)

    def test_builtin_small_cases_through_exporter(self):
        # The exporter's own path (synthesized weights, run_reference, the float64 check).
        for case in C.select("^(outlook_attention/odd_b2|outlooker/odd_b2|class_block/odd_b2|patch_embed/volo_odd_b2|"
                             "volo_tiny_odd)$"):
            with self.subTest(case=case["name"]):
                module, inputs, weights, (_, _, outs), _ = E.materialize(case, 1)
                got = E.run_reference(module, inputs)
                self.assertEqual({k: list(v.shape) for k, v in got.items()}, outs)
                diff, err = E.independent_metrics(case, inputs, weights, got)
                self.assertLess(diff, 1e-4)
                self.assertLess(err, 1e-10)


if __name__ == "__main__":
    unittest.main()
