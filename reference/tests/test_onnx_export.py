"""onnx_export.py and bench_ort.js: small cases exported to ONNX (the custom Col2Im and
DeformConv symbolics, GridSample, attention, a whole small ViT) and run by onnxruntime-node
compute what the PyTorch module computes; the opset upgrade rewrites the nodes whose form
changed and refuses an op it does not know; bench_ort.js writes result lines in the Go benchmark
format, backend ort, and a '# NS' line for a case without a model and for every case when
onnxruntime-node is absent."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import _paths  # noqa: F401
import numpy as np

from vitbench_ref import cases as C
from vitbench_ref import onnx_export as OX

SCRIPT = os.path.join(_paths.REFERENCE, "bench_ort.js")
# One case per exporter path: Col2Im, DeformConv with a mask and groups, GridSample, attention,
# LayerNorm + GELU + a whole ViT, and a whole VOLO (Col2Im with the sizes the tracer takes from shapes).
SMALL = "^(fold/odd_b2_dil|deform_conv2d/groups_b2|ms_deform_attn_core/borders|mhsa/odd_b2_hd20|vit_tiny_odd|volo_tiny_odd)$"
LINE = re.compile(r"^Benchmark(?P<case>\S+)/backend=ort/batch=(?P<batch>\d+)/threads=1/dtype=float32 \t(?P<runs>\d+)\t"
                  r"(?P<ns>\d+) ns/op\t.*\t(?P<macs>\d+) MACs/op\t(?P<moved>\d+) moved-B/op(\t\d+ B/rss)?$")


def read_lines(path):
    """The lines of a text file."""
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def node():
    """The node executable; the test fails (not skips) without it: CI installs it."""
    exe = shutil.which("node")
    if exe is None:
        raise AssertionError("node not found: ci/install-deps.sh installs Node.js and onnxruntime-node")
    return exe


class ExportedCases:
    """A test class mixin: the cases matching CASES exported once (with the PyTorch outputs) into
    cls.tmp, their manifest in cls.manifest; run_ort has bench_ort.js write ONNX Runtime's outputs
    beside them, and outputs reads both for one case."""

    CASES = None

    @classmethod
    def setUpClass(cls):
        if OX.onnx_module() is None:
            raise AssertionError("python3-onnx not installed (ci/install-deps.sh installs it)")
        cls.tmp = tempfile.mkdtemp()
        with open(os.devnull, "w") as log:
            cls.manifest = OX.export_all(C.select(cls.CASES), 1, cls.tmp, outputs=True, log=log)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ort(self, threads, timeout):
        """bench_ort.js --outputs over the manifest: ort_<name>.bin beside each model."""
        r = subprocess.run([node(), SCRIPT, "--manifest", os.path.join(self.tmp, "manifest.json"), "--outputs",
                            "--threads", str(threads)], capture_output=True, text=True, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stderr)

    def outputs(self, c):
        """ONNX Runtime's and PyTorch's outputs of manifest case c: two dicts name -> float32 array."""
        have = {out: np.fromfile(os.path.join(self.tmp, os.path.dirname(c["model"]), "ort_%s.bin" % out), dtype="<f4")
                for out in c["torch_outputs"]}
        want = {out: np.fromfile(os.path.join(self.tmp, ref["file"]), dtype="<f4")
                for out, ref in c["torch_outputs"].items()}
        return have, want


class TestOnnxExport(ExportedCases, unittest.TestCase):
    CASES = SMALL

    def test_ort_matches_torch(self):
        got = {c["case"]: c for c in self.manifest["cases"]}
        self.assertEqual(len(got), 6)
        for name, c in got.items():
            self.assertNotIn("ns", c, name)
        self.run_ort(1, 300)
        for name, c in got.items():
            haves, wants = self.outputs(c)
            for out in wants:
                have, want = haves[out], wants[out]
                self.assertEqual(have.shape, want.shape, "%s %s" % (name, out))
                nmse = float(np.sum((have.astype(np.float64) - want) ** 2) / max(np.sum(want.astype(np.float64) ** 2), 1e-30))
                self.assertLess(nmse, 1e-9, "%s %s: NMSE %.3g" % (name, out, nmse))
                np.testing.assert_allclose(have, want, rtol=1e-3, atol=1e-4, err_msg="%s %s" % (name, out))

    def test_timing_lines_and_ns(self):
        with open(os.path.join(self.tmp, "manifest.json"), encoding="utf-8") as f:
            m = json.load(f)
        m["cases"] = [c for c in m["cases"] if c["case"] == "fold/odd_b2_dil"]
        m["cases"].append({"case": "volo_d1", "batch": 1, "op": "volo", "ns": "ONNX export failed: test reason"})
        mpath = os.path.join(self.tmp, "m2.json")
        with open(mpath, "w", encoding="utf-8") as f:
            json.dump(m, f)
        out = os.path.join(self.tmp, "ort.txt")
        r = subprocess.run([node(), SCRIPT, "--manifest", mpath, "-o", out, "--threads", "1", "--count", "3",
                            "--warmup", "1"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = read_lines(out)
        results = [ln for ln in lines if ln.startswith("Benchmark")]
        self.assertEqual(len(results), 3, lines)
        for ln in results:
            g = LINE.match(ln)
            self.assertIsNotNone(g, ln)
            self.assertEqual(g["case"], "Fold/odd_b2_dil")
            self.assertEqual(g["batch"], "2")
        self.assertIn("# NS Benchmark_volo_d1/backend=ort/batch=1/threads=1/dtype=float32: ONNX export failed: test reason"
                      .replace("_volo_d1", "Volo_d1"), lines)
        self.assertTrue(any(ln.startswith("ort-version: ") and ln != "ort-version: not installed" for ln in lines))
        self.assertIn("ort-opset: 19", lines)
        labels = [ln for ln in lines if ln.startswith("# baseline BenchmarkFold/odd_b2_dil/backend=ort/")]
        self.assertEqual(len(labels), 1, lines)
        loads = [ln for ln in lines if ln.startswith("# load BenchmarkFold/odd_b2_dil/backend=ort/")]
        self.assertEqual(len(loads), 1, lines)
        self.assertRegex(loads[0], r": (null|[01]\.\d{3})( contended)?$")
        self.assertRegex(labels[0], r": vitbench_ref\.\w+\.Fold exported by torch \S+ at opset 19$")
        # Without onnxruntime-node (a module dir without it, and none on Node's path): every case NS.
        env = dict(os.environ, NODE_PATH="")
        r = subprocess.run([node(), SCRIPT, "--manifest", mpath, "-o", out, "--threads", "1", "--ort-modules",
                            os.path.join(self.tmp, "none")], capture_output=True, text=True, timeout=60,
                           env=env, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = read_lines(out)
        ns = [ln for ln in lines if ln.startswith("# NS ")]
        self.assertEqual(len(ns), 2, lines)
        self.assertTrue(all(": onnxruntime-node not installed" in ln or "test reason" in ln for ln in ns), ns)
        self.assertFalse([ln for ln in lines if ln.startswith("Benchmark")])


    def test_serve(self):
        """--serve: a greeting, then one answer line per request; a sample with rewarm_ms runs
        untimed for at least that long first; a case without a model is NS; bad requests are
        errors that leave the server running; it exits 0 at the end of its input."""
        m = os.path.join(self.tmp, "manifest.json")
        p = subprocess.Popen([node(), SCRIPT, "--manifest", m, "--serve", "--threads", "1", "--warmup", "1",
                              "--min-sample-ms", "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            def ask(req):
                p.stdin.write((req if isinstance(req, str) else json.dumps(req)) + "\n")
                p.stdin.flush()
                return json.loads(p.stdout.readline())

            hello = json.loads(p.stdout.readline())
            self.assertNotEqual(hello["version"], "not installed")
            self.assertEqual(hello["opset"], 19)
            self.assertIn("error", ask({"sample": True}))  # before open
            self.assertIn("error", ask("not json"))
            self.assertIn("error", ask({"what": 1}))
            self.assertEqual(ask({"open": "fold/odd_b2_dil", "batch": 1}),
                             {"ns": "no model for this case and batch in the manifest"})
            got = ask({"open": "fold/odd_b2_dil", "batch": 2})
            self.assertTrue(got["ok"], got)
            self.assertRegex(got["label"], r"Fold exported by torch \S+ at opset 19$")
            for rewarm in (0, 300):
                t0 = time.monotonic()
                s = ask({"sample": True, "rewarm_ms": rewarm})
                took = time.monotonic() - t0
                self.assertGreaterEqual(s["runs"], 1, s)
                self.assertGreater(s["ns_per_run"], 0, s)
                self.assertGreaterEqual(s["runs"] * s["ns_per_run"], 5e6, s)  # --min-sample-ms
                self.assertTrue(s["load"] is None or 0 <= s["load"] <= 1, s)
                if rewarm:
                    self.assertGreaterEqual(took, 0.3, "rewarm_ms 300 answered in %.3f s" % took)
            closed = ask({"close": True})
            self.assertTrue(closed["ok"] and closed["rss"] > 0, closed)
            self.assertIn("error", ask({"sample": True}))  # closed
            p.stdin.close()
            self.assertEqual(p.wait(timeout=30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


class TestUpgradeOpset(unittest.TestCase):
    def setUp(self):
        if OX.onnx_module() is None:
            raise AssertionError("python3-onnx not installed (ci/install-deps.sh installs it)")

    def model(self, *nodes):
        from onnx import TensorProto, helper
        g = helper.make_graph(list(nodes), "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(OX.TMP_DOMAIN, 1)])

    def test_reduce_axes_become_an_input(self):
        from onnx import helper, numpy_helper
        m = self.model(helper.make_node("ReduceMean", ["x"], ["y"], axes=[-1], keepdims=1))
        OX.upgrade_opset(m)
        n = m.graph.node[0]
        self.assertEqual([a.name for a in n.attribute], ["keepdims"])
        self.assertEqual(len(n.input), 2)
        init = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        self.assertEqual(init[n.input[1]].tolist(), [-1])
        self.assertEqual([(o.domain, o.version) for o in m.opset_import], [("", 19)])

    def test_split_gets_num_outputs_and_private_ops_move(self):
        from onnx import helper
        m = self.model(helper.make_node("Split", ["x"], ["a", "b"], axis=0),
                       helper.make_node("Col2Im", ["a", "s", "k"], ["y"], domain=OX.TMP_DOMAIN))
        OX.upgrade_opset(m)
        self.assertEqual({a.name: a.i for a in m.graph.node[0].attribute}["num_outputs"], 2)
        self.assertEqual(m.graph.node[1].domain, "")

    def test_unknown_op_is_an_error(self):
        from onnx import helper
        m = self.model(helper.make_node("LpNormalization", ["x"], ["y"]))
        with self.assertRaisesRegex(ValueError, "LpNormalization"):
            OX.upgrade_opset(m)


if __name__ == "__main__":
    unittest.main()
