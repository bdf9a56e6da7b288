#!/usr/bin/python3
"""Time the built-in vitbench cases in PyTorch and write Go benchmark format (bench/results/FORMAT.md).

    /usr/bin/python3 reference/bench_torch.py -o FILE [--run REGEX] [--batch N] [--threads 2]
                                              [--count 10] [--warmup 3] [--min-sample-ms 0] [--seed 1]
                                              [--device cpu|cuda] [--dtype fp32|tf32|bf16|fp16]

Each case is built exactly as the fixture exporter builds it (same modules, same synthesized
inputs and weights), then run under ``torch.inference_mode()`` with ``torch.set_num_threads(T)``:
``--warmup`` untimed runs, then ``--count`` timed samples, one result line per sample (a sample
repeats the call until ``--min-sample-ms`` has passed and records the mean; the iteration count says how many),
so the file keeps the whole distribution for benchstat / ``vitbench report``.

``--device cuda`` moves the module and its inputs to the GPU and brackets every timed call (and
every sample) with ``torch.cuda.synchronize()``, so a sample is the GPU's whole work; the header
then names the GPU and CUDA version (``cuda:`` line) and rows stay ``backend=torch``, paired with
the vitbench rows of the same case, batch and thread count.  On the GPU ``--dtype`` picks the
precision: ``fp32`` (the default) turns TF32 off for matmuls and cuDNN convolutions alike (cuDNN's
default would use it), ``tf32`` turns it on for both, ``bf16`` and ``fp16`` convert the module and
its floating-point inputs to that type (PyTorch eager in bf16/fp16).  The rows' dtype field says
which (``float32``, ``tf32``, ``bfloat16``, ``float16``); ``vitbench report`` pairs them with the
``cuda``, ``cuda-tf32``, ``cuda-bf16`` and ``cuda-fp16`` rows.

A case that raises is reported on stderr and kept as a ``# FAILED Benchmark_...: error`` line (as
``vitbench bench`` writes them); the file is rewritten (atomically) after every case, so a run
stopped by a timeout keeps the cases it finished.

Per line: ns/op (``time.perf_counter_ns`` around one forward call with all the case's inputs),
GFLOP/s = 2*MACs/ns (omitted when MACs = 0), GB/s = bytes/ns with bytes = 4*(input + weight +
output elements), and MACs/op (``cases.macs``: patch_embed B*N*E*C*ph*pw; soft_split 0;
ms_deform_attn_core N*Lq*M*L*P*D*5; ddetr_transformer: its encoder and decoder layers and the
reference-point Linear, formula in ``cases.macs``; deformable_detr: every conv of the ResNet-50 body
and input_proj, its transformer and the last layer's heads; ...).  Network cases that return a dict
of outputs (vit, t2t_vit, ddetr_transformer, deformable_detr: backbone to post-processing) are timed
the same way: one ``module(*inputs)`` call.  B/rss is the process's peak resident set (VmHWM)
from just before the case's module and data are built to its last sample, restarted per case
through /proc/self/clear_refs exactly as ``vitbench bench`` does, so the two processes' peak
memory for one network compare directly (each includes its runtime: the interpreter and torch's
libraries here, the Go runtime there).
"""

import argparse
import ctypes
import datetime
import gc
import math
import os
import platform
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vitbench_ref import cases as C  # noqa: E402
from vitbench_ref.export import materialize, module_args  # noqa: E402

GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386",
          "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
UNITS = [
    "Unit GFLOP/s better=higher",
    "Unit GB/s better=higher",
    "Unit MACs/op assume=exact better=lower",
    "Unit B/peak assume=exact better=lower",
    "Unit B/rss better=lower",
]


def cpu_model():
    """The first ``model name`` of /proc/cpuinfo, else platform.processor(), else 'unknown'."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def blas_library():
    """The libblas.so.3 alternative in use (``update-alternatives --query`` "Value:"), else 'unknown'."""
    try:
        r = subprocess.run(["update-alternatives", "--query", "libblas.so.3-x86_64-linux-gnu"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    for line in r.stdout.splitlines():
        if line.startswith("Value:"):
            return line.split(":", 1)[1].strip() or "unknown"
    return "unknown"


def openblas():
    """The OpenBLAS loaded as the system BLAS, through ctypes: (core name, handle) or ("", None).

    The core name says which kernels OpenBLAS dispatched to (SkylakeX = AVX-512, Haswell = AVX2):
    an environment that forces OPENBLAS_CORETYPE changes it, and with it the baseline."""
    path = blas_library()
    if path == "unknown":
        path = "libblas.so.3"
    try:
        lib = ctypes.CDLL(path)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode(), lib
    except (OSError, AttributeError):
        return "", None


def fmt(x):
    """A positive metric with 4 significant digits, never in exponent notation (benchfmt-friendly)."""
    if x <= 0 or not math.isfinite(x):
        return "0"
    decimals = max(0, 3 - int(math.floor(math.log10(x))))
    return "%.*f" % (decimals, x)


def numel(shapes):
    """Total element count of a name -> shape dict."""
    return sum(int(np.prod(s, dtype=np.int64)) for s in shapes.values())


# A warm-up call longer than this ends the warm-up (see bench_case).
WARMUP_LONG_NS = 1_000_000_000


def to_device(x, device):
    """x moved to device when it is a tensor (or a list/tuple of them), else unchanged."""
    if torch.is_tensor(x):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


def release_freed_memory():
    """Return the heap memory earlier cases freed to the system (glibc's malloc_trim), so that
    the next case's peak RSS starts from the process's live memory, not from what the largest
    earlier case left resident."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_peak_rss():
    """Restart the kernel's peak-RSS (VmHWM) count at the current RSS, as vitbench does before
    each case; False where Linux does not allow it."""
    release_freed_memory()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss():
    """The process's peak resident set size in bytes since the last reset (VmHWM), 0 if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


# --dtype: the dtype field of the result lines, and the torch dtype modules and inputs take.
DTYPES = {"fp32": ("float32", None), "tf32": ("tf32", None),
          "bf16": ("bfloat16", "bfloat16"), "fp16": ("float16", "float16")}


def set_precision(dtype):
    """Allow or forbid TF32 in CUDA matmuls and cuDNN convolutions as dtype asks."""
    tf32 = dtype == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def cast_floating(x, dtype):
    """x with its floating-point tensors converted to dtype (a torch dtype); others unchanged."""
    if torch.is_tensor(x):
        return x.to(dtype) if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(cast_floating(v, dtype) for v in x)
    return x


def sync(device):
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device == "cuda":
        torch.cuda.synchronize()


def bench_case(case, seed, count, warmup, min_sample_ns=0, device="cpu", dtype="fp32"):
    """Time one normalised case; return (samples as (runs, mean ns per run), MACs, bytes).

    A sample repeats the forward call until it has lasted min_sample_ns (at least once) and
    records the mean, exactly as ``vitbench bench -min-sample`` does, so short cases are not
    dominated by timer and scheduler noise.  Warm-up stops after the first call that takes longer
    than WARMUP_LONG_NS: one such call has already touched every buffer and code path, and more
    would only add minutes (the grid_sample path of the Deformable DETR transformer takes ~30 s)."""
    reset_peak_rss()
    module, inputs, weights, (ins, ws, outs), _ = materialize(case, seed)
    args = module_args(inputs)  # every input, in the op's order (padding_mask as bool)
    if device != "cpu":
        module = module.to(device)
        args = [to_device(a, device) for a in args]
    cast = DTYPES[dtype][1]
    if cast is not None:
        module = module.to(getattr(torch, cast))
        args = [cast_floating(a, getattr(torch, cast)) for a in args]
    samples = []
    with torch.inference_mode():
        for _ in range(warmup):
            sync(device)
            t0 = time.perf_counter_ns()
            module(*args)
            sync(device)
            if time.perf_counter_ns() - t0 > WARMUP_LONG_NS:
                break
        for _ in range(count):
            sync(device)
            runs, t0 = 0, time.perf_counter_ns()
            while True:
                module(*args)
                sync(device)
                runs += 1
                elapsed = time.perf_counter_ns() - t0
                if elapsed >= min_sample_ns:
                    break
            samples.append((runs, elapsed / runs))
    rss = peak_rss()
    macs = C.macs(case["op"], case["params"], case["batch"])
    nbytes = 4 * (numel(ins) + numel(ws) + numel(outs))
    return samples, macs, nbytes, rss


def bench_numpy(case, seed, count, warmup, min_sample_ns=0):
    """Time a gemm case as NumPy computes it (x @ W.T + b on the system BLAS): the BLAS column.
    Same sampling as bench_case."""
    _, inputs, weights, _, _ = materialize(case, seed)
    x, w, b = inputs["x"], weights["weight"], weights.get("bias")
    wt = w.T if case["params"]["trans_b"] else w

    def call():
        out = x @ wt
        if b is not None:
            out += b
        return out

    for _ in range(warmup):
        call()
    samples = []
    for _ in range(count):
        runs, t0 = 0, time.perf_counter_ns()
        while True:
            call()
            runs += 1
            elapsed = time.perf_counter_ns() - t0
            if elapsed >= min_sample_ns:
                break
        samples.append((runs, elapsed / runs))
    return samples


def result_name(case, threads, backend="torch", dtype="fp32"):
    """The Go benchmark name of a case's result lines."""
    return "Benchmark_%s/backend=%s/batch=%d/threads=%d/dtype=%s" % (
        case["name"], backend, case["batch"], threads, DTYPES[dtype][0])


def result_line(case, threads, runs, ns, macs, nbytes, backend="torch", dtype="fp32", rss=0):
    """One Go benchmark result line for one sample: runs calls averaging ns each; rss, when
    known, is the process's peak resident bytes over the case (B/rss, as vitbench writes it)."""
    name = result_name(case, threads, backend, dtype)
    ns = max(int(ns), 1)
    fields = ["%d ns/op" % ns]
    if macs:
        fields.append("%s GFLOP/s" % fmt(2.0 * macs / ns))
    fields.append("%s GB/s" % fmt(nbytes / ns))
    fields.append("%d MACs/op" % macs)
    if rss:
        fields.append("%d B/rss" % rss)
    return name + " \t%d\t" % runs + "\t".join(fields)


def main(argv=None):
    """Command-line entry point; returns the process exit status."""
    ap = argparse.ArgumentParser(prog="bench_torch.py", description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, help="output file (Go benchmark format)")
    ap.add_argument("--run", default=None, help="regex (re.search) on case names")
    ap.add_argument("--batch", type=int, default=None,
                    help="run every case at this batch (default: each case's own batch, 1 for most)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--count", type=int, default=10, help="timed runs per case, one line each (default 10)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs per case first (default 3)")
    ap.add_argument("--min-sample-ms", type=float, default=0.0,
                    help="repeat calls within a sample until it lasts this long, record the mean (default 0: one call)")
    ap.add_argument("--seed", type=int, default=1, help="generator seed for inputs and weights (default 1)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where PyTorch runs (cuda: synchronized timing; default cpu)")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp32",
                    help="precision on the GPU: fp32 (TF32 off), tf32, bf16, fp16 (default fp32)")
    args = ap.parse_args(argv)
    if args.dtype != "fp32" and args.device != "cuda":
        ap.error("--dtype %s needs --device cuda" % args.dtype)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_torch: --device cuda but torch.cuda.is_available() is false", file=sys.stderr)
        return 1
    if args.threads < 1 or args.count < 1 or args.warmup < 0 or (args.batch is not None and args.batch < 1):
        ap.error("--threads, --count and --batch must be >= 1, --warmup >= 0")
    try:
        todo = C.select(args.run)
    except re.error as e:
        ap.error("bad --run regex: %s" % e)
    if not todo:
        print("bench_torch: no case matches %r" % args.run, file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    core, _ = openblas()

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [
        "goos: %s" % (sys.platform if sys.platform != "win32" else "windows"),
        "goarch: %s" % GOARCH.get(platform.machine().lower(), platform.machine().lower() or "unknown"),
        "cpu: %s" % cpu_model(),
        "torch-version: %s" % torch.__version__,
        "numpy-version: %s" % np.__version__,
        "blas: %s" % blas_library(),
        "openblas-core: %s" % (core or "unknown"),
        "openblas-coretype-env: %s" % (os.environ.get("OPENBLAS_CORETYPE") or "unset"),
        "date: %s" % now,
    ]
    if args.device == "cuda":
        lines.append("cuda: %s on %s" % (torch.version.cuda, torch.cuda.get_device_name(0)))
    if args.device == "cuda":
        set_precision(args.dtype)
    lines += UNITS
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    failed = 0
    for case in todo:
        if args.batch is not None:
            case = dict(case, batch=args.batch)
        try:
            samples, macs, nbytes, rss = bench_case(case, args.seed, args.count, args.warmup,
                                                    int(args.min_sample_ms * 1e6), args.device, args.dtype)
        except Exception as e:  # one case's failure must not lose the others
            failed += 1
            msg = " ".join(("%s: %s" % (type(e).__name__, e)).split())
            lines.append("# FAILED %s: %s" % (result_name(case, args.threads, dtype=args.dtype), msg))
            print("%-32s batch=%d FAILED: %s" % (case["name"], case["batch"], msg), file=sys.stderr)
            if args.device == "cuda":
                torch.cuda.empty_cache()
            write_atomic(out, lines)
            continue
        lines.extend(result_line(case, args.threads, runs, ns, macs, nbytes, dtype=args.dtype, rss=rss)
                     for runs, ns in samples)
        med = sorted(ns for _, ns in samples)[len(samples) // 2]
        print("%-32s batch=%d threads=%d  median %.3f ms  (%d runs)" % (
            case["name"], case["batch"], args.threads, med / 1e6, len(samples)), file=sys.stderr)
        if case["op"] == "gemm" and args.device == "cpu":
            np_samples = bench_numpy(case, args.seed, args.count, args.warmup, int(args.min_sample_ms * 1e6))
            lines.extend(result_line(case, args.threads, runs, ns, macs, nbytes, backend="numpy")
                         for runs, ns in np_samples)
        write_atomic(out, lines)

    write_atomic(out, lines)
    print("wrote %s" % args.out, file=sys.stderr)
    return 1 if failed else 0


def write_atomic(path, lines):
    """Write lines to path through a temporary file in the same folder and a rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
