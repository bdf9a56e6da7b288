"""The PyTorch side's foreign-load arithmetic matches the Go side's (bench/contention)."""
import os
import subprocess
import sys
import time
import unittest

import _paths  # noqa: F401  (puts reference/ on sys.path)
from vitbench_ref import contention as L

BEFORE = """cpu  1000 50 300 8000 100 0 20 30 7 0
cpu0 500 25 150 4000 50 0 10 15 7 0
cpu1 500 25 150 4000 50 0 10 15 0 0
intr 123 0 0
"""
AFTER = """cpu  1090 50 320 8070 110 0 20 40 9 0
cpu0 545 25 160 4035 55 0 10 20 9 0
cpu1 545 25 160 4035 55 0 10 20 0 0
"""


class ContentionTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(L.parse_stat(BEFORE), (1400, 9500, 2))
        for bad in ("", "intr 1\n", "cpu 1 2\n"):
            with self.assertRaises(ValueError):
                L.parse_stat(bad)

    def test_arithmetic(self):
        a, b = L.parse_stat(BEFORE), L.parse_stat(AFTER)
        self.assertAlmostEqual(L.foreign(a, b, 0.7, 1.0), 0.25)
        self.assertEqual(L.foreign(a, b, 1.2, 1.0), 0.0)
        self.assertIsNone(L.foreign(b, a, 0.0, 1.0))
        self.assertTrue(L.contended(0.25, 1.0))
        self.assertFalse(L.contended(0.105, 1.0))
        self.assertFalse(L.contended(0.15, 0.1))
        self.assertFalse(L.contended(None, 1.0))
        self.assertEqual(L.load_line("BenchmarkX/backend=torch", 0.4213, True), "# load BenchmarkX/backend=torch: 0.421 contended")
        self.assertEqual(L.load_line("BenchmarkX", None, False), "# load BenchmarkX: null")

    def test_busy_children_flag_the_window(self):
        if not os.path.exists("/proc/stat"):
            self.assertEqual(L.Window().stop(), (None, False))  # not measured: null, never 0
            return
        kids = [subprocess.Popen([sys.executable, "-c", "import time\nt=time.time()+10\nwhile time.time()<t: pass"])
                for _ in range(os.cpu_count() or 1)]
        try:
            time.sleep(0.3)
            w = L.Window()
            time.sleep(0.6)
            load, flagged = w.stop()
        finally:
            for k in kids:
                k.kill()
                k.wait()
        self.assertTrue(flagged, load)
        self.assertGreaterEqual(load, 0.5)


if __name__ == "__main__":
    unittest.main()
