"""Built-in fixture cases (as data) and the per-op-kind rules of fixtures/FORMAT.md:
parameter normalisation, array shapes, module construction, tolerance class and MAC count."""

import re

from . import modules

# name, op, params, batch.  Pairs may be ints or [h, w]; normalize_params() expands them.
CASES = [
    {"name": "patch_embed/vit_b16", "op": "patch_embed", "batch": 1,
     "params": {"in_chans": 3, "embed_dim": 768, "patch_size": 16, "img_size": 224}},
    {"name": "patch_embed/vit_s16", "op": "patch_embed", "batch": 1,
     "params": {"in_chans": 3, "embed_dim": 384, "patch_size": 16, "img_size": 224}},
    {"name": "patch_embed/vit_b16_384", "op": "patch_embed", "batch": 1,
     "params": {"in_chans": 3, "embed_dim": 768, "patch_size": 16, "img_size": 384}},
    {"name": "patch_embed/odd_c5_e37_p7", "op": "patch_embed", "batch": 1,
     "params": {"in_chans": 5, "embed_dim": 37, "patch_size": 7, "img_size": [31, 45]}},
    {"name": "patch_embed/vit_ti16_b2", "op": "patch_embed", "batch": 2,
     "params": {"in_chans": 3, "embed_dim": 192, "patch_size": 16, "img_size": 224}},
    {"name": "patch_embed/rect_p8x4", "op": "patch_embed", "batch": 1,
     "params": {"in_chans": 3, "embed_dim": 20, "patch_size": [8, 4], "img_size": [40, 36], "bias": False}},
    {"name": "soft_split/t2t_ss0", "op": "soft_split", "batch": 1,
     "params": {"in_chans": 3, "img_size": 224, "kernel_size": 7, "stride": 4, "padding": 2}},
    {"name": "soft_split/t2t_ss1", "op": "soft_split", "batch": 1,
     "params": {"in_chans": 64, "img_size": 56, "kernel_size": 3, "stride": 2, "padding": 1}},
    {"name": "soft_split/t2t_ss2", "op": "soft_split", "batch": 1,
     "params": {"in_chans": 64, "img_size": 28, "kernel_size": 3, "stride": 2, "padding": 1}},
    {"name": "soft_split/odd_c5_k3_s2_p1", "op": "soft_split", "batch": 1,
     "params": {"in_chans": 5, "img_size": [29, 23], "kernel_size": 3, "stride": 2, "padding": 1}},
    {"name": "soft_split/t2t_ss1_b2", "op": "soft_split", "batch": 2,
     "params": {"in_chans": 64, "img_size": 56, "kernel_size": 3, "stride": 2, "padding": 1}},
    {"name": "soft_split/dil2_k3", "op": "soft_split", "batch": 1,
     "params": {"in_chans": 3, "img_size": [17, 19], "kernel_size": 3, "stride": 1, "padding": 2,
                "dilation": 2}},
    {"name": "soft_split/rect_k5x3_s3x2", "op": "soft_split", "batch": 1,
     "params": {"in_chans": 4, "img_size": [21, 16], "kernel_size": [5, 3], "stride": [3, 2],
                "padding": [2, 1]}},
]

# op kind -> {param: default}; None marks a required parameter.  Pair-valued params are listed in PAIRS.
PARAMS = {
    "patch_embed": {"in_chans": None, "embed_dim": None, "patch_size": None, "img_size": None, "bias": True},
    "soft_split": {"in_chans": None, "img_size": None, "kernel_size": None, "stride": 1, "padding": 0,
                   "dilation": 1},
}
PAIRS = {"patch_size", "img_size", "kernel_size", "stride", "padding", "dilation"}
TOLERANCE = {"patch_embed": "gemm", "soft_split": "exact"}
MODULE_PATH = {"patch_embed": "reference.vitbench_ref.modules.PatchEmbed",
               "soft_split": "reference.vitbench_ref.modules.SoftSplit"}


def _as_int(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("%s must be an integer, got %r" % (what, v))
    return v


def normalize_params(op, params):
    """Validate ``params`` for op kind ``op`` and return them complete, with every default filled
    in and every pair written as ``[h, w]``.  Unknown keys, missing required keys and
    non-positive sizes raise ValueError (as the Go side does for unknown keys)."""
    if op not in PARAMS:
        raise ValueError("unknown op kind %r (known: %s)" % (op, ", ".join(sorted(PARAMS))))
    spec = PARAMS[op]
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise ValueError("%s: unknown params %s" % (op, unknown))
    out = {}
    for key, default in spec.items():
        if key not in params:
            if default is None:
                raise ValueError("%s: missing required param %r" % (op, key))
            v = default
        else:
            v = params[key]
        if key in PAIRS:
            if isinstance(v, list):
                if len(v) != 2:
                    raise ValueError("%s: %s must be an int or [h, w]" % (op, key))
                v = [_as_int(v[0], key), _as_int(v[1], key)]
            else:
                v = [_as_int(v, key)] * 2
            low = 0 if key == "padding" else 1
            if min(v) < low:
                raise ValueError("%s: %s out of range: %r" % (op, key, v))
        elif key == "bias":
            if not isinstance(v, bool):
                raise ValueError("%s: bias must be true or false" % op)
        else:
            v = _as_int(v, key)
            if v < 1:
                raise ValueError("%s: %s must be >= 1" % (op, key))
        out[key] = v
    return out


def shapes(op, p, batch):
    """Return ``(inputs, weights, outputs)``: dicts of array name -> shape (lists) for normalised
    params ``p`` at ``batch``, as FORMAT.md derives them."""
    b = int(batch)
    if op == "patch_embed":
        (h, w), (ph, pw) = p["img_size"], p["patch_size"]
        n = (h // ph) * (w // pw)
        if n < 1:
            raise ValueError("patch_embed: image %r smaller than patch %r" % (p["img_size"], p["patch_size"]))
        weights = {"proj.weight": [p["embed_dim"], p["in_chans"], ph, pw]}
        if p["bias"]:
            weights["proj.bias"] = [p["embed_dim"]]
        return ({"x": [b, p["in_chans"], h, w]}, weights, {"out": [b, n, p["embed_dim"]]})
    if op == "soft_split":
        (h, w), (kh, kw) = p["img_size"], p["kernel_size"]
        (sh, sw), (ph, pw), (dh, dw) = p["stride"], p["padding"], p["dilation"]
        ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        if ho < 1 or wo < 1:
            raise ValueError("soft_split: no complete window (Ho=%d, Wo=%d)" % (ho, wo))
        c = p["in_chans"]
        return ({"x": [b, c, h, w]}, {}, {"out": [b, ho * wo, c * kh * kw]})
    raise ValueError("unknown op kind %r" % op)


def build_module(op, p):
    """Construct the reference module (eval mode) for normalised params ``p``."""
    if op == "patch_embed":
        return modules.PatchEmbed(p["in_chans"], p["embed_dim"], p["patch_size"], p["img_size"], p["bias"])
    if op == "soft_split":
        return modules.SoftSplit(p["kernel_size"], p["stride"], p["padding"], p["dilation"])
    raise ValueError("unknown op kind %r" % op)


def macs(op, p, batch):
    """Multiply-accumulates of one forward pass: patch_embed B*N*E*C*ph*pw; soft_split 0."""
    if op == "patch_embed":
        _, _, out = shapes(op, p, batch)
        b, n, e = out["out"]
        ph, pw = p["patch_size"]
        return b * n * e * p["in_chans"] * ph * pw
    return 0


def check_case(case):
    """Validate a case dict {name, op, params, batch}; return a copy with normalised params."""
    missing = [k for k in ("name", "op", "params") if k not in case]
    if missing:
        raise ValueError("case is missing %s" % missing)
    extra = sorted(set(case) - {"name", "op", "params", "batch"})
    if extra:
        raise ValueError("case has unknown keys %s" % extra)
    name = case["name"]
    if not isinstance(name, str) or not name or name.startswith("/") or ".." in name.split("/") \
            or "=" in name or re.search(r"\s", name):
        raise ValueError("bad case name %r (want e.g. 'patch_embed/my_config')" % (name,))
    batch = _as_int(case.get("batch", 1), "batch")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    return {"name": name, "op": case["op"], "params": normalize_params(case["op"], case["params"]),
            "batch": batch}


def select(regex=None):
    """Return the built-in cases (normalised) whose name matches ``regex`` (re.search)."""
    pat = re.compile(regex) if regex else None
    return [check_case(c) for c in CASES if pat is None or pat.search(c["name"])]
