"""ONNX export of the built-in cases' reference modules, for the ONNX Runtime baseline
(reference/bench_ort.js; docs/baselines.md).

    /usr/bin/python3 reference/onnx_export.py --out DIR [--run REGEX] [--batch N] [--seed 1] [--outputs]

Each case is built exactly as the fixture exporter builds it (:func:`export.materialize`: same
module, same synthesized inputs and weights) and exported with ``torch.onnx.export`` to
``DIR/<case dir>/model.onnx``; its inputs are written beside it as raw little-endian arrays
(``<name>.bin``).  ``DIR/manifest.json`` lists every case: the model, its inputs (name, dtype,
shape, file), output names, MACs and moved bytes (as bench_torch.py counts them), or ``"ns"``:
the reason the case has no model (python3-onnx missing, an export error).  ``--outputs`` also
writes the PyTorch module's outputs (``torch_<name>.bin``), which the tests compare with what
ONNX Runtime computes.

Debian's torch 1.13 exports up to opset 17, which has neither ``Col2Im`` (opset 18) nor
``DeformConv`` (opset 19).  ``aten::col2im`` (nn.Fold, VOLO's outlook attention) and
``torchvision::deform_conv2d`` are therefore exported by symbolics of our own into a private
domain, and :func:`upgrade_opset` then moves the model to opset 19: those nodes into the
default domain, and the nodes whose form changed between 17 and 19 (the Reduce* family's
``axes`` attribute became an input; ``Split`` needs ``num_outputs`` when no sizes are given)
rewritten.  A node of an op this upgrade does not know to be unchanged is an error naming it,
so a model never silently runs under semantics it was not written for.
"""

import argparse
import json
import os
import re
import sys
import warnings

import numpy as np
import torch

from . import cases as C
from .export import materialize, module_args

# The opset the models are written in (DeformConv's), and the one torch 1.13 exports.
OPSET = 19
TORCH_OPSET = 17
# The private domain our symbolics emit Col2Im and DeformConv into before the upgrade.
TMP_DOMAIN = "vitbench_tmp"

# Reduce ops whose axes moved from an attribute to an optional second input in opset 18.
_REDUCE_18 = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
              "ReduceMin", "ReduceProd", "ReduceSumSquare"}
# Default-domain ops whose opset 17 form means the same at opset 19 (new optional attributes or
# inputs with defaults that keep the old behaviour, or unchanged).
_SAME_17_19 = {
    "Abs", "Add", "And", "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Cast", "CastLike", "Ceil",
    "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Cos", "CumSum", "Div", "Einsum", "Elu", "Equal",
    "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm",
    "Greater", "GreaterOrEqual", "GridSample", "Identity", "If", "LayerNormalization", "Less", "LessOrEqual",
    "Log", "MatMul", "Max", "MaxPool", "Min", "Mod", "Mul", "Neg", "NonZero", "Not", "Or", "Pad", "Pow",
    "Range", "Reciprocal", "Relu", "Reshape", "Resize", "ScatterElements", "ScatterND", "Shape", "Sigmoid",
    "Sign", "Sin", "Size", "Slice", "Softmax", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile", "TopK",
    "Transpose", "Trilu", "Unsqueeze", "Where", "Xor", "ReduceSum", "Col2Im", "DeformConv", "Sinh", "Cosh",
    "Round", "IsNaN", "IsInf", "OneHot", "Softplus", "LeakyRelu", "HardSigmoid", "Atan", "Asin", "Acos",
    "InstanceNormalization", "NonMaxSuppression", "RoiAlign", "Dropout", "PRelu", "HardSwish", "Selu",
    # Versions 1, 11 and 13 only (the ONNX operator docs list no DepthToSpace after 13).
    "DepthToSpace",
}


def onnx_module():
    """The onnx Python package, or None when it is not installed (Debian's python3-onnx)."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return None
    return onnx


_registered = False


def register_symbolics():
    """Register the exporter's symbolics for aten::col2im and torchvision::deform_conv2d (once)."""
    global _registered
    if _registered:
        return
    from torch.onnx import symbolic_helper as sh

    @sh.parse_args("v", "v", "is", "is", "is", "is")
    def col2im(g, x, output_size, kernel_size, dilation, padding, stride):
        size = sh._maybe_get_const(output_size, "is")
        if not sh._is_value(size):
            image = g.op("Constant", value_t=torch.tensor(list(size), dtype=torch.int64))
        elif sh._is_packed_list(size):
            # Sizes the tracer took from a tensor's shape (inside a network): one int64 vector.
            zero = g.op("Constant", value_t=torch.tensor([0], dtype=torch.int64))
            image = g.op("Concat", *[g.op("Unsqueeze", g.op("Cast", v, to_i=7), zero) for v in sh._unpack_list(size)],
                         axis_i=0)
        else:
            image = g.op("Cast", size, to_i=7)
        block = g.op("Constant", value_t=torch.tensor(list(kernel_size), dtype=torch.int64))
        return g.op(TMP_DOMAIN + "::Col2Im", x, image, block, dilations_i=list(dilation),
                    pads_i=list(padding) + list(padding), strides_i=list(stride))

    @sh.parse_args("v", "v", "v", "v", "v", "i", "i", "i", "i", "i", "i", "i", "i", "b")
    def deform_conv2d(g, x, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                      n_weight_grps, n_offset_grps, use_mask):
        w_shape = sh._get_tensor_sizes(weight)
        if w_shape is None or len(w_shape) != 4 or any(d is None for d in w_shape):
            raise RuntimeError("deform_conv2d: the weight's shape is not known at export")
        args = [x, weight, offset, bias]
        if use_mask:
            args.append(mask)
        return g.op(TMP_DOMAIN + "::DeformConv", *args, dilations_i=[dil_h, dil_w], group_i=n_weight_grps,
                    kernel_shape_i=list(w_shape[2:]), offset_group_i=n_offset_grps,
                    pads_i=[pad_h, pad_w, pad_h, pad_w], strides_i=[stride_h, stride_w])

    torch.onnx.register_custom_op_symbolic("aten::col2im", col2im, TORCH_OPSET)
    torch.onnx.register_custom_op_symbolic("torchvision::deform_conv2d", deform_conv2d, TORCH_OPSET)
    _registered = True


def _nodes(graph):
    """Every node of graph and of the subgraphs of its nodes' attributes (If/Loop bodies)."""
    onnx = onnx_module()
    for node in graph.node:
        yield graph, node
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    yield from _nodes(sub)


def upgrade_opset(model):
    """Move a model torch exported at opset 17 (with our private-domain Col2Im / DeformConv) to
    opset 19 in place; ValueError naming an op whose opset 19 meaning is not known here."""
    onnx = onnx_module()
    from onnx import helper, numpy_helper
    counter = [0]
    for graph, node in list(_nodes(model.graph)):
        if node.domain == TMP_DOMAIN:
            node.domain = ""
            continue
        if node.domain not in ("", "ai.onnx"):
            raise ValueError("opset upgrade: node %s of domain %r" % (node.op_type, node.domain))
        if node.op_type in _REDUCE_18:
            axes = [a for a in node.attribute if a.name == "axes"]
            if axes:
                counter[0] += 1
                name = "vitbench_axes_%d" % counter[0]
                graph.initializer.append(numpy_helper.from_array(np.array(axes[0].ints, dtype=np.int64), name))
                node.attribute.remove(axes[0])
                while len(node.input) < 1:
                    node.input.append("")
                node.input.append(name)
            continue
        if node.op_type == "Split":
            if len(node.input) < 2 or node.input[1] == "":
                node.attribute.append(helper.make_attribute("num_outputs", len(node.output)))
            continue
        if node.op_type not in _SAME_17_19:
            raise ValueError("opset upgrade 17 -> 19: op %s is not known to mean the same at opset 19" % node.op_type)
    kept = [o for o in model.opset_import if o.domain not in ("", "ai.onnx", TMP_DOMAIN)]
    del model.opset_import[:]
    model.opset_import.extend(kept + [helper.make_opsetid("", OPSET)])
    model.ir_version = max(model.ir_version, 9)  # ONNX 1.14's IR version, which opset 19 needs
    return model


def case_dir_name(name, batch):
    """The directory of one exported case: its name with '/' as '__', and the batch."""
    return "%s__b%d" % (re.sub(r"[^A-Za-z0-9_.-]", "_", name.replace("/", "__")), batch)


def _write_array(path, arr):
    """Write arr's bytes, little-endian, C order."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    with open(path, "wb") as f:
        f.write(arr.tobytes())


# numpy dtype -> the onnxruntime-node tensor type name.
_ORT_TYPES = {"float32": "float32", "int64": "int64", "bool": "bool", "int32": "int32"}


def export_case(case, seed, out_dir, outputs=False):
    """Export one (normalised) case to out_dir/<case_dir_name>; return its manifest entry."""
    entry = {"case": case["name"], "batch": case["batch"], "op": case["op"]}
    onnx = onnx_module()
    if onnx is None:
        entry["ns"] = "python3-onnx not installed (the ONNX export needs it)"
        return entry
    module, inputs, weights, (ins, ws, outs), _ = materialize(case, seed)
    entry["macs"] = int(C.macs(case["op"], case["params"], case["batch"]))
    entry["bytes"] = 4 * sum(int(np.prod(s, dtype=np.int64)) for d in (ins, ws, outs) for s in d.values())
    args = module_args(inputs)
    names = list(inputs)
    d = case_dir_name(case["name"], case["batch"])
    os.makedirs(os.path.join(out_dir, d), exist_ok=True)
    model_path = os.path.join(out_dir, d, "model.onnx")
    register_symbolics()
    with torch.no_grad():
        ref = module(*args)
    out_names = list(ref) if isinstance(ref, dict) else ["out"]
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # The tracer's warnings (our private ops have no shape inference; Python ints taken
            # from shapes) say nothing about these fixed-shape models.
            warnings.simplefilter("ignore")
            torch.onnx.export(module, tuple(args), model_path, input_names=names, output_names=out_names,
                              opset_version=TORCH_OPSET, do_constant_folding=True)
        model = onnx.load(model_path)
        upgrade_opset(model)
        onnx.save(model, model_path)
    except Exception as e:  # noqa: BLE001 - the reason goes into the baseline as NS
        entry["ns"] = "ONNX export failed: " + " ".join(("%s: %s" % (type(e).__name__, e)).split())[:400]
        return entry
    entry["model"] = os.path.join(d, "model.onnx")
    entry["module"] = "%s.%s" % (type(module).__module__, type(module).__qualname__)
    entry["opset"] = OPSET
    entry["inputs"] = []
    for name, t in zip(names, args):
        a = t.numpy()
        f = os.path.join(d, "%s.bin" % name)
        _write_array(os.path.join(out_dir, f), a)
        entry["inputs"].append({"name": name, "dtype": _ORT_TYPES[str(a.dtype)], "shape": list(a.shape), "file": f})
    entry["outputs"] = out_names
    if outputs:
        vals = ref if isinstance(ref, dict) else {"out": ref}
        entry["torch_outputs"] = {}
        for k, v in vals.items():
            f = os.path.join(d, "torch_%s.bin" % k)
            _write_array(os.path.join(out_dir, f), v.numpy().astype("<f4"))
            entry["torch_outputs"][k] = {"file": f, "shape": list(v.shape)}
    return entry


def export_all(todo, seed, out_dir, outputs=False, log=sys.stderr):
    """Export every case of todo into out_dir and write out_dir/manifest.json; return the manifest."""
    os.makedirs(out_dir, exist_ok=True)
    onnx = onnx_module()
    manifest = {"torch_version": torch.__version__, "onnx_version": onnx.__version__ if onnx else None,
                "opset": OPSET, "seed": seed, "cases": []}
    for case in todo:
        entry = export_case(case, seed, out_dir, outputs)
        manifest["cases"].append(entry)
        if "ns" in entry:
            print("onnx_export: %s batch=%d NS: %s" % (case["name"], case["batch"], entry["ns"]), file=log)
    tmp = os.path.join(out_dir, "manifest.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "manifest.json"))
    return manifest


def main(argv=None):
    """Command-line entry point; returns the process exit status."""
    ap = argparse.ArgumentParser(prog="onnx_export.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output directory (manifest.json and one directory per case)")
    ap.add_argument("--run", default=None, help="regex (re.search) on case names")
    ap.add_argument("--batch", type=int, default=None, help="export every case at this batch")
    ap.add_argument("--seed", type=int, default=1, help="generator seed for inputs and weights (default 1)")
    ap.add_argument("--outputs", action="store_true", help="also write the PyTorch module's outputs")
    args = ap.parse_args(argv)
    if args.batch is not None and args.batch < 1:
        ap.error("--batch must be >= 1")
    try:
        todo = C.select(args.run)
    except re.error as e:
        ap.error("bad --run regex: %s" % e)
    if not todo:
        print("onnx_export: no case matches %r" % args.run, file=sys.stderr)
        return 1
    if args.batch is not None:
        todo = [dict(c, batch=args.batch) for c in todo]
    export_all(todo, args.seed, args.out, args.outputs)
    return 0
