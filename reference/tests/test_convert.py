"""convert_checkpoint.py: a saved state_dict converts to the arrays the case needs; a wrong shape
or a missing array is listed and nothing is written."""

import os
import subprocess
import sys
import tempfile
import unittest

import _paths  # noqa: F401
import numpy as np
import torch

from vitbench_ref import cases as C

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "convert_checkpoint.py")


class TestConvert(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)

    def test_round_trip_and_errors(self):
        case = [c for c in C.select() if c["name"] == "vit_tiny_odd"][0]
        module = C.build_module(case["op"], case["params"])
        with tempfile.TemporaryDirectory() as d:
            ckpt, out = os.path.join(d, "m.pth"), os.path.join(d, "m.npz")
            torch.save({"model": module.state_dict(), "epoch": 3}, ckpt)
            r = self.run_script("--case", "vit_tiny_odd", ckpt, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with np.load(out) as z:
                sd = module.state_dict()
                self.assertEqual(sorted(z.files), sorted(sd))
                for k in z.files:
                    np.testing.assert_array_equal(z[k], sd[k].numpy())
            bad = dict(module.state_dict())
            bad["head.weight"] = torch.zeros(3, 3)
            del bad["norm.bias"]
            torch.save(bad, ckpt)
            os.remove(out)
            r = self.run_script("--case", "vit_tiny_odd", ckpt, out)
            self.assertEqual(r.returncode, 2)
            self.assertIn("head.weight has shape [3, 3]", r.stderr)
            self.assertIn("missing norm.bias", r.stderr)
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
