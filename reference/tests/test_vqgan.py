"""VQGAN (docs/reference-notes.md, VQGAN): the reference modules' parameter counts against the
original's, the quirks a port gets wrong (one-sided padding, GroupNorm's eps, the expanded distance,
the first minimum, the straight-through value), and the committed fixtures' codebook searches: no
near-tie in the network fixtures, near-ties in the ties fixture."""

import json
import os
import unittest

import _paths  # noqa: F401
import numpy as np
import torch
import torch.nn.functional as F

from vitbench_ref import cases as C
from vitbench_ref import mingpt, vqgan
from vitbench_ref.export import materialize

torch.set_num_threads(2)

IMAGENET = {"resolution": 256, "in_channels": 3, "out_ch": 3, "ch": 128, "ch_mult": [1, 1, 2, 2, 4],
            "num_res_blocks": 2, "attn_resolutions": [16], "z_channels": 256, "embed_dim": 256, "n_embed": 1024}


def count(m):
    return sum(p.numel() for p in m.parameters())


class TestVQGAN(unittest.TestCase):
    def test_imagenet_params(self):
        m = vqgan.VQModel(IMAGENET)
        self.assertEqual(count(m.encoder), 29298176)
        self.assertEqual(count(m.decoder), 42449795)
        self.assertEqual(count(m.quantize), 262144)
        self.assertEqual(count(m), 72141699)

    def test_downsample_pads_right_and_bottom(self):
        torch.manual_seed(0)
        d = vqgan.Downsample(32).eval()
        x = torch.randn(1, 32, 9, 8)
        with torch.no_grad():
            got = d(x)
            sym = F.conv2d(x, d.conv.weight, d.conv.bias, stride=2, padding=1)
            own = F.conv2d(F.pad(x, (0, 1, 0, 1)), d.conv.weight, d.conv.bias, stride=2)
        self.assertEqual(list(got.shape), [1, 32, vqgan.down_size(9), vqgan.down_size(8)])
        self.assertTrue(torch.equal(got, own))
        self.assertGreater(float((got - sym[..., :got.shape[2], :got.shape[3]]).abs().max()), 0.1)

    def test_groupnorm_eps(self):
        n = vqgan.normalize(64)
        self.assertEqual((n.num_groups, n.eps), (32, 1e-6))

    def test_quantize_first_minimum_and_straight_through(self):
        e = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        z = torch.tensor([[[[0.5]], [[0.5]]], [[[1.0]], [[0.0]]]])  # [2, 2, 1, 1]: a tie of codes 0 and 1; code 0 = 2
        q, idx = vqgan.quantize(z, e)
        self.assertEqual(idx.flatten().tolist(), [0.0, 0.0])
        zn = z.permute(0, 2, 3, 1)
        self.assertTrue(torch.equal(q, (zn + (e[[0, 0]].view(2, 1, 1, 2) - zn)).permute(0, 3, 1, 2)))

    def test_straight_through_is_not_the_row(self):
        g = torch.Generator().manual_seed(3)
        z = torch.randn(1, 64, 8, 8, generator=g)
        e = torch.rand(256, 64, generator=g) / 1024
        q, idx = vqgan.quantize(z, e)
        rows = e[idx.flatten().long()].view(1, 8, 8, 64).permute(0, 3, 1, 2)
        self.assertFalse(torch.equal(q, rows))
        self.assertLess(float((q - rows).abs().max()), 1e-6)

    def test_network_fixtures_have_no_near_ties(self):
        for case in C.select("^(vqgan_small|vqgan_small_odd_b2)$"):
            module, inputs, _, _, _ = materialize(case, case.get("seed", 1))
            with torch.no_grad():
                z = module.quant_conv(module.encoder(torch.from_numpy(inputs["x"])))
            near = vqgan.near_ties(z.numpy(), module.quantize.embedding.weight.detach().numpy())
            self.assertEqual(len(near), 0, "%s: near-tied codes at %s" % (case["name"], near))

    def test_ties_fixture_has_near_ties(self):
        case = C.select("^vector_quantize/ties_b2$")[0]
        _, inputs, weights, _, _ = materialize(case, 1)
        near = vqgan.near_ties(inputs["z"], weights["embedding.weight"])
        n = int(np.prod(inputs["z"].shape)) // inputs["z"].shape[1]
        self.assertGreaterEqual(len(near), n // 4 - 1)
        # The stored reference resolves each within the band: every stored index is within tau of the minimum.
        path = os.path.join(_paths.FIXTURES, "vector_quantize", "ties_b2", "outputs.npz")
        idx = np.load(path)["indices"].reshape(-1).astype(np.int64)
        d, tau = vqgan.tie_band(inputs["z"], weights["embedding.weight"])
        rows = np.arange(len(idx))
        self.assertTrue(np.all(d[rows, idx] - d.min(axis=1) <= tau))


class TestMinGPT(unittest.TestCase):
    def test_drin_params(self):
        # The D-RIN GPT of configs/drin_transformer.yaml, without its 24 registered mask buffers.
        self.assertEqual(C.macs("mingpt", C.select("^mingpt_drin$")[0]["params"], 1),
                         24 * (12 * 511 * 1024 ** 2 + 2 * 511 ** 2 * 1024) + 511 * 1024 * 1024)
        shapes = mingpt.shapes("mingpt", C.select("^mingpt_drin$")[0]["params"], 1)[1]
        self.assertEqual(sum(int(np.prod(s)) for s in shapes.values()), 304932864)

    def test_causal_and_exact_gelu(self):
        torch.manual_seed(0)
        m = mingpt.GPT(50, 16, 2, 2, 32).eval()
        with torch.no_grad():
            m.pos_emb.normal_()
            idx = torch.randint(0, 50, (1, 12)).float()
            a = m(idx)["logits"]
            idx2 = idx.clone()
            idx2[0, 7] = (idx2[0, 7] + 1) % 50
            b = m(idx2)["logits"]
        self.assertTrue(torch.equal(a[0, :7], b[0, :7]))  # earlier positions do not see later tokens
        self.assertFalse(torch.equal(a[0, 7:], b[0, 7:]))
        self.assertEqual(m.blocks[0].mlp[1].approximate, "none")
        self.assertNotIn("blocks.0.attn.mask", m.state_dict())


if __name__ == "__main__":
    unittest.main()
