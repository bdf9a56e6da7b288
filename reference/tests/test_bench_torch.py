"""bench_torch.py: result lines in the Go benchmark format with the case's process peak RSS, a
case that raises kept as a '# FAILED' line while the others are timed, and --dtype checked."""

import os
import re
import tempfile
import unittest
from unittest import mock

import _paths  # noqa: F401
import torch

import bench_torch as BT

LINE = re.compile(r"^Benchmark_(?P<case>\S+)/backend=torch/batch=(?P<batch>\d+)/threads=1/dtype=float32 \t(?P<runs>\d+)\t"
                  r"(?P<ns>\d+) ns/op\t.*\t(?P<macs>\d+) MACs/op\t(?P<rss>\d+) B/rss$")


class TestBenchTorch(unittest.TestCase):
    def setUp(self):
        # main() sets torch's thread count; the other test modules share this process.
        threads = torch.get_num_threads()
        self.addCleanup(torch.set_num_threads, threads)

    def run_main(self, *args):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.txt")
            rc = BT.main(["-o", out, "--threads", "1", "--count", "2", "--warmup", "1"] + list(args))
            with open(out) as f:
                return rc, f.read().splitlines()

    def test_lines_carry_rss(self):
        rc, lines = self.run_main("--run", "^(gemm/odd_m13_n37_k29|layernorm/odd_b2_d147)$")
        self.assertEqual(rc, 0)
        rows = [LINE.match(l) for l in lines if l.startswith("Benchmark_") and "backend=torch" in l]
        self.assertEqual(len(rows), 4, lines)
        for m in rows:
            self.assertIsNotNone(m, lines)
            # The process holds at least the interpreter and torch: tens of MiB.
            self.assertGreater(int(m.group("rss")), 20 << 20)
        self.assertIn("Unit B/rss better=lower", lines)

    def test_failing_case_is_kept_and_others_run(self):
        real = BT.bench_case

        def flaky(case, *a, **kw):
            if case["name"] == "gemm/odd_m13_n37_k29":
                raise RuntimeError("CUDA out of memory.\nTried to allocate 2 GiB")
            return real(case, *a, **kw)

        with mock.patch.object(BT, "bench_case", flaky):
            rc, lines = self.run_main("--run", "^(gemm/odd_m13_n37_k29|layernorm/odd_b2_d147)$")
        self.assertEqual(rc, 1)
        failed = [l for l in lines if l.startswith("# FAILED")]
        self.assertEqual(failed, ["# FAILED Benchmark_gemm/odd_m13_n37_k29/backend=torch/batch=1/threads=1/dtype=float32: "
                                  "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"])
        self.assertTrue(any(l.startswith("Benchmark_layernorm/odd_b2_d147/backend=torch/") for l in lines), lines)

    def test_reduced_precision_needs_the_gpu(self):
        with self.assertRaises(SystemExit):
            BT.main(["-o", os.devnull, "--run", "^gemm/512$", "--dtype", "bf16"])


if __name__ == "__main__":
    unittest.main()
