"""bench_torch.py: result lines in the Go benchmark format with the case's process peak RSS, a
case that raises kept as a '# FAILED' line while the others are timed, and --dtype checked; the
GPU path without a GPU: the L2 flush size rule, the /sdpa row's name and when it is timed, the
scaled_dot_product_attention forward against the module's own, the clock config lines, the
sampling and e2e-ns/op of --device cuda through a stand-in timer, and the message when torch has
no CUDA."""

import contextlib
import io
import os
import re
import tempfile
import types
import unittest
from unittest import mock

import _paths  # noqa: F401
import torch

import bench_torch as BT

LINE = re.compile(r"^Benchmark(?P<case>[A-Z]\S+)/backend=torch/batch=(?P<batch>\d+)/threads=1/dtype=float32 \t(?P<runs>\d+)\t"
                  r"(?P<ns>\d+) ns/op\t.*\t(?P<macs>\d+) MACs/op\t(?P<moved>\d+) moved-B/op\t(?P<rss>\d+) B/rss$")


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
        rows = [LINE.match(l) for l in lines if l.startswith("Benchmark") and "backend=torch" in l]
        self.assertEqual(len(rows), 4, lines)
        for m in rows:
            self.assertIsNotNone(m, lines)
            # The process holds at least the interpreter and torch: tens of MiB.
            self.assertGreater(int(m.group("rss")), 20 << 20)
        self.assertIn("Unit B/rss better=lower", lines)
        self.assertTrue(any(l.startswith("# date: ") for l in lines), lines)
        self.assertFalse(any(l.startswith("date:") for l in lines), lines)
        self.assertIn("clock: wall", lines)
        self.assertFalse(any("e2e-ns/op" in l or "/sdpa/" in l for l in lines), lines)

    def test_every_row_names_its_code(self):
        rc, lines = self.run_main("--run", "^(gemm/odd_m13_n37_k29|layernorm/odd_b2_d147|ms_deform_attn_core/hd71)$")
        self.assertEqual(rc, 0)
        names = sorted({l.split(" \t")[0] for l in lines if l.startswith("Benchmark")})
        labels = dict(l[len("# baseline "):].split(": ", 1) for l in lines if l.startswith("# baseline "))
        self.assertEqual(sorted(labels), names)  # one label per row, the torch and the numpy rows alike
        gemm = "BenchmarkGemm/odd_m13_n37_k29/backend=%s/batch=1/threads=1/dtype=float32"
        self.assertEqual(labels[gemm % "numpy"], BT.NUMPY_CODE)
        self.assertIn("F.linear", labels[gemm % "torch"])
        self.assertIn("torch.nn.LayerNorm", labels["BenchmarkLayernorm/odd_b2_d147/backend=torch/batch=2/threads=1/dtype=float32"])
        core = labels["BenchmarkMs_deform_attn_core/hd71/backend=torch/batch=1/threads=1/dtype=float32"]
        self.assertIn("ms_deform_attn_core_pytorch", core)
        self.assertIn("grid_sample", core)

    def test_labels_only_times_nothing_and_matches_a_timed_run(self):
        def no_timing(*a, **kw):
            raise AssertionError("--labels-only must not time")

        sel = "^(gemm/odd_m13_n37_k29|layernorm/odd_b2_d147)$"
        with mock.patch.object(BT, "bench_case", no_timing), mock.patch.object(BT, "bench_numpy", no_timing):
            rc, only = self.run_main("--run", sel, "--labels-only")
        self.assertEqual(rc, 0)
        _, timed = self.run_main("--run", sel)
        self.assertEqual(only, [l for l in timed if l.startswith("# baseline ")])

    def test_every_op_kind_has_a_label(self):
        from vitbench_ref import cases as C
        for op in C.PARAMS:
            self.assertIn(op, BT.BASELINE_CODE, "op kind %s: no description of what its PyTorch row runs" % op)
            label = BT.baseline_label({"op": op})
            self.assertRegex(label, r"^(vitbench_ref|torch\.nn)\.\w+\.?\w*: \S", label)
        self.assertIn("unfold", BT.baseline_label({"op": "outlook_attention"}).lower())
        self.assertIn("torchvision.ops.deform_conv2d", BT.baseline_label({"op": "deform_conv2d"}))
        self.assertIn("scaled_dot_product_attention", BT.baseline_label({"op": "mhsa"}, variant="sdpa"))

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
        self.assertEqual(failed, ["# FAILED BenchmarkGemm/odd_m13_n37_k29/backend=torch/batch=1/threads=1/dtype=float32: "
                                  "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"])
        self.assertTrue(any(l.startswith("BenchmarkLayernorm/odd_b2_d147/backend=torch/") for l in lines), lines)

    def test_reduced_precision_needs_the_gpu(self):
        # bf16 runs on the CPU too (test_bench_torch_bf16); tf32 and fp16 are GPU precisions.
        for dtype in ("tf32", "fp16"):
            with self.assertRaises(SystemExit):
                BT.main(["-o", os.devnull, "--run", "^gemm/512$", "--dtype", dtype])


def math_sdpa(q, k, v):
    """scaled_dot_product_attention as its definition (no mask, no dropout, scale D ** -0.5)."""
    return ((q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5).softmax(dim=-1) @ v


class FakeTimer:
    """Stands in for CudaTimer: runs the call and reports fixed event and end-to-end times."""

    def __init__(self, event_ns=1000.0, e2e_ns=3000):
        self.flush_bytes = BT.l2_flush_bytes(BT.DEFAULT_L2_BYTES)
        self.event_ns, self.e2e_ns, self.calls = event_ns, e2e_ns, 0

    def time(self, fn):
        fn()
        self.calls += 1
        return self.event_ns, self.e2e_ns


def case(name, op="mhsa", batch=1):
    return {"name": name, "op": op, "batch": batch, "params": {}}


class TestGPUPieces(unittest.TestCase):
    def test_flush_size_rule(self):
        # max(2 x L2, 64 MiB), as impl/cuda/backend.go allocFlush.
        self.assertEqual(BT.l2_flush_bytes(50 << 20), 100 << 20)
        self.assertEqual(BT.l2_flush_bytes(60 << 20), 120 << 20)
        self.assertEqual(BT.l2_flush_bytes(16 << 20), 64 << 20)
        self.assertEqual(BT.l2_flush_bytes(32 << 20), 64 << 20)
        self.assertEqual(BT.l2_flush_bytes(0), 64 << 20)
        self.assertEqual(BT.device_l2_bytes(types.SimpleNamespace(L2_cache_size=60 << 20)), 60 << 20)
        for props in (types.SimpleNamespace(), types.SimpleNamespace(L2_cache_size=0),
                      types.SimpleNamespace(L2_cache_size=None)):
            self.assertEqual(BT.device_l2_bytes(props), 50 << 20)

    def test_sdpa_row_name(self):
        c = case("mhsa/vit_b16")
        self.assertEqual(BT.result_name(c, 1, variant="sdpa"),
                         "BenchmarkMhsa/vit_b16/sdpa/backend=torch/batch=1/threads=1/dtype=float32")
        self.assertEqual(BT.result_name(c, 1, dtype="bf16"),
                         "BenchmarkMhsa/vit_b16/backend=torch/batch=1/threads=1/dtype=bfloat16")
        line = BT.result_line(c, 1, 1, 1234.6, 10, 400, variant="sdpa", e2e=2345.2)
        self.assertEqual(line, "BenchmarkMhsa/vit_b16/sdpa/backend=torch/batch=1/threads=1/dtype=float32 \t1\t"
                               "1234 ns/op\t2345 e2e-ns/op\t0.01621 GFLOP/s\t0.3241 GB/s\t10 MACs/op\t400 moved-B/op")
        self.assertEqual(BT.bench_case_token("Upper/x"), "_Upper/x")
        self.assertEqual(BT.bench_case_token("vit_s16"), "Vit_s16")
        for bad in ("a=b", "with space", "a/b", ""):
            with self.assertRaises(ValueError, msg=bad):
                BT.result_name(c, 1, variant=bad)

    def test_sdpa_variant_only_for_attention_on_the_gpu(self):
        with mock.patch.object(BT, "sdpa_available", lambda: True):
            self.assertEqual(BT.variants_for(case("mhsa/vit_b16"), "cuda"), [None, "sdpa"])
            self.assertEqual(BT.variants_for(case("block/vit_b16", "block"), "cuda"), [None, "sdpa"])
            self.assertEqual(BT.variants_for(case("gemm/512", "gemm"), "cuda"), [None])
            self.assertEqual(BT.variants_for(case("mhsa/vit_b16"), "cpu"), [None])
        with mock.patch.object(BT, "sdpa_available", lambda: False):  # torch < 2.0 (Debian's 1.13)
            self.assertEqual(BT.variants_for(case("mhsa/vit_b16"), "cuda"), [None])
        self.assertEqual(BT.sdpa_available(), hasattr(torch.nn.functional, "scaled_dot_product_attention"))

    def test_sdpa_forward_matches_the_module(self):
        torch.manual_seed(0)
        x = torch.randn(2, 7, 24)
        with mock.patch.object(torch.nn.functional, "scaled_dot_product_attention", math_sdpa, create=True):
            for scale in (None, 0.3):
                ref = BT.M.Attention(24, 3, True, scale).eval()
                alt = BT.M.Attention(24, 3, True, scale).eval()
                alt.load_state_dict(ref.state_dict())
                with torch.no_grad():
                    want = ref(x)
                    got = BT.use_sdpa(alt)(x)
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
            blk = BT.M.Block(24, 3)
            BT.use_sdpa(blk)
            self.assertIn("forward", vars(blk.attn))  # the block's attention is switched
        with self.assertRaises(ValueError):
            BT.use_sdpa(torch.nn.LayerNorm(4))

    def test_cuda_without_cuda_fails_clearly(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(torch.cuda, "is_available", lambda: False):
            out = os.path.join(d, "t.txt")
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = BT.main(["-o", out, "--device", "cuda", "--run", "^gemm/512$"])
            self.assertEqual(rc, 1)
            self.assertFalse(os.path.exists(out))
        self.assertIn("--device cuda", err.getvalue())
        self.assertIn("torch.cuda.is_available() is false", err.getvalue())
        self.assertIn("CUDA build of torch", err.getvalue())

    def test_cuda_path_with_a_stand_in_timer(self):
        """main --device cuda on the CPU: module/tensor moves are identities and the timer a stand-in,
        so the header, the /sdpa row, e2e-ns/op and the min-sample loop are checked without a GPU."""
        threads = torch.get_num_threads()
        self.addCleanup(torch.set_num_threads, threads)
        flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)

        def restore():
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
        self.addCleanup(restore)
        timer = FakeTimer(event_ns=1000.0, e2e_ns=3000)
        with contextlib.ExitStack() as st:
            st.enter_context(mock.patch.object(torch.cuda, "is_available", lambda: True))
            st.enter_context(mock.patch.object(torch.cuda, "get_device_name", lambda i=0: "Fake GPU"))
            st.enter_context(mock.patch.object(torch.version, "cuda", "12.4"))
            st.enter_context(mock.patch.object(torch.nn.Module, "to", lambda self, *a, **kw: self))
            st.enter_context(mock.patch.object(BT, "to_device", lambda x, device: x))
            st.enter_context(mock.patch.object(BT, "cuda_timer", lambda: timer))
            st.enter_context(mock.patch.object(torch.nn.functional, "scaled_dot_product_attention", math_sdpa,
                                               create=True))
            st.enter_context(contextlib.redirect_stderr(io.StringIO()))
            d = st.enter_context(tempfile.TemporaryDirectory())
            out = os.path.join(d, "t.txt")
            # 10 us per sample at 3 us end to end per call: 4 calls per sample.
            rc = BT.main(["-o", out, "--device", "cuda", "--threads", "1", "--count", "2", "--warmup", "1",
                          "--min-sample-ms", "0.01", "--run", "^(gemm/odd_m13_n37_k29|mhsa/odd_b2_hd20)$"])
            with open(out) as f:
                lines = f.read().splitlines()
        self.assertEqual(rc, 0, lines)
        self.assertIn("cuda: 12.4 on Fake GPU", lines)
        self.assertIn("clock: cuda-events", lines)
        self.assertIn("l2-flush-mib: 100", lines)
        self.assertNotIn("clock: wall", lines)
        rows = [l for l in lines if l.startswith("Benchmark")]
        names = sorted({l.split(" ")[0] for l in rows})
        self.assertEqual(names, ["BenchmarkGemm/odd_m13_n37_k29/backend=torch/batch=1/threads=1/dtype=float32",
                                 "BenchmarkMhsa/odd_b2_hd20/backend=torch/batch=2/threads=1/dtype=float32",
                                 "BenchmarkMhsa/odd_b2_hd20/sdpa/backend=torch/batch=2/threads=1/dtype=float32"])
        self.assertEqual(len(rows), 6)  # 2 samples each, no numpy rows on the GPU
        for l in rows:
            self.assertRegex(l, r" \t4\t1000 ns/op\t3000 e2e-ns/op\t")
        # 3 rows x (1 warm-up call + 2 samples x 4 calls).
        self.assertEqual(timer.calls, 3 * (1 + 2 * 4))


if __name__ == "__main__":
    unittest.main()
