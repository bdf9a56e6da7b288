"""detr_transformer: the reference module (DETR's Transformer on nn.MultiheadAttention) against its
float64 NumPy recomputation at shapes no fixture has, the parameter count of the original, the
state_dict names the case rules list, and DETR's sine positions (no -0.5 offset)."""

import math
import unittest

import _paths  # noqa: F401
import numpy as np
import torch

from vitbench_ref import cases as C
from vitbench_ref import detr
from vitbench_ref.detector import position_embedding_sine


def _params(**kw):
    return C.normalize_params("detr_transformer", dict({"feature_size": [3, 5]}, **kw))


def _weights(module, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for v in module.state_dict().values():
            v.copy_(torch.randn(v.shape, generator=g, dtype=v.dtype) * 0.3)
    return {k: v.numpy() for k, v in module.state_dict().items()}


class DETRTransformerTest(unittest.TestCase):
    def test_param_count(self):
        m = detr.DETRTransformer((25, 34))
        self.assertEqual(sum(p.numel() for p in m.transformer.parameters()), 17363456)
        self.assertEqual(sum(p.numel() for p in m.parameters()), 17363456 + 25600)

    def test_state_dict_names_are_the_case_rules(self):
        p = _params(enc_layers=2, dec_layers=3, ffn_dim=40, queries=6)
        m = C.build_module("detr_transformer", p)
        _, weights, _ = C.shapes("detr_transformer", p, 1)
        self.assertEqual([(k, list(v.shape)) for k, v in m.state_dict().items()], list(weights.items()))

    def test_module_matches_float64_padded_odd(self):
        # batch 2, a 3x5 map, 4 heads, every image padded differently (one not at all).
        p = _params(heads=4, enc_layers=2, dec_layers=2, ffn_dim=48, queries=7, padding_mask=True)
        m = C.build_module("detr_transformer", p).double()
        w = _weights(m, 3)
        rng = np.random.default_rng(5)
        src = rng.standard_normal((3, 15, 256))
        mask = np.zeros((3, 3, 5), bool)
        mask[0, 2:, :] = True
        mask[1, :, 3:] = True
        mask = mask.reshape(3, 15)
        with torch.no_grad():
            got = m(torch.from_numpy(src), torch.from_numpy(mask))
        want = detr.detr_transformer_float64(src, mask, w, p)
        self.assertEqual(list(got["hs"].shape), [2, 3, 7, 256])
        for k in ("memory", "hs"):
            np.testing.assert_allclose(got[k].numpy(), want[k], atol=1e-9, rtol=0, err_msg=k)
        # The mask matters: without it the padded images' outputs change.
        with torch.no_grad():
            free = m(torch.from_numpy(src))
        self.assertGreater(float((free["hs"][:, 0] - got["hs"][:, 0]).abs().max()), 1e-3)
        np.testing.assert_allclose(free["hs"][:, 2].numpy(), got["hs"][:, 2].numpy(), atol=1e-12)

    def test_sine_positions_have_no_offset(self):
        # A 4x3 map whose last row and column are padding: the unpadded y cumulative sums are 1, 2, 3
        # over 3 valid rows, so row r's first y feature is sin((r + 1) / 3 * 2pi) with no -0.5.
        mask = torch.zeros(1, 4, 3, dtype=torch.bool)
        mask[0, 3, :] = True
        mask[0, :, 2] = True
        pos = position_embedding_sine(mask, 128, dtype=torch.float64, offset=0)
        for r in range(3):
            want = math.sin((r + 1) / (3 + 1e-6) * 2 * math.pi)
            self.assertAlmostEqual(float(pos[0, 0, r, 0]), want, places=12)
        np.testing.assert_allclose(detr.sine_float64(mask.numpy()), pos.flatten(2).transpose(1, 2).numpy(), atol=1e-12)
        ddetr = position_embedding_sine(mask, 128, dtype=torch.float64)
        self.assertGreater(float((ddetr - pos).abs().max()), 0.1)

    def test_rules(self):
        with self.assertRaises(ValueError):
            _params(d_model=128)
        with self.assertRaises(ValueError):
            _params(heads=7)
        self.assertEqual(_params()["feature_size"], [3, 5])


if __name__ == "__main__":
    unittest.main()
