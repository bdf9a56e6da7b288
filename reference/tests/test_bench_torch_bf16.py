"""bench_torch.py --dtype bf16 on the CPU: both modes (autocast, bf16 weights) run a case in bf16,
the faster is the row (dtype=bfloat16) and its '# baseline' label says which mode won and what
the other measured; BF16.faster picks the smaller median and survives one mode failing."""

import os
import re
import tempfile
import unittest

import _paths  # noqa: F401
import torch

import bench_torch as BT
from vitbench_ref import bf16 as BF16

LABEL = re.compile(r"^# baseline Benchmark(?P<case>\S+)/backend=torch/batch=\d+/threads=1/dtype=bfloat16: .+; "
                   r"bf16 by (?P<mode>autocast|weights) \(.+\), (?P<ms>[0-9.e+-]+) ms, the faster of the two: "
                   r"(?P<other>autocast|weights) (?P<other_ms>[0-9.e+-]+) ms$")


class TestBenchTorchBF16(unittest.TestCase):
    def setUp(self):
        threads = torch.get_num_threads()
        self.addCleanup(torch.set_num_threads, threads)

    def test_both_modes_run_and_the_faster_is_kept(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.txt")
            rc = BT.main(["-o", out, "--threads", "1", "--count", "3", "--warmup", "1", "--dtype", "bf16",
                          "--run", "^(gemm/odd_m13_n37_k29|layernorm/odd_b2_d147)$"])
            with open(out) as f:
                lines = f.read().splitlines()
        self.assertEqual(rc, 0)
        rows = [ln for ln in lines if ln.startswith("Benchmark")]
        # Every row is PyTorch's in bf16 (NumPy's fp32 BLAS row belongs to the fp32 run).
        self.assertTrue(rows and all("/backend=torch/" in ln and "/dtype=bfloat16 " in ln for ln in rows), lines)
        labels = [LABEL.match(ln) for ln in lines if ln.startswith("# baseline ") and "backend=torch" in ln]
        self.assertEqual(len(labels), 2, lines)
        for m in labels:
            self.assertIsNotNone(m, lines)
            self.assertNotEqual(m["mode"], m["other"])
            # The row's median is the kept mode's, and the kept mode is the faster one.
            self.assertLessEqual(float(m["ms"]), float(m["other_ms"]), m.group(0))
            ns = sorted(int(ln.split("\t")[2].split()[0]) for ln in rows if ln.startswith("Benchmark" + m["case"] + "/"))
            self.assertAlmostEqual(ns[len(ns) // 2] / 1e6, float(m["ms"]), delta=float(m["ms"]) * 1e-3 + 1e-6)

    def test_fp16_on_the_cpu_is_still_refused(self):
        with tempfile.TemporaryDirectory() as d, self.assertRaises(SystemExit):
            BT.main(["-o", os.path.join(d, "t.txt"), "--dtype", "fp16", "--run", "^gemm/512$"])

    def test_modes_compute_in_bf16(self):
        lin = torch.nn.Linear(8, 4)
        x = torch.randn(2, 8)
        with torch.inference_mode():
            f, a = BF16.prepare(lin, [x], "autocast")
            self.assertEqual(f(*a).dtype, torch.bfloat16)
            self.assertEqual(lin.weight.dtype, torch.float32)  # autocast keeps fp32 weights
            f, a = BF16.prepare(torch.nn.Linear(8, 4), [x], "weights")
            self.assertEqual(a[0].dtype, torch.bfloat16)
            self.assertEqual(f(*a).dtype, torch.bfloat16)
        with self.assertRaises(ValueError):
            BF16.prepare(lin, [x], "fp8")

    def test_faster_picks_the_smaller_median(self):
        medians = {"autocast": 30.0, "weights": 20.0}
        got, mode, seen = BF16.faster(lambda m: ([(1, medians[m], None)] * 3, m))
        self.assertEqual((mode, got[1]), ("weights", "weights"))
        self.assertEqual(seen, medians)
        self.assertIn("bf16 by weights", BF16.note(mode, seen))

        def half_broken(m):
            if m == "weights":
                raise RuntimeError("no bf16 kernel")
            return [(1, 5.0, None)], m
        got, mode, seen = BF16.faster(half_broken)
        self.assertEqual(mode, "autocast")
        self.assertIn("weights failed: RuntimeError: no bf16 kernel", BF16.note(mode, seen))

        def broken(m):
            raise TypeError("no %s" % m)
        with self.assertRaisesRegex(RuntimeError, "both modes failed: autocast: TypeError: no autocast; "
                                                  "weights: TypeError: no weights"):
            BF16.faster(broken)


if __name__ == "__main__":
    unittest.main()
