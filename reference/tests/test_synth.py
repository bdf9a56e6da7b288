"""The NumPy generator against fixtures/synth_vectors.json (written by the independent scalar
implementation in make_synth_vectors.py), plus the default role table."""

import hashlib
import json
import math
import os
import unittest

import _paths  # noqa: F401  (sets sys.path)
import numpy as np

from vitbench_ref import synth as S


def load_vectors():
    with open(os.path.join(_paths.FIXTURES, "synth_vectors.json"), encoding="utf-8") as f:
        return json.load(f)


class TestSynthVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc = load_vectors()

    def test_fnv1a64(self):
        for e in self.doc["fnv1a64"]:
            self.assertEqual("0x%016x" % S.fnv1a64(e["name"]), e["fnv1a64"], e["name"])
        # The published FNV-1a 64 value for "a".
        self.assertEqual(S.fnv1a64("a"), 0xAF63DC4C8601EC8C)

    def test_mix64(self):
        for e in self.doc["mix64"]:
            got = int(S.mix64(np.array([int(e["in"], 16)], dtype=np.uint64))[0])
            self.assertEqual("0x%016x" % got, e["out"])

    def test_vectors(self):
        self.assertGreaterEqual(len(self.doc["vectors"]), 10)
        for v in self.doc["vectors"]:
            with self.subTest(seed=v["seed"], name=v["name"]):
                self.assertEqual("0x%016x" % S.fnv1a64(v["name"]), v["key"])
                self.assertEqual("0x%016x" % S.stream_of(v["seed"], v["name"]), v["stream"])
                raw = S.raw_bits(v["seed"], v["name"], np.arange(len(v["first_raw"]), dtype=np.uint64))
                self.assertEqual(["0x%016x" % int(x) for x in raw], v["first_raw"])
                arr = S.synth(v["seed"], v["name"], v["shape"], v["center"], v["scale"])
                self.assertEqual(arr.dtype, np.float32)
                self.assertEqual(list(arr.shape), v["shape"])
                bits = arr.reshape(-1).view("<u4")
                self.assertEqual(["0x%08x" % b for b in bits[:16]], v["first"])
                self.assertEqual(hashlib.sha256(arr.astype("<f4").tobytes()).hexdigest(), v["sha256_f32le"])
                idx = np.array([i for i, _ in v["at"]], dtype=np.uint64)
                got = S.synth_at(v["seed"], v["name"], idx, v["center"], v["scale"]).view("<u4")
                self.assertEqual(["0x%08x" % b for b in got], [b for _, b in v["at"]])

    def test_coverage_of_vectors(self):
        seeds = {v["seed"] for v in self.doc["vectors"]}
        self.assertIn(0, seeds)
        self.assertIn(2 ** 64 - 1, seeds)
        self.assertTrue(any(any(ord(ch) > 127 for ch in v["name"]) for v in self.doc["vectors"]))
        self.assertTrue(any(i == 10 ** 9 + 7 for v in self.doc["vectors"] for i, _ in v["at"]))
        self.assertTrue(any(v["scale"] == 1 / math.sqrt(147) for v in self.doc["vectors"]))
        self.assertTrue(any(v["center"] == 1 and v["scale"] == 0.1 for v in self.doc["vectors"]))


class TestSynthProperties(unittest.TestCase):
    def test_slices_are_independent(self):
        full = S.synth(3, "w", [5, 7], 0.0, 1.0).reshape(-1)
        part = S.synth_at(3, "w", np.arange(10, 20, dtype=np.uint64), 0.0, 1.0)
        np.testing.assert_array_equal(full[10:20], part)

    def test_range_and_dtype(self):
        a = S.synth(1, "x", [4096], 0.0, 1.0)
        self.assertEqual(a.dtype, np.float32)
        self.assertTrue(np.all(a >= -1) and np.all(a < 1))
        # values are multiples of 2^-23
        self.assertTrue(np.all(a * np.float32(2 ** 23) == np.round(a * np.float32(2 ** 23))))
        b = S.synth(1, "norm.weight", [4096], 1.0, 0.1)
        self.assertTrue(np.all(b >= np.float32(0.9)) and np.all(b <= np.float32(1.1)))

    def test_name_and_seed_matter(self):
        a = S.synth(1, "x", [64])
        self.assertFalse(np.array_equal(a, S.synth(2, "x", [64])))
        self.assertFalse(np.array_equal(a, S.synth(1, "y", [64])))

    def test_bad_seed(self):
        with self.assertRaises(ValueError):
            S.synth(-1, "x", [2])
        with self.assertRaises(ValueError):
            S.synth(2 ** 64, "x", [2])


class TestDefaultRole(unittest.TestCase):
    def test_roles(self):
        self.assertEqual(S.default_role("x", [1, 3, 224, 224], True), (0.0, 1.0))
        self.assertEqual(S.default_role("proj.weight", [768, 3, 16, 16], False), (0.0, 1 / math.sqrt(768)))
        self.assertEqual(S.default_role("fc1.weight", [1536, 384], False), (0.0, 1 / math.sqrt(384)))
        self.assertEqual(S.default_role("norm1.weight", [384], False), (1.0, 0.1))
        self.assertEqual(S.default_role("proj.bias", [768], False), (0.0, 0.02))
        self.assertEqual(S.default_role("cls_token", [1, 1, 384], False), (0.0, 0.02))
        self.assertEqual(S.default_role("pos_embed", [1, 197, 384], False), (0.0, 0.02))
        # FORMAT.md's example value rounds to the same float32.
        self.assertEqual(np.float32(S.default_role("proj.weight", [768, 3, 16, 16], False)[1]),
                         np.float32(0.03608439182435161))


if __name__ == "__main__":
    unittest.main()
