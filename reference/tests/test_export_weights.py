"""export.py --weights: a fixture with real weights in one command.  The weights of a .pth
state_dict (or of convert_checkpoint.py's .npz) are stored in the fixture's weights.npz, its
case.json lists every weight shape and synthesizes only the inputs, and its outputs are the
module's with those weights; weights that do not fit are refused naming the array."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import _paths  # noqa: F401
import numpy as np
import torch

from vitbench_ref import cases as C
from vitbench_ref.export import main, materialize, run_reference

REF = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASE = "vit_tiny_odd"  # a whole ViT (patch embed, blocks, head), the cheapest network


def real_weights(module, seed=7):
    """A state_dict unlike the generator's: normal weights, LayerNorm scales near 1."""
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(v.shape, generator=g) * 0.05 + (1.0 if "norm" in k and k.endswith(".weight") else 0.0)
            for k, v in module.state_dict().items()}


class TestExportWeights(unittest.TestCase):
    def test_pth_and_npz_round_trip(self):
        case = [c for c in C.select() if c["name"] == CASE][0]
        module = C.build_module(case["op"], case["params"])
        sd = real_weights(module)
        with tempfile.TemporaryDirectory() as d:
            pth, npz = os.path.join(d, "w.pth"), os.path.join(d, "w.npz")
            torch.save({"model": sd, "epoch": 1}, pth)
            self.assertEqual(main(["--out", os.path.join(d, "a"), "--only", "^%s$" % CASE, "--weights", pth, "-q"]), 0)
            fx = os.path.join(d, "a", CASE)
            with open(os.path.join(fx, "case.json"), encoding="utf-8") as f:
                doc = json.load(f)
            self.assertEqual(doc["weights"], {k: list(v.shape) for k, v in sd.items()})
            self.assertFalse(set(doc["synth"]["arrays"]) & set(sd), "weights recorded as synthesized")
            self.assertEqual(set(doc["synth"]["arrays"]), set(doc["inputs"]))
            with np.load(os.path.join(fx, "weights.npz")) as z:
                self.assertEqual(sorted(z.files), sorted(sd))
                for k in z.files:
                    np.testing.assert_array_equal(z[k], sd[k].numpy())
            # The stored outputs are the module's with these weights on the synthesized inputs.
            m, inputs, _, _, _ = materialize(case, 1)
            m.load_state_dict(sd)
            want = run_reference(m, inputs)
            with np.load(os.path.join(fx, "outputs.npz")) as z:
                for k, v in want.items():
                    np.testing.assert_array_equal(z[k], v)
            # The converter's .npz gives the same fixture.
            r = subprocess.run([sys.executable, os.path.join(REF, "convert_checkpoint.py"), "--case", CASE, pth, npz],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(main(["--out", os.path.join(d, "b"), "--only", "^%s$" % CASE, "--weights", npz, "-q"]), 0)
            for name in ("weights.npz", "outputs.npz"):
                with open(os.path.join(fx, name), "rb") as f1, open(os.path.join(d, "b", CASE, name), "rb") as f2:
                    self.assertEqual(f1.read(), f2.read(), name)

    def test_misfit_names_the_array(self):
        case = [c for c in C.select() if c["name"] == CASE][0]
        sd = real_weights(C.build_module(case["op"], case["params"]))
        sd["head.weight"] = torch.zeros(3, 3)
        del sd["norm.bias"]
        with tempfile.TemporaryDirectory() as d:
            pth = os.path.join(d, "bad.pth")
            torch.save(sd, pth)
            r = subprocess.run([sys.executable, os.path.join(REF, "export.py"), "--out", os.path.join(d, "o"),
                                "--only", "^%s$" % CASE, "--weights", pth], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("head.weight has shape [3, 3], the case needs", r.stderr)
            self.assertIn("missing norm.bias", r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "o")))
            r = subprocess.run([sys.executable, os.path.join(REF, "export.py"), "--out", os.path.join(d, "o"),
                                "--only", "^vit_", "--weights", pth], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--weights needs exactly one case", r.stderr)


if __name__ == "__main__":
    unittest.main()
