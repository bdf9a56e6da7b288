"""IPT: the reference modules' parameter counts (option.py's defaults), the mean shift's frozen values,
the body's layers against a plain recomputation, and forward_chop's stitching: with a model that
commutes with translation the stitched image equals the model on the whole image, and the
original's 100x130 example at x2 runs 60 tiles."""

import math
import unittest

import _paths  # noqa: F401
import numpy as np
import torch
import torch.nn.functional as F

from vitbench_ref import cases as C
from vitbench_ref import ipt


def _randomize(module, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for v in module.state_dict().values():
            v.copy_(torch.randn(v.shape, generator=g, dtype=v.dtype) * 0.2)


class IPTTest(unittest.TestCase):
    def test_param_counts(self):
        for scale, total in (([4], 115608155), ([3], 115645083), ([2], 115460443), ([1], 115312731)):
            m = ipt.build("ipt", C.normalize_params("ipt", {"scale": scale}))
            self.assertEqual(sum(p.numel() for p in m.parameters()), total, scale)
            self.assertEqual(sum(p.numel() for p in m.body.parameters()), 114899328)

    def test_mean_shift(self):
        x = torch.rand(2, 3, 4, 5) * 255
        mean = torch.tensor(ipt.RGB_MEAN).view(1, 3, 1, 1) * 255
        with torch.no_grad():
            torch.testing.assert_close(ipt.MeanShift(sign=-1)(x), x - mean)
            torch.testing.assert_close(ipt.MeanShift(sign=1)(x), x + mean)

    def test_decoder_layer_by_hand(self):
        p = C.normalize_params("ipt_decoder_layer", {"n_feats": 4, "patch_size": 6, "num_heads": 2})
        m = ipt.build("ipt_decoder_layer", p).double().eval()
        _randomize(m, 3)
        b, s, d, h = 2, 4, 36, 2
        tgt, mem = torch.randn(b, s, d, dtype=torch.float64), torch.randn(b, s, d, dtype=torch.float64)
        sd = {k: v for k, v in m.state_dict().items()}

        def ln(x, name):
            mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
            return (x - mu) / torch.sqrt(var + 1e-5) * sd[name + ".weight"] + sd[name + ".bias"]

        def attn(q, k, v, pre):
            w = sd[pre + "in_proj_weight"]
            q, k, v = q @ w[:d].T, k @ w[d:2 * d].T, v @ w[2 * d:].T
            out = []
            for i in range(h):
                sl = slice(i * d // h, (i + 1) * d // h)
                a = torch.softmax(q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(d // h), -1)
                out.append(a @ v[..., sl])
            return torch.cat(out, -1) @ sd[pre + "out_proj.weight"].T

        qp = sd["query_pos"]
        t = tgt
        n1 = ln(t, "norm1")
        t = t + attn(n1 + qp, n1 + qp, n1, "self_attn.")
        t = t + attn(ln(t, "norm2") + qp, mem, mem, "multihead_attn.")
        hid = F.relu(ln(t, "norm3") @ sd["linear1.weight"].T + sd["linear1.bias"])
        want = t + hid @ sd["linear2.weight"].T + sd["linear2.bias"]
        with torch.no_grad():
            torch.testing.assert_close(m(tgt, mem), want)

    def _chop(self, size, scale, patch=12):
        p = C.normalize_params("ipt_chop", {"n_feats": 4, "patch_size": patch, "num_heads": 2, "num_layers": 1,
                                            "scale": [scale], "img_size": size})
        m = ipt.build("ipt_chop", p).eval()
        calls = []

        def stand_in(x):  # translation-equivariant: every output pixel depends on its own input pixel
            calls.append(x.shape[0])
            return (x * 2 + 1).repeat_interleave(scale, 2).repeat_interleave(scale, 3)
        m.run = stand_in
        x = torch.randn(2, 3, *size)
        with torch.no_grad():
            return m(x), stand_in(x), calls

    def test_chop_equals_whole_image(self):
        for size, scale in (([29, 23], 2), ([12, 20], 3), ([31, 31], 1), ([12, 12], 4), ([100, 130], 2)):
            patch = 48 if size[0] >= 48 else 12
            got, want, _ = self._chop(size, scale, patch)
            torch.testing.assert_close(got, want[:, :, :], msg="%s x%d" % (size, scale))

    def test_chop_tile_count(self):
        _, _, calls = self._chop([100, 130], 2, 48)
        # two images, each: grid 5x7, bottom 7, right 5, top 7, left 5, corner 1 (the whole-image call last)
        self.assertEqual(sum(calls[:-1]), 2 * 60)


if __name__ == "__main__":
    unittest.main()
