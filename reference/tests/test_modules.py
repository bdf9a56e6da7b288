"""Reference modules: documented shapes, channel order (hand-checked) and equality with
independent formulations (explicit patch GEMM, explicit index loops, F.unfold)."""

import unittest

import _paths  # noqa: F401
import torch
import torch.nn.functional as F

from vitbench_ref import cases as C
from vitbench_ref.modules import PatchEmbed, SoftSplit, patch_embed_gemm, soft_split_loops

torch.set_num_threads(2)


class TestSoftSplit(unittest.TestCase):
    def test_hand_checked_channel_order(self):
        # x[0, c, y, x] = 9c + 3y + x; k=2, s=1, p=0 -> 2x2 windows, 8 features c*4 + ky*2 + kx.
        x = torch.arange(18, dtype=torch.float32).reshape(1, 2, 3, 3)
        out = SoftSplit(2)(x)
        expected = torch.tensor([[[0, 1, 3, 4, 9, 10, 12, 13],
                                  [1, 2, 4, 5, 10, 11, 13, 14],
                                  [3, 4, 6, 7, 12, 13, 15, 16],
                                  [4, 5, 7, 8, 13, 14, 16, 17]]], dtype=torch.float32)
        self.assertEqual(tuple(out.shape), (1, 4, 8))
        self.assertTrue(torch.equal(out, expected))

    def test_hand_checked_padding(self):
        # 1..9 on a 3x3 map; k3 s2 p1 -> Ho = Wo = (3 + 2 - 2 - 1)//2 + 1 = 2.
        x = torch.arange(1, 10, dtype=torch.float32).reshape(1, 1, 3, 3)
        out = SoftSplit(3, stride=2, padding=1)(x)
        expected = torch.tensor([[[0, 0, 0, 0, 1, 2, 0, 4, 5],
                                  [0, 0, 0, 2, 3, 0, 5, 6, 0],
                                  [0, 4, 5, 0, 7, 8, 0, 0, 0],
                                  [5, 6, 0, 8, 9, 0, 0, 0, 0]]], dtype=torch.float32)
        self.assertTrue(torch.equal(out, expected))

    def test_hand_checked_dilation_rect(self):
        # 1x1x3x4 map, kernel [1, 2], dilation [1, 2], stride 1: pairs (x, x+2) per row.
        x = torch.arange(12, dtype=torch.float32).reshape(1, 1, 3, 4)
        out = SoftSplit([1, 2], dilation=[1, 2])(x)
        expected = torch.tensor([[[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11]]], dtype=torch.float32)
        self.assertTrue(torch.equal(out, expected))

    def test_builtin_cases_match_loops_and_shapes(self):
        g = torch.Generator().manual_seed(0)
        for case in C.select("^soft_split/"):
            p = case["params"]
            ins, _, outs = C.shapes("soft_split", p, case["batch"])
            x = torch.randn(*ins["x"], generator=g)
            with self.subTest(case=case["name"]):
                out = C.build_module("soft_split", p)(x)
                self.assertEqual(list(out.shape), outs["out"])
                self.assertTrue(torch.equal(out, soft_split_loops(x, p["kernel_size"], p["stride"],
                                                                  p["padding"], p["dilation"])))
                self.assertTrue(torch.equal(out, F.unfold(x, p["kernel_size"], p["dilation"], p["padding"],
                                                          p["stride"]).transpose(1, 2)))

    def test_t2t_shapes(self):
        self.assertEqual(C.shapes("soft_split", C.select("t2t_ss0$")[0]["params"], 1)[2]["out"], [1, 3136, 147])
        self.assertEqual(C.shapes("soft_split", C.select("t2t_ss1$")[0]["params"], 1)[2]["out"], [1, 784, 576])
        self.assertEqual(C.shapes("soft_split", C.select("t2t_ss2$")[0]["params"], 1)[2]["out"], [1, 196, 576])


class TestPatchEmbed(unittest.TestCase):
    def test_state_dict_keys(self):
        self.assertEqual(sorted(PatchEmbed(3, 8, 4, 16).state_dict()), ["proj.bias", "proj.weight"])
        self.assertEqual(sorted(PatchEmbed(3, 8, 4, 16, bias=False).state_dict()), ["proj.weight"])
        self.assertFalse(PatchEmbed(3, 8, 4, 16).training)

    def test_hand_checked(self):
        # One channel, one output feature, 2x2 patches, weight picks (ky, kx) with 1, 10, 100, 1000.
        m = PatchEmbed(1, 1, 2, [2, 5], bias=True)  # width 5: the last column is dropped
        with torch.no_grad():
            m.proj.weight.copy_(torch.tensor([[[[1.0, 10.0], [100.0, 1000.0]]]]))
            m.proj.bias.fill_(0.5)
        x = torch.tensor([[[[1.0, 2.0, 3.0, 4.0, 9.0], [5.0, 6.0, 7.0, 8.0, 9.0]]]])
        out = m(x)
        self.assertEqual(tuple(out.shape), (1, 2, 1))
        self.assertEqual(out.reshape(-1).tolist(), [1 + 20 + 500 + 6000 + 0.5, 3 + 40 + 700 + 8000 + 0.5])

    def test_channel_order_and_row_major(self):
        # Two channels: feature = sum over (c, ky, kx) of x * w with w distinct powers; 2x2 grid of patches.
        m = PatchEmbed(2, 1, 1, [2, 2], bias=False)
        with torch.no_grad():
            m.proj.weight.copy_(torch.tensor([[[[1.0]], [[100.0]]]]))
        x = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]])
        self.assertEqual(m(x).reshape(-1).tolist(), [501.0, 602.0, 703.0, 804.0])

    def test_builtin_cases_match_gemm(self):
        g = torch.Generator().manual_seed(0)
        for case in C.select("^patch_embed/"):
            if case["op"] != "patch_embed":
                continue  # patch_embed/volo_*: the VOLO stem (op volo_stem), tested in test_volo.py
            p = case["params"]
            ins, ws, outs = C.shapes("patch_embed", p, case["batch"])
            m = C.build_module("patch_embed", p)
            with torch.no_grad():
                for name, t in m.state_dict().items():
                    self.assertEqual(list(t.shape), ws[name])
                    t.copy_(torch.randn(*ws[name], generator=g) * 0.05)
                x = torch.randn(*ins["x"], generator=g)
                out = m(x)
                ref = patch_embed_gemm(x, m.proj.weight, m.proj.bias, p["patch_size"])
            with self.subTest(case=case["name"]):
                self.assertEqual(list(out.shape), outs["out"])
                torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)

    def test_odd_case_floor(self):
        p = C.select("odd_c5_e37_p7")[0]["params"]
        self.assertEqual(C.shapes("patch_embed", p, 1)[2]["out"], [1, (31 // 7) * (45 // 7), 37])


class TestCaseParams(unittest.TestCase):
    def test_defaults_and_errors(self):
        p = C.normalize_params("soft_split", {"in_chans": 1, "img_size": 8, "kernel_size": 3})
        self.assertEqual(p, {"in_chans": 1, "img_size": [8, 8], "kernel_size": [3, 3], "stride": [1, 1],
                             "padding": [0, 0], "dilation": [1, 1]})
        with self.assertRaises(ValueError):
            C.normalize_params("soft_split", {"in_chans": 1, "img_size": 8, "kernel_size": 3, "bogus": 1})
        with self.assertRaises(ValueError):
            C.normalize_params("patch_embed", {"in_chans": 1, "img_size": 8})
        self.assertEqual(len({c["name"] for c in C.CASES}), len(C.CASES))


if __name__ == "__main__":
    unittest.main()
