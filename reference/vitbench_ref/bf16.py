"""The two ways PyTorch runs a case in bf16 on the CPU, for bench_torch.py --dtype bf16
(docs/baselines.md): ``autocast`` (``torch.autocast("cpu", dtype=torch.bfloat16)`` around each
call: fp32 weights, the ops autocast lists run in bf16 through oneDNN) and ``weights`` (the
module and its floating-point inputs converted to bf16, PyTorch eager in bf16).  The baseline
times both and keeps the faster, saying which."""

import torch

MODES = ("autocast", "weights")
_DESCRIBE = {"autocast": 'torch.autocast("cpu", dtype=torch.bfloat16), fp32 weights',
             "weights": "module.to(torch.bfloat16) with bf16 inputs"}


def _cast(x):
    """x with its floating-point tensors in bf16 (lists and tuples too); others unchanged."""
    if torch.is_tensor(x):
        return x.to(torch.bfloat16) if x.is_floating_point() else x
    if isinstance(x, (list, tuple)):
        return type(x)(_cast(v) for v in x)
    return x


def prepare(module, args, mode):
    """(callable, args) that run module on args in bf16 the way mode says; ValueError for an
    unknown mode."""
    if mode == "weights":
        return module.to(torch.bfloat16), [_cast(a) for a in args]
    if mode == "autocast":
        def call(*a):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return module(*a)
        return call, args
    raise ValueError("bf16 mode %r: not one of %s" % (mode, ", ".join(MODES)))


def median(samples):
    """The median of the mean ns per run of bench_case samples ((runs, ns, e2e) tuples)."""
    return sorted(s[1] for s in samples)[len(samples) // 2]


def faster(run):
    """Time every mode with run(mode) (bench_case's result: samples first) and return
    (the faster mode's result, that mode, {mode: median ns}).  A mode that raises is left
    out (its error kept in the medians dict as a string); when both raise, a RuntimeError
    names each mode's error."""
    results, medians, err = {}, {}, None
    for mode in MODES:
        try:
            results[mode] = run(mode)
        except Exception as e:  # noqa: BLE001 - the other mode may still run
            err = e
            medians[mode] = "%s: %s" % (type(e).__name__, e)
            continue
        medians[mode] = median(results[mode][0])
    if not results:
        raise RuntimeError("bf16 on the CPU: both modes failed: " +
                           "; ".join("%s: %s" % (m, " ".join(medians[m].split())) for m in MODES)) from err
    best = min(results, key=lambda m: medians[m])
    return results[best], best, medians


def note(mode, medians):
    """The label suffix saying which bf16 mode a row ran and what the other measured."""
    other = [m for m in MODES if m != mode][0]
    theirs = medians.get(other)
    said = ("%.4g ms" % (theirs / 1e6)) if isinstance(theirs, (int, float)) else "failed: %s" % " ".join(str(theirs).split())
    return "; bf16 by %s (%s), %.4g ms, the faster of the two: %s %s" % (
        mode, _DESCRIBE[mode], medians[mode] / 1e6, other, said)
