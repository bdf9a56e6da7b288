"""Fixture exporter: runs the reference modules on synthesized inputs/weights and writes
fixture directories in the format of fixtures/FORMAT.md.

    cd reference && /usr/bin/python3 -m vitbench_ref.export --out ../fixtures
    /usr/bin/python3 reference/export.py --out fixtures [--only REGEX] [--seed N] [--case-json FILE]

For every case it writes ``OUT/<case name>/case.json`` and ``outputs.npz`` (inputs and weights
are synthesized and recorded in the ``synth`` section, except the few stored inputs of
``stored.STORED``, written to ``inputs.npz``; an output named in the case's ``sampled_outputs``
is stored as every K-th index along one axis), then rewrites ``OUT/MANIFEST.sha256`` over every
file of every case directory found under OUT.
Everything is deterministic except ``provenance.created`` (set ``SOURCE_DATE_EPOCH`` to pin it).
"""

import argparse
import datetime
import hashlib
import io
import json
import os
import platform
import shutil
import sys
import time
import zipfile

import numpy as np
import torch

from . import cases as C
from . import clip, ddetr, deform, detr, layers, mingpt, t2t, vit, volo, vqgan
from .stored import stored_inputs
from . import ipt
from .synth import default_role, synth

FORMAT_VERSION = 1
# Fixed timestamp inside .npz members so the archives are byte-reproducible.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_STALE = ("inputs.npz", "weights.npz", "outputs.npz", "inputs", "weights", "outputs")


def materialize(case, seed, given=None):
    """Build everything needed to run a (normalised) case.

    Returns ``(module, inputs, weights, shape_info, synth_arrays)``: the eval-mode module with its
    state_dict filled from the generator, the input arrays (name -> float32 ndarray, in the op's
    input order), the weight arrays, ``(in_shapes, w_shapes, out_shapes)`` and the
    ``synth.arrays`` record (name -> {"center", "scale"}) chosen by :func:`default_role` or, for
    the arrays the case's ``synth_arrays`` names, taken from there; a stored input
    (``stored.STORED``) is in ``inputs`` but not in the record.  ``given`` (name -> float32 array,
    checked by checkpoint.convert) supplies every weight instead of the generator: real weights,
    then not in the record either.
    """
    op, p, batch = case["op"], case["params"], case["batch"]
    in_shapes, w_shapes, out_shapes = C.shapes(op, p, batch)
    module = C.build_module(op, p)
    # Integer buffers that eval mode does not read (BatchNorm's num_batches_tracked) are not
    # fixture arrays.
    skipped = [k for k in module.state_dict() if k.endswith("num_batches_tracked")]
    sd_keys = sorted(k for k in module.state_dict() if k not in skipped)
    if sd_keys != sorted(w_shapes):
        raise AssertionError("%s: state_dict keys %s != format weights %s" % (case["name"], sd_keys, sorted(w_shapes)))
    record, inputs, weights = {}, {}, {}
    stored = stored_inputs(case, in_shapes)
    chosen = case.get("synth_arrays") or {}

    def role(name, shape, is_input):
        if name in chosen:
            return chosen[name]["center"], chosen[name]["scale"]
        return default_role(name, shape, is_input)
    for name, shape in in_shapes.items():
        if name in stored:
            inputs[name] = stored[name]
            continue
        c, s = role(name, shape, True)
        record[name] = {"center": c, "scale": s}
        inputs[name] = synth(seed, name, shape, c, s)
    for name, shape in w_shapes.items():
        if given is not None:
            weights[name] = given[name]
            continue
        c, s = role(name, shape, False)
        record[name] = {"center": c, "scale": s}
        weights[name] = synth(seed, name, shape, c, s)
    if weights:
        state = {k: torch.from_numpy(v) for k, v in weights.items()}
        state.update({k: module.state_dict()[k] for k in skipped})
        module.load_state_dict(state, strict=True)
    module.eval()
    return module, inputs, weights, (in_shapes, w_shapes, out_shapes), record


def module_args(inputs):
    """The module's positional arguments: every input as a tensor, in the op's input order
    (FORMAT.md), ``padding_mask`` as the bool tensor ``padding_mask != 0`` (True = padding)."""
    args = []
    for name, arr in inputs.items():
        t = torch.from_numpy(arr)
        args.append(t != 0 if name == "padding_mask" else t)
    return args


def run_reference(module, inputs):
    """Run ``module`` on the inputs (all of them, in order: :func:`module_args`) in float32 under
    ``torch.no_grad()``; return its outputs as {name: ndarray}: ``out`` for a module that returns
    one tensor, the module's own names for one that returns a dict (networks: ``logits`` and the
    probed stages)."""
    with torch.no_grad():
        out = module(*module_args(inputs))
    if not isinstance(out, dict):
        out = {"out": out}
    return {k: np.ascontiguousarray(v.numpy(), dtype="<f4") for k, v in out.items()}


def independent_check(case, inputs, weights, outputs):
    """Recompute the output without the module under test and return max |difference|
    (see :func:`independent_metrics`)."""
    return independent_metrics(case, inputs, weights, outputs)[0]


def independent_metrics(case, inputs, weights, outputs, refs=None):
    """Recompute the outputs without the module under test; return ``(max |difference|, NMSE)``
    over all outputs, NMSE = sum(diff^2) / sum(ref^2) (sum(diff^2) when the reference is all 0).
    ``outputs`` are the arrays as stored: an output named in ``case["sampled_outputs"]`` is
    compared with the same sample of the recomputation.  ``refs``: that recomputation, when the
    caller already has it (:func:`independent_reference`).

    patch_embed: explicit patch extraction + GEMM (must agree within the gemm class);
    soft_split: explicit index loops (must agree exactly); the deformable ops: float64 NumPy
    written from the CUDA kernel / the spec's sampling rule, no grid_sample or torchvision;
    ddetr_transformer: the whole transformer in float64 NumPy (NMSE and max |diff| per output);
    deformable_detr: NOT independent code: the same module run in float64 (``module.double()``,
    float64 inputs and weights; :func:`detector_float64`), which bounds the float32 rounding of the
    stored outputs (a float64 NumPy recomputation of ResNet-50 + transformer would be too slow);
    the module's parts are tested separately (tests/test_detr.py: the backbone against
    torchvision's resnet50, the position embedding against NumPy, post-processing by hand; the
    transformer is ddetr_transformer's).  Two-stage cases are also checked for an unambiguous
    top-k selection (:func:`check_topk_gap`, in :func:`export_case`).  The VOLO op kinds
    (outlook_attention, outlooker, class_attention, class_block, volo_stem, volo): float64 NumPy
    (:mod:`volo`: the outlook attention's pooling and fold by explicit loops, scatter-add).  The
    CLIP op kinds (clip_visual, clip_text, clip): float64 NumPy (:func:`clip.independent_reference`).
    detr_transformer: float64 NumPy (:func:`detr.detr_transformer_float64`: the sine positions, every
    nn.MultiheadAttention from the packed in_proj's row blocks).
    """
    if refs is None:
        refs = independent_reference(case, inputs, weights)
    sampled = case.get("sampled_outputs") or {}
    worst, nmse = 0.0, 0.0
    for k, out in outputs.items():
        ref = np.asarray(refs[k])
        if k in sampled:
            ref = C.sample_output(ref, sampled[k])
        if not out.size:
            continue
        err = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        worst = max(worst, float(np.max(err)))
        den = float(np.sum(ref.astype(np.float64) ** 2))
        num = float(np.sum(err ** 2))
        nmse = max(nmse, num / den if den else num)
    return worst, nmse


def independent_reference(case, inputs, weights):
    """The independent recomputation of every output (name -> ndarray, float32 or float64)."""
    p = case["params"]
    if case["op"] == "ms_deform_attn_core":
        return {"out": deform.ms_deform_sample_float64(inputs["value"], p["spatial_shapes"],
                                                        inputs["sampling_locations"], inputs["attention_weights"])}
    if case["op"] == "ms_deform_attn":
        return {"out": deform.ms_deform_attn_float64(inputs["query"], inputs["reference_points"],
                                                      inputs["input_flatten"], inputs.get("padding_mask"), weights, p)}
    if case["op"] == "ddetr_transformer":
        return ddetr.ddetr_transformer_float64(inputs["src"], inputs["pos"], inputs.get("padding_mask"), weights, p)
    if case["op"] == "deformable_detr":
        return detector_float64(case, inputs, weights)
    if case["op"] in volo.OPS:
        return volo.independent_reference(case["op"], inputs, weights, p)
    if case["op"] in clip.OPS:
        return clip.independent_reference(case["op"], inputs, weights, p)
    if case["op"] in vqgan.OPS:
        return vqgan.independent_reference(case["op"], inputs, weights, p)
    if case["op"] in mingpt.OPS:
        return mingpt.independent_reference(case["op"], inputs, weights, p)
    if case["op"] in detr.OPS:
        return detr.independent_reference(case["op"], inputs, weights, p)
    if case["op"] in ipt.OPS:
        return ipt.independent_reference(case["op"], inputs, weights, p)
    if case["op"] == "deform_conv2d":
        return {"out": deform.deform_conv2d_float64(inputs["x"], inputs["offset"], inputs.get("mask"),
                                                     weights["weight"], weights.get("bias"), p)}
    x = inputs["x"]
    op = case["op"]
    if op == "patch_embed":
        # The explicit patch GEMM, in float64.
        b = weights.get("proj.bias")
        with torch.no_grad():
            ref = layers.patch_embed_gemm(torch.from_numpy(x).double(), torch.from_numpy(weights["proj.weight"]).double(),
                                           None if b is None else torch.from_numpy(b).double(), p["patch_size"])
        return {"out": ref.numpy()}
    if op in ("t2t_module", "t2t_vit"):
        return t2t.t2t_float64(x, weights, p)
    if op == "vit":
        return vit.vit_float64(x, weights, p)
    if op == "fold":
        return {"out": layers.fold_float64(x, p)}
    if op == "avg_pool2d":
        return {"out": layers.avg_pool_float64(x, p)}
    if op in ("token_transformer", "token_performer"):
        return {"out": t2t.token_layer_float64(x, weights, p, op == "token_performer")}
    if op == "layernorm":
        return {"out": layers.layernorm_float64(x, weights["weight"], weights["bias"], p["eps"])}
    if op == "mhsa":
        return {"out": layers.attention_float64(x, weights, p)}
    if op == "block":
        return {"out": layers.block_float64(x, weights, p)}
    if op == "conv2d":
        return {"out": layers.conv_bn_act_float64(x, weights, p)}
    if op == "gemm":
        # float64 NumPy, independent of torch's BLAS call.
        w = weights["weight"].astype(np.float64)
        ref64 = x.astype(np.float64) @ (w.T if p["trans_b"] else w)
        if "bias" in weights:
            ref64 = ref64 + weights["bias"].astype(np.float64)
        return {"out": ref64}
    # soft_split: data movement, exact in any precision.
    with torch.no_grad():
        ref = t2t.soft_split_loops(torch.from_numpy(x), p["kernel_size"], p["stride"], p["padding"], p["dilation"])
    return {"out": ref.numpy().astype(np.float64)}


def reference_error(case, outputs, refs):
    """The stored float32 outputs' own error against the float64 recomputation ``refs``
    (:func:`independent_reference`), per output: ``{name: {"nmse", "max_abs"}}``, NMSE =
    sum(diff^2) / sum(ref^2) (sum(diff^2) when the recomputation is all 0), max |diff| over the
    finite elements; an output named in ``sampled_outputs`` is measured on its stored sample.
    This is the noise a float32 implementation shows when it is right (case.json
    ``reference_error``; fixtures/FORMAT.md)."""
    sampled = case.get("sampled_outputs") or {}
    out = {}
    for k, got in outputs.items():
        ref = np.asarray(refs[k], dtype=np.float64)
        if k in sampled:
            ref = C.sample_output(ref, sampled[k])
        got = got.astype(np.float64)
        finite = np.isfinite(ref) & np.isfinite(got)
        diff = np.where(finite, got - ref, 0.0)
        den = float(np.sum(np.where(finite, ref, 0.0) ** 2))
        num = float(np.sum(diff ** 2))
        out[k] = {"nmse": num / den if den else num, "max_abs": float(np.max(np.abs(diff))) if diff.size else 0.0}
    return out


def detector_float64(case, inputs, weights):
    """``deformable_detr`` run in float64: the case's module built afresh, the weights loaded as
    float64 (the shared class_embed / bbox_embed keep the last copy, as in float32), every input
    as float64 (the image mask stays a mask: nonzero = padded).  Returns {name: float64 ndarray}."""
    module = C.build_module(case["op"], case["params"]).double()
    module.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()},
                           strict=True)
    args = [torch.from_numpy(np.asarray(v, dtype=np.float64)) for v in inputs.values()]
    with torch.no_grad():
        out = module.eval()(*args)
    return {k: v.numpy() for k, v in out.items()}


def _plain(v):
    """JSON-friendly number: integral floats are written as ints (0 and 1 rather than 0.0, 1.0)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def write_npz(path, arrays):
    """Write ``arrays`` as a deflated .npz whose bytes depend only on the data (fixed member
    timestamps, sorted member order, little-endian float32 C-order .npy v1.0 members)."""
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            a = np.ascontiguousarray(arrays[name], dtype="<f4")
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, version=(1, 0), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())
    os.replace(tmp, path)


def write_text(path, text):
    """Write ``text`` (UTF-8) atomically."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def created_stamp():
    """UTC timestamp for provenance: SOURCE_DATE_EPOCH if set, else now (seconds precision)."""
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    t = int(sde) if sde else int(time.time())
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def case_document(case, seed, shape_info, record, created):
    """Return the case.json dict of FORMAT.md for a normalised case."""
    in_shapes, w_shapes, out_shapes = shape_info
    doc = {
        "format_version": FORMAT_VERSION,
        "name": case["name"],
        "kind": C.KIND.get(case["op"], "component"),
        "op": case["op"],
        "params": case["params"],
        "batch": case["batch"],
        "dtype": "float32",
        "tolerance": C.TOLERANCE[case["op"]],
        "inputs": in_shapes,
        "weights": w_shapes,
        "outputs": out_shapes,
        "synth": {"seed": seed,
                  "arrays": {k: {"center": _plain(v["center"]), "scale": _plain(v["scale"])}
                             for k, v in record.items()}},
        "provenance": {
            "producer": "reference/export.py",
            "module": C.MODULE_PATH[case["op"]],
            "torch": torch.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "created": created,
        },
    }
    if case.get("sampled_outputs"):
        doc["sampled_outputs"] = case["sampled_outputs"]
    return doc


# Largest |difference| and NMSE the independent recomputation may show, per tolerance class
# (the sampling class is checked against a float64 recomputation, so it is held tighter than
# the class a backend is judged by).
# The detector class (ddetr_transformer) is held to its own bounds, NMSE <= 1e-6 and max |diff| <= 1e-3
# per output, against the float64 NumPy recomputation of the whole transformer (about 15 s and well
# under 1 GB for the full-size case, S = 17,821, so every case is verified).  deformable_detr is held
# to the same bounds against its own module run in float64 (detector_float64), with identical labels.
VERIFY = {"exact": (0.0, None), "sampling": (1e-4, 1e-10), "detector": (1e-3, 1e-6)}
# Two-stage cases: each of the ``queries`` selected class-0 scores of the encoder must exceed the next
# score in descending order by more than this, so a backend's selection (and its order) cannot
# differ from the reference's by float32 rounding (torch.topk's order for equal values is unspecified).
TOPK_GAP = 1e-5


def two_stage_score_hook(module, case):
    """For a two-stage case, a forward hook on the encoder's class head (the transformer decoder's
    ``class_embed[dec_layers]``, shared with the detector's top level) that records its class-0
    scores [N, S]; returns ``(handle, list)`` or ``(None, None)`` for other cases."""
    if not case["params"].get("two_stage"):
        return None, None
    seen = []
    head = module.transformer.decoder.class_embed[case["params"]["dec_layers"]]
    handle = head.register_forward_hook(lambda mod, args, out: seen.append(out[..., 0].detach().numpy().copy()))
    return handle, seen


def check_topk_gap(name, scores, k, gap=TOPK_GAP):
    """Raise AssertionError unless, for every image of ``scores [N, S]``, each of the ``k`` largest
    scores is either exactly equal to the next score in descending order (the (k+1)-th included
    when S > k) or more than ``gap`` above it.  Returns the smallest nonzero difference."""
    worst = np.inf
    for img, row in enumerate(np.asarray(scores, dtype=np.float64)):
        s = np.sort(row)[::-1]
        diffs = s[:min(k, len(s) - 1)] - s[1:min(k, len(s) - 1) + 1]
        # Exactly equal scores (a zero class head: every row scores its bias) are no ambiguity: every
        # float32 implementation computes them equal, and equal scores go lower row first.
        diffs = diffs[diffs != 0]
        if diffs.size:
            worst = min(worst, float(diffs.min()))
        if diffs.size and not diffs.min() > gap:
            i = int(np.argmin(diffs))
            raise AssertionError("%s: image %d: two-stage top-%d scores %d and %d differ by %g <= %g (ambiguous "
                                 "selection)" % (name, img, k, i, i + 1, float(diffs[i]), gap))
    return worst


def export_case(out_dir, case, seed, created, verify=True, given=None):
    """Export one case into ``out_dir/<name>/``; return (case_dir, output shape, max check diff).
    With ``given`` (real weights, see materialize) the weights are stored in weights.npz."""
    module, inputs, weights, shape_info, record = materialize(case, seed, given)
    handle, scores = two_stage_score_hook(module, case)
    outputs = run_reference(module, inputs)
    if handle is not None:
        handle.remove()
        check_topk_gap(case["name"], scores[0], case["params"]["queries"])
    for k, shp in shape_info[2].items():
        if list(outputs[k].shape) != shp:
            raise AssertionError("%s: output %s has shape %s, format says %s"
                                 % (case["name"], k, list(outputs[k].shape), shp))
    for k, spec in (case.get("sampled_outputs") or {}).items():
        outputs[k] = np.ascontiguousarray(C.sample_output(outputs[k], spec))
    diff, noise = None, None
    if verify:
        refs = independent_reference(case, inputs, weights)
        noise = reference_error(case, outputs, refs)
        diff, nmse = independent_metrics(case, inputs, weights, outputs, refs)
        limit, nmse_limit = VERIFY.get(C.TOLERANCE[case["op"]], (1e-4, None))
        if not diff <= limit or (nmse_limit is not None and not nmse <= nmse_limit):
            raise AssertionError("%s: independent recomputation differs by %g (NMSE %g)" % (case["name"], diff, nmse))
        # deformable_detr: the top-k labels (integers) must be the float64 run's exactly.
        if "labels" in outputs and not np.array_equal(outputs["labels"], refs["labels"]):
            raise AssertionError("%s: top-k labels differ from the recomputation" % case["name"])
    case_dir = os.path.join(out_dir, *case["name"].split("/"))
    os.makedirs(case_dir, exist_ok=True)
    for stale in _STALE:
        path = os.path.join(case_dir, stale)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    doc = case_document(case, seed, shape_info, record, created)
    if noise is not None:
        doc["reference_error"] = noise
    write_text(os.path.join(case_dir, "case.json"), json.dumps(doc, indent=2, sort_keys=True) + "\n")
    write_npz(os.path.join(case_dir, "outputs.npz"), outputs)
    if given is not None and weights:
        write_npz(os.path.join(case_dir, "weights.npz"), weights)
    stored = {k: v for k, v in inputs.items() if k not in record}
    if stored:
        write_npz(os.path.join(case_dir, "inputs.npz"), stored)
    first = "out" if "out" in outputs else sorted(outputs)[0]
    return case_dir, list(outputs[first].shape), diff


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(out_dir):
    """Rewrite ``out_dir/MANIFEST.sha256`` (sha256sum format) over every file under every
    directory that holds a case.json, paths relative to out_dir with '/', sorted by path."""
    files = set()
    for root, dirs, names in os.walk(out_dir):
        dirs.sort()
        if "case.json" in names:
            for r2, d2, n2 in os.walk(root):
                for n in n2:
                    if not n.endswith(".tmp"):
                        files.add(os.path.relpath(os.path.join(r2, n), out_dir).replace(os.sep, "/"))
    lines = ["%s  %s\n" % (_sha256(os.path.join(out_dir, rel)), rel) for rel in sorted(files)]
    write_text(os.path.join(out_dir, "MANIFEST.sha256"), "".join(lines))
    return len(lines)


def load_case_json(path):
    """Read a user-defined case ({"name", "op", "params", "batch"} and optionally
    "sampled_outputs", or a list of them)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    items = data if isinstance(data, list) else [data]
    return [C.check_case(c) for c in items]


def load_given_weights(path, todo):
    """The weights of ``path`` (checkpoint.load) for the single case of ``todo``, checked by
    checkpoint.convert; returns (arrays, None) or (None, message) naming every missing array
    and shape mismatch."""
    from . import checkpoint
    if len(todo) != 1:
        return None, "--weights needs exactly one case (--only or --case-json), got %d" % len(todo)
    try:
        sd = checkpoint.load(path)
    except (OSError, ValueError, RuntimeError) as e:
        return None, "%s: %s" % (path, e)
    arrays, problems, _ = checkpoint.convert(todo[0], sd)
    if problems:
        return None, "%s does not fit %s:\n  %s" % (path, todo[0]["name"], "\n  ".join(problems))
    return arrays, None


def main(argv=None):
    """Command-line entry point; returns the process exit status."""
    ap = argparse.ArgumentParser(prog="export.py", description="Write vitbench reference fixtures (fixtures/FORMAT.md).")
    ap.add_argument("--out", required=True, help="fixture root directory (e.g. fixtures)")
    ap.add_argument("--only", default=None, help="regex (re.search) on case names of the built-in cases")
    ap.add_argument("--seed", type=int, default=None,
                    help="generator seed (unsigned 64-bit) of every case; default: the case's own (builtin.json "
                         "\"seed\"), else 1")
    ap.add_argument("--case-json", action="append", default=[], metavar="FILE",
                    help="export a user-defined case {name, op, params, batch[, sampled_outputs]} "
                         "(or a list) from FILE "
                         "instead of the built-in cases; may be repeated")
    ap.add_argument("--no-verify", action="store_true", help="skip the independent recomputation check")
    ap.add_argument("--weights", default=None, metavar="FILE",
                    help="real weights for the one case chosen (--only or --case-json): a .pth state_dict or the "
                         ".npz of convert_checkpoint.py; stored in the fixture's weights.npz")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    args = ap.parse_args(argv)

    if args.seed is not None and not 0 <= args.seed < 2 ** 64:
        ap.error("--seed must be in [0, 2^64)")
    torch.set_num_threads(2)
    try:
        if args.case_json:
            todo = [c for path in args.case_json for c in load_case_json(path)]
            if args.only:
                import re
                todo = [c for c in todo if re.search(args.only, c["name"])]
        else:
            todo = C.select(args.only, fixtures_only=True)
    except (ValueError, OSError, json.JSONDecodeError) as e:
        print("export: %s" % e, file=sys.stderr)
        return 2
    if not todo:
        print("export: no case matches", file=sys.stderr)
        return 1
    given = None
    if args.weights:
        given, err = load_given_weights(args.weights, todo)
        if err:
            print("export: %s" % err, file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)
    created = created_stamp()
    for case in todo:
        t0 = time.perf_counter()
        seed = args.seed if args.seed is not None else case.get("seed", 1)
        case_dir, shape, diff = export_case(args.out, case, seed, created, verify=not args.no_verify, given=given)
        if not args.quiet:
            print("%-32s out %-18s check %-9s %6.2fs  %s" % (
                case["name"], shape, "-" if diff is None else "%.1e" % diff, time.perf_counter() - t0, case_dir),
                file=sys.stderr)
    n = write_manifest(args.out)
    if not args.quiet:
        print("MANIFEST.sha256: %d files" % n, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
