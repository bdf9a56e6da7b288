#!/usr/bin/python3
"""Time the built-in vitbench cases in PyTorch and write Go benchmark format (bench/results/FORMAT.md).

    /usr/bin/python3 reference/bench_torch.py -o FILE [--run REGEX] [--batch N] [--threads 2]
                                              [--count 10] [--warmup 3] [--min-sample-ms 0] [--seed 1]
                                              [--device cpu|cuda] [--dtype fp32|tf32|bf16|fp16] [--labels-only]

Each case is built exactly as the fixture exporter builds it (same modules, same synthesized
inputs and weights), then run under ``torch.inference_mode()`` with ``torch.set_num_threads(T)``:
``--warmup`` untimed runs, then ``--count`` timed samples, one result line per sample (a sample
repeats the call until ``--min-sample-ms`` has passed and records the mean; the iteration count says how many),
so the file keeps the whole distribution for benchstat / ``vitbench report``.

``--device cuda`` moves the module and its inputs to the GPU and times every call the way vitbench's
CUDA backend does (``impl/cuda/timing.go``): zero-fill a flush buffer of max(2 x L2, 64 MiB)
(``torch.cuda.get_device_properties(0).L2_cache_size``, 50 MiB when torch does not say) and
synchronize, so each call starts with a cold L2; record a CUDA event, call, record a second event
and wait for it.  ns/op is the time between the events (the GPU's clock, as vitbench's ns/op), and
``e2e-ns/op`` beside it the host wall time from just before the call to the end of the wait (the
flush excluded).  A warm-up call is one such timed call, its figures dropped.  The header then
names the GPU and CUDA version (``cuda:`` line), says ``clock: cuda-events`` and the flush size
(``l2-flush-mib:``); rows stay ``backend=torch``, paired with the vitbench rows of the same case,
batch and thread count.  For the attention cases (op ``mhsa`` and ``block``, whose modules hold an
``Attention``) a second row is timed with the attention computed by
``torch.nn.functional.scaled_dot_product_attention`` (PyTorch's fused kernels; torch >= 2.0, else
the row is left out): its case name ends in ``/sdpa`` (``BenchmarkMhsa/vit_b16/sdpa/backend=torch/...``),
so it is read as a case of its own and never stands in for the plain PyTorch row.  On the GPU ``--dtype`` picks the
precision: ``fp32`` (the default) turns TF32 off for matmuls and cuDNN convolutions alike (cuDNN's
default would use it), ``tf32`` turns it on for both, ``bf16`` and ``fp16`` convert the module and
its floating-point inputs to that type (PyTorch eager in bf16/fp16).  The rows' dtype field says
which (``float32``, ``tf32``, ``bfloat16``, ``float16``); ``vitbench report`` pairs them with the
``cuda``, ``cuda-tf32``, ``cuda-bf16`` and ``cuda-fp16`` rows.  On the CPU ``--dtype bf16`` times each
case twice, under ``torch.autocast("cpu", dtype=torch.bfloat16)`` (fp32 weights) and with the module and
inputs converted to bf16 (``vitbench_ref.bf16``), and keeps the faster as the ``bfloat16`` row; its
``# baseline`` label says which mode won and what the other measured (no NumPy rows: NumPy has no bf16).
``vitbench report`` pairs those rows with the ``cpu-bf16`` backend's by that dtype (docs/baselines.md).

Each row is followed by ``# baseline <result name>: <label>``, saying what code it ran (``baseline_label``:
the reference module's path and what it computes with, e.g. Deformable DETR's grid_sample sampling or
VOLO's unfold/fold), which ``vitbench report`` shows beside the PyTorch figures; ``--labels-only`` writes
just those lines for the selected cases, timing nothing.

A case that raises is reported on stderr and kept as a ``# FAILED Benchmark...: error`` line (as
``vitbench bench`` writes them); the file is rewritten (atomically) after every case, so a run
stopped by a timeout keeps the cases it finished.

Per line: ns/op (on the CPU ``time.perf_counter_ns`` around one forward call with all the case's
inputs, header ``clock: wall``; on the GPU CUDA events, above),
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
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vitbench_ref import bf16 as BF16  # noqa: E402
from vitbench_ref import cases as C  # noqa: E402
from vitbench_ref import contention  # noqa: E402
from vitbench_ref import modules as M  # noqa: E402
from vitbench_ref.export import materialize, module_args  # noqa: E402

GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386",
          "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
UNITS = [  # as vitbench writes them (bench/results/FORMAT.md)
    "Unit GFLOP/s better=higher",
    "Unit GB/s better=higher",
    "Unit MACs/op assume=exact",
    "Unit MACs/op better=lower",
    "Unit B/op assume=exact",
    "Unit B/op better=lower",
    "Unit moved-B/op assume=exact",
    "Unit moved-B/op better=lower",
    "Unit B/rss better=lower",
]

# What each op kind's PyTorch row runs (the module built by cases.build_module, by op kind), written
# per case into the results as "# baseline <result name>: <label>" so that a report says which code
# a speed-up is measured against (bench/results/FORMAT.md).  The modules are this repository's
# reference rewrites, in eager PyTorch, of the original models' code (reference/vitbench_ref).
_VIT_ATTN = "attention as softmax(q k^T scale) v in eager ops, not scaled_dot_product_attention"
_DDETR = ("pure-PyTorch sampling (ms_deform_attn_core_pytorch: F.grid_sample per level, "
          "which the original repository runs only without its CUDA extension)")
BASELINE_CODE = {
    "patch_embed": "timm-style PatchEmbed: nn.Conv2d (kernel = stride = patch), flatten, transpose",
    "soft_split": "T2T-ViT soft split: nn.Unfold, transpose",
    "fold": "nn.Fold (the adjoint of the soft split)",
    "gemm": "F.linear (torch.matmul without trans_b) on the system BLAS",
    "conv2d": "nn.Conv2d, BatchNorm2d (eval, not folded), ReLU",
    "layernorm": "PyTorch's own kernel",
    "avg_pool2d": "PyTorch's own kernel",
    "mhsa": "timm-style Attention; " + _VIT_ATTN,
    "block": "timm-style Block (pre-norm, erf GELU); " + _VIT_ATTN,
    "token_transformer": "T2T-ViT Token_transformer (eager attention)",
    "token_performer": "T2T-ViT Token_performer (random-feature attention)",
    "t2t_module": "T2T-ViT tokens-to-token stage: nn.Unfold soft splits, Token_transformer/_performer",
    "t2t_vit": "T2T-ViT: nn.Unfold soft splits, Token_transformer/_performer, timm-style Blocks; " + _VIT_ATTN,
    "vit": "timm-style VisionTransformer / DeiT; " + _VIT_ATTN,
    "ms_deform_attn_core": "Deformable DETR's " + _DDETR,
    "ms_deform_attn": "Deformable DETR's MSDeformAttn with the " + _DDETR,
    "ddetr_transformer": "Deformable DETR's transformer (MSDeformAttn layers) with the " + _DDETR,
    "deformable_detr": "Deformable DETR (ResNet-50 with FrozenBatchNorm2d, its transformer) with the " + _DDETR,
    "deform_conv2d": "torchvision.ops.deform_conv2d",
    "outlook_attention": "the original VOLO's nn.Unfold, matmul, F.fold path",
    "outlooker": "outlook attention by the original VOLO's nn.Unfold, matmul, F.fold",
    "class_attention": "VOLO's class attention, eager",
    "class_block": "VOLO's class block, eager attention",
    "volo_stem": "nn.Conv2d, BatchNorm2d (eval, not folded), ReLU, projection conv",
    "volo": "outlook attention by the original VOLO's nn.Unfold, matmul, F.fold; eager attention",
    "detr_transformer": "DETR transformer: nn.MultiheadAttention encoder and decoder (post-norm)",
    "detr": "DETR (ResNet with FrozenBatchNorm2d, nn.MultiheadAttention transformer, heads)",
    "clip_visual": "OpenAI CLIP image tower: nn.MultiheadAttention blocks, QuickGELU",
    "clip_text": "OpenAI CLIP text tower: nn.MultiheadAttention blocks (causal mask), QuickGELU",
    "clip": "OpenAI CLIP: both towers, nn.MultiheadAttention blocks, QuickGELU",
    "clip_resnet": "OpenAI CLIP ResNet image tower: conv/BatchNorm2d bottlenecks with average-pool "
                   "downsampling, attention pooling by F.multi_head_attention_forward",
    "mean_shift": "IPT's MeanShift: a frozen 1x1 nn.Conv2d",
    "ipt_head": "IPT's head: nn.Conv2d 3x3, two ResBlocks of 5x5 nn.Conv2d",
    "ipt_tail": "IPT's tail: nn.Conv2d + nn.PixelShuffle (EDSR Upsampler), nn.Conv2d",
    "ipt_encoder_layer": "IPT's pre-norm encoder layer: nn.MultiheadAttention(bias=False), ReLU MLP",
    "ipt_decoder_layer": "IPT's pre-norm decoder layer: two nn.MultiheadAttention(bias=False), ReLU MLP",
    "ipt": "IPT (Pretrained-IPT): nn.Conv2d head and tail, F.unfold/F.fold around nn.MultiheadAttention(bias=False) "
           "pre-norm encoder and decoder",
    "ipt_chop": "IPT's forward_chop as the original: the model on every tile (top and left strips run again), "
                "F.fold stitching with averaged central crops",
    "group_norm": "nn.GroupNorm (PyTorch's own kernel), then x * torch.sigmoid(x) when swish",
    "vq_resnet_block": "taming's ResnetBlock: nn.GroupNorm, x * sigmoid(x), nn.Conv2d",
    "vq_attn_block": "taming's AttnBlock: nn.GroupNorm, 1x1 nn.Conv2d, torch.bmm, softmax",
    "vq_downsample": "F.pad (right and bottom), nn.Conv2d stride 2",
    "vq_upsample": "F.interpolate (nearest), nn.Conv2d",
    "vector_quantize": "VectorQuantizer2's forward: torch.sum of squares, z @ e^T, torch.argmin, F.embedding",
    "vq_encoder": "taming's Encoder: nn.Conv2d, nn.GroupNorm, x * sigmoid(x), torch.bmm attention",
    "vq_decoder": "taming's Decoder: nn.Conv2d, nn.GroupNorm, x * sigmoid(x), torch.bmm attention, F.interpolate",
    "vqgan": "taming's VQModel: Encoder, quant_conv, VectorQuantizer2 (argmin over the codebook), post_quant_conv, "
             "Decoder",
    "mingpt": "taming's minGPT: nn.Embedding, separate key/query/value nn.Linear, masked_fill(-inf) causal softmax "
              "in eager ops, exact GELU, ln_f, head",
}
NUMPY_CODE = "NumPy x @ W.T (+ b) on the system BLAS"
SDPA_CODE = " (variant: attention by torch.nn.functional.scaled_dot_product_attention)"


def baseline_label(case, backend="torch", variant=None):
    """What code a result row of case ran: "<module path>: <description>" (vitbench_ref.modules.Block, ...)
    for PyTorch (BASELINE_CODE by op kind, the sdpa variant said), NUMPY_CODE for NumPy's rows.
    An op kind without a description (test_every_op_kind_has_a_label fails for it) is labelled
    by its module alone."""
    if backend == "numpy":
        return NUMPY_CODE
    module = C.MODULE_PATH[case["op"]].replace("reference.vitbench_ref.", "vitbench_ref.")
    label = "%s: %s" % (module, BASELINE_CODE[case["op"]]) if case["op"] in BASELINE_CODE else module
    return label + SDPA_CODE if variant == "sdpa" else label


def baseline_line(case, threads, backend="torch", dtype="fp32", variant=None):
    """The comment line naming the code a result row ran: "# baseline <result name>: <label>"
    (read by vitbench into the row's baseline field; benchstat ignores it)."""
    return "# baseline %s: %s" % (result_name(case, threads, backend, dtype, variant),
                                  baseline_label(case, backend, variant))


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


# The L2 size assumed when torch does not report the device's (an H100's is 50 MiB).
DEFAULT_L2_BYTES = 50 << 20


def l2_flush_bytes(l2_bytes):
    """The size of the buffer cleared before every timed GPU call: max(2 x L2, 64 MiB), as
    vitbench's CUDA backend (``allocFlush`` in impl/cuda/backend.go)."""
    return max(2 * int(l2_bytes), 64 << 20)


def device_l2_bytes(props):
    """The L2 size in bytes from torch.cuda.get_device_properties (``L2_cache_size``, torch >= 2.1),
    DEFAULT_L2_BYTES when the property is missing or not positive."""
    v = getattr(props, "L2_cache_size", None)
    try:
        v = int(v)
    except (TypeError, ValueError):
        return DEFAULT_L2_BYTES
    return v if v > 0 else DEFAULT_L2_BYTES


class CudaTimer:
    """Times one call as vitbench's CUDA backend times a run (impl/cuda/timing.go): clear the
    flush buffer (evicting the L2) and synchronize, record the start event, call, record the stop
    event and wait for it.  time() returns (event ns, host end-to-end ns); the wall clock runs
    from just before the call to the end of the wait, so the flush is excluded from both."""

    def __init__(self, flush_bytes):
        self.flush_bytes = flush_bytes
        self.buf = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def time(self, fn):
        self.buf.zero_()
        torch.cuda.synchronize()
        self.start.record()
        t0 = time.perf_counter_ns()
        fn()
        self.stop.record()
        self.stop.synchronize()
        e2e = time.perf_counter_ns() - t0
        return self.start.elapsed_time(self.stop) * 1e6, e2e


_timer = None


def cuda_timer():
    """The process's CudaTimer, its flush buffer sized for device 0 and allocated once."""
    global _timer
    if _timer is None:
        _timer = CudaTimer(l2_flush_bytes(device_l2_bytes(torch.cuda.get_device_properties(0))))
    return _timer


# Op kinds whose module computes attention in modules.Attention: the ones timed a second time with
# torch.nn.functional.scaled_dot_product_attention (variant "sdpa").
SDPA_OPS = ("mhsa", "block")


def sdpa_available():
    """Whether this torch has torch.nn.functional.scaled_dot_product_attention (torch >= 2.0)."""
    return hasattr(torch.nn.functional, "scaled_dot_product_attention")


def variants_for(case, device):
    """The rows timed for a case: None (the module as the fixtures define it), then "sdpa" for an
    attention case on the GPU when this torch has scaled_dot_product_attention."""
    out = [None]
    if device == "cuda" and case["op"] in SDPA_OPS and sdpa_available():
        out.append("sdpa")
    return out


def _sdpa_attention_forward(self, x):
    """modules.Attention.forward with the attention core in scaled_dot_product_attention (same
    qkv layout and projection; a non-default scale is folded into q, as torch < 2.1's
    scaled_dot_product_attention has no scale argument)."""
    b, n, e = x.shape
    q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
    default = self.head_dim ** -0.5
    if self.scale != default:
        q = q * (self.scale / default)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return self.proj(o.transpose(1, 2).reshape(b, n, e))


def use_sdpa(module):
    """module with every modules.Attention in it (itself included) computing its attention with
    scaled_dot_product_attention; ValueError when it holds none."""
    found = 0
    for m in module.modules():
        if isinstance(m, M.Attention):
            m.forward = types.MethodType(_sdpa_attention_forward, m)
            found += 1
    if not found:
        raise ValueError("variant sdpa: the module holds no Attention")
    return module


def bench_case(case, seed, count, warmup, min_sample_ns=0, device="cpu", dtype="fp32", variant=None, load=None,
               bf16_mode=None):
    """Time one normalised case; return (samples as (runs, mean ns per run, mean end-to-end ns per
    run or None), MACs, bytes, peak RSS).

    A sample repeats the forward call until it has lasted min_sample_ns (at least once) and
    records the mean, exactly as ``vitbench bench -min-sample`` does, so short cases are not
    dominated by timer and scheduler noise.  Warm-up stops after the first call that takes longer
    than WARMUP_LONG_NS: one such call has already touched every buffer and code path, and more
    would only add minutes (the grid_sample path of the Deformable DETR transformer takes ~30 s).
    On the GPU each call is timed by CudaTimer (CUDA events after an L2 flush) and a sample lasts
    until its calls' end-to-end times add up to min_sample_ns, as in vitbench's runner; on the CPU
    the end-to-end figure is None.  variant "sdpa" computes the attention with use_sdpa.  The
    samples are one contention window: when ``load`` is a list, (foreign load or None, contended)
    is appended to it (vitbench_ref.contention, as vitbench measures its own rows).  bf16_mode
    ("autocast" or "weights", vitbench_ref.bf16) runs the module in bf16 that way instead of the
    dtype's conversion (--dtype bf16 on the CPU)."""
    reset_peak_rss()
    module, inputs, weights, (ins, ws, outs), _ = materialize(case, seed)
    args = module_args(inputs)  # every input, in the op's order (padding_mask as bool)
    if device != "cpu":
        module = module.to(device)
        args = [to_device(a, device) for a in args]
    cast = DTYPES[dtype][1]
    if bf16_mode is not None:
        module, args = BF16.prepare(module, args, bf16_mode)
    elif cast is not None:
        module = module.to(getattr(torch, cast))
        args = [cast_floating(a, getattr(torch, cast)) for a in args]
    if variant == "sdpa":
        module = use_sdpa(module)
    elif variant is not None:
        raise ValueError("unknown variant %r" % variant)
    samples = []
    if device == "cuda":
        timer = cuda_timer()
        with torch.inference_mode():
            for _ in range(warmup):
                _, e2e = timer.time(lambda: module(*args))
                if e2e > WARMUP_LONG_NS:
                    break
            window = contention.Window()
            for _ in range(count):
                runs, ev, e2e = 0, 0.0, 0
                while runs == 0 or e2e < min_sample_ns:
                    k, e = timer.time(lambda: module(*args))
                    ev += k
                    e2e += e
                    runs += 1
                samples.append((runs, ev / runs, e2e / runs))
            if load is not None:
                load.append(window.stop())
        rss = peak_rss()
        macs = C.macs(case["op"], case["params"], case["batch"])
        nbytes = 4 * (numel(ins) + numel(ws) + numel(outs))
        return samples, macs, nbytes, rss
    with torch.inference_mode():
        for _ in range(warmup):
            sync(device)
            t0 = time.perf_counter_ns()
            module(*args)
            sync(device)
            if time.perf_counter_ns() - t0 > WARMUP_LONG_NS:
                break
        window = contention.Window()
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
            samples.append((runs, elapsed / runs, None))
        if load is not None:
            load.append(window.stop())
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


def result_name(case, threads, backend="torch", dtype="fp32", variant=None):
    """The Go benchmark name of a case's result lines; a variant ("sdpa") is one more case name
    part after the case's own (vitbench's reader makes every part before the first key=value
    part the case name: ``mhsa/vit_b16/sdpa``)."""
    if variant is not None and (not re.fullmatch(r"[a-z0-9_-]+", variant)):
        raise ValueError("variant %r: lower-case letters, digits, '_' and '-' only" % variant)
    return "Benchmark%s%s/backend=%s/batch=%d/threads=%d/dtype=%s" % (
        bench_case_token(case["name"]), "/" + variant if variant else "", backend, case["batch"], threads,
        DTYPES[dtype][0])


def bench_case_token(name):
    """A case name as the first part of a Go benchmark name, as vitbench writes it: the first
    letter upper-cased when it is an ASCII lower-case letter (``Patch_embed/vit_b16``), else
    "_" + the name, so that vitbench's reader gets the name back exactly."""
    if name[:1] in "abcdefghijklmnopqrstuvwxyz" and name[:1]:
        return name[0].upper() + name[1:]
    return "_" + name


def result_line(case, threads, runs, ns, macs, nbytes, backend="torch", dtype="fp32", rss=0, e2e=None,
                variant=None):
    """One Go benchmark result line for one sample: runs calls averaging ns each; rss, when
    known, is the process's peak resident bytes over the case (B/rss, as vitbench writes it);
    e2e, when given, the host end-to-end ns per call (e2e-ns/op right after ns/op, as vitbench
    writes it)."""
    name = result_name(case, threads, backend, dtype, variant)
    ns = max(int(ns), 1)
    fields = ["%d ns/op" % ns]
    if e2e is not None:
        fields.append("%d e2e-ns/op" % max(int(e2e), 1))
    if macs:
        fields.append("%s GFLOP/s" % fmt(2.0 * macs / ns))
    fields.append("%s GB/s" % fmt(nbytes / ns))
    fields.append("%d MACs/op" % macs)
    fields.append("%d moved-B/op" % nbytes)
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
                    help="precision: fp32 (default; TF32 off on the GPU), bf16 (on the CPU the faster of autocast and bf16 weights), tf32 and fp16 (GPU only)")
    ap.add_argument("--labels-only", action="store_true",
                    help="time nothing: write only the '# baseline' lines (what code each row runs) of the cases")
    args = ap.parse_args(argv)
    if args.dtype not in ("fp32", "bf16") and args.device != "cuda":
        ap.error("--dtype %s needs --device cuda" % args.dtype)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench_torch: --device cuda, but this torch %s (CUDA %s) sees no GPU "
              "(torch.cuda.is_available() is false): install a CUDA build of torch or run on a machine "
              "with an NVIDIA GPU; nothing was timed" % (torch.__version__, torch.version.cuda or "none"),
              file=sys.stderr)
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
    if args.labels_only:
        write_atomic(os.path.abspath(args.out), label_lines(todo, args))
        print("wrote %s" % args.out, file=sys.stderr)
        return 0
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
        "# date: %s" % now,  # a comment line: benchstat ignores it, vitbench reads it
    ]
    if args.device == "cuda":
        lines.append("cuda: %s on %s" % (torch.version.cuda, torch.cuda.get_device_name(0)))
        lines.append("clock: cuda-events")
        lines.append("l2-flush-mib: %d" % (cuda_timer().flush_bytes >> 20))
        set_precision(args.dtype)
    else:
        lines.append("clock: wall")
    lines += UNITS
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    failed = 0
    for case in todo:
        if args.batch is not None:
            case = dict(case, batch=args.batch)
        plain = None  # (MACs, bytes) of the plain row when it ran
        for variant in variants_for(case, args.device):
            got = bench_variant(lines, case, variant, args)
            failed += got is None
            if variant is None:
                plain = got
            write_atomic(out, lines)
        if plain is not None and case["op"] == "gemm" and args.device == "cpu" and args.dtype == "fp32":
            macs, nbytes = plain
            np_samples = bench_numpy(case, args.seed, args.count, args.warmup, int(args.min_sample_ms * 1e6))
            lines.extend(result_line(case, args.threads, runs, ns, macs, nbytes, backend="numpy")
                         for runs, ns in np_samples)
            lines.append(baseline_line(case, args.threads, backend="numpy"))
        write_atomic(out, lines)

    write_atomic(out, lines)
    print("wrote %s" % args.out, file=sys.stderr)
    return 1 if failed else 0


def label_lines(todo, args):
    """The "# baseline" lines a timing run with these arguments writes for the cases todo (one per
    row: each variant, and NumPy's row of a gemm case on the CPU), without timing anything."""
    lines = []
    for case in todo:
        if args.batch is not None:
            case = dict(case, batch=args.batch)
        for variant in variants_for(case, args.device):
            lines.append(baseline_line(case, args.threads, dtype=args.dtype, variant=variant))
        if case["op"] == "gemm" and args.device == "cpu" and args.dtype == "fp32":
            lines.append(baseline_line(case, args.threads, backend="numpy"))
    return lines


def bench_variant(lines, case, variant, args):
    """Time one case (one variant of it) and append its result lines, or its # FAILED line, to
    lines; returns (MACs, bytes) of the case, None when it failed."""
    label = case["name"] + ("/" + variant if variant else "")
    load, mode_note = [], ""
    try:
        if args.device == "cpu" and args.dtype == "bf16":
            # Both ways of running bf16 on the CPU; the faster is the row, its label says which.
            loads = {}

            def run(mode):
                loads[mode] = []
                return bench_case(case, args.seed, args.count, args.warmup, int(args.min_sample_ms * 1e6),
                                  args.device, args.dtype, variant=variant, load=loads[mode], bf16_mode=mode)
            (samples, macs, nbytes, rss), mode, medians = BF16.faster(run)
            load, mode_note = loads[mode], BF16.note(mode, medians)
        else:
            samples, macs, nbytes, rss = bench_case(case, args.seed, args.count, args.warmup,
                                                    int(args.min_sample_ms * 1e6), args.device, args.dtype,
                                                    variant=variant, load=load)
    except Exception as e:  # one case's failure must not lose the others
        msg = " ".join(("%s: %s" % (type(e).__name__, e)).split())
        lines.append("# FAILED %s: %s" % (result_name(case, args.threads, dtype=args.dtype, variant=variant), msg))
        print("%-32s batch=%d FAILED: %s" % (label, case["batch"], msg), file=sys.stderr)
        if args.device == "cuda":
            torch.cuda.empty_cache()
        return None
    lines.extend(result_line(case, args.threads, runs, ns, macs, nbytes, dtype=args.dtype, rss=rss, e2e=e2e,
                             variant=variant)
                 for runs, ns, e2e in samples)
    lines.append(baseline_line(case, args.threads, dtype=args.dtype, variant=variant) + mode_note)
    busy = ""
    if load:
        lines.append(contention.load_line(result_name(case, args.threads, dtype=args.dtype, variant=variant), *load[0]))
        if load[0][1]:
            busy = "  contended: foreign load %.2f" % load[0][0]
    med = sorted(s[1] for s in samples)[len(samples) // 2]
    print("%-32s batch=%d threads=%d  median %.3f ms  (%d runs)%s" % (
        label, case["batch"], args.threads, med / 1e6, len(samples), busy), file=sys.stderr)
    return macs, nbytes


def write_atomic(path, lines):
    """Write lines to path through a temporary file in the same folder and a rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
