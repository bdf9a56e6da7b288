#!/usr/bin/python3
"""Write fixtures/synth_vectors.json: cross-language test vectors for the FORMAT.md generator.

The vectors are computed by a deliberately separate, plain scalar implementation (Python ints
masked to 64 bits; float32 rounding through ``struct.pack('<f', ...)``), written independently of
``vitbench_ref/synth.py``.  Before writing, every vector is also recomputed with the NumPy
generator and the script aborts if a single bit differs.

Float32 rounding note: each float32 operation is evaluated exactly or in double precision and then
rounded to float32 by ``struct.pack``.  The product float32(scale)*v of two 24-bit significands is
exact in double; for the sum, double precision (53 bits >= 2*24+2) then rounding to float32 is
known to equal a single correctly rounded float32 addition, so no double-rounding error occurs.

Usage:  /usr/bin/python3 reference/make_synth_vectors.py [-o fixtures/synth_vectors.json]
"""

import argparse
import hashlib
import json
import math
import os
import struct
import sys

M64 = 0xFFFFFFFFFFFFFFFF


def s_fnv1a(name):
    """FNV-1a 64 over the UTF-8 bytes of name (scalar)."""
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & M64
    return h


def s_mix64(z):
    """SplitMix64 finaliser (scalar, Python ints masked to 64 bits)."""
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return (z ^ (z >> 31)) & M64


def f32(x):
    """Round a Python float to the nearest float32 (ties to even) and return it as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x):
    """Return the IEEE-754 binary32 bit pattern of float32(x) as '0x%08x'."""
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def s_value(seed, name, i, center, scale):
    """value_i of the generator for one flat index i (scalar formula)."""
    stream = s_mix64((seed ^ s_fnv1a(name)) & M64)
    x = s_mix64((stream + ((0x9E3779B97F4A7C15 * (i + 1)) & M64)) & M64)
    u = f32(float(x >> 40) * 2.0 ** -24)
    v = f32(2.0 * u - 1.0)
    prod = f32(f32(scale) * v)
    return f32(f32(center) + prod), x


# (seed, name, shape, center, scale, extra indices)
CASES = [
    (1, "x", [1, 3, 4, 4], 0.0, 1.0, [0, 47]),
    (0, "x", [16], 0.0, 1.0, [1000, 1000000007]),
    (1, "proj.weight", [768, 3, 16, 16], 0.0, 1.0 / math.sqrt(768), [589823, 1000000007]),
    (1, "proj.bias", [768], 0.0, 0.02, [767]),
    (1, "norm1.weight", [384], 1.0, 0.1, [383]),
    (7, "proj.weight", [64, 147], 0.0, 1.0 / math.sqrt(147), [9407, 10 ** 9 + 7]),
    (18446744073709551615, "x", [2, 8], 0.0, 1.0, [10 ** 9 + 7, 2 ** 40]),
    (18446744073709551615, "", [16], 0.0, 1.0, [12345]),
    (42, "", [3, 5], -2.5, 3.0, []),
    (123456789, "blocks.0.attn.qkv.weight", [1152, 384], 0.0, 1.0 / math.sqrt(384), [442367]),
    (1, "température", [4, 4], 0.0, 1.0, [10 ** 9 + 7]),
    (1, "权重.weight", [2, 3, 3], 0.0, 1.0 / math.sqrt(9), [17]),
    (2, "emoji_\U0001F600.bias", [20], 0.0, 0.02, [19]),
    (3, "cls_token", [1, 1, 192], 0.0, 0.02, [191]),
    (9, "offset", [16], 1000.0, 0.001, [10 ** 9 + 7]),
    (9, "neg", [16], 0.5, -0.3, []),
    (5, "zero_scale", [8], 0.25, 0.0, []),
    (2 ** 63, "x", [16], 0.0, 1.0, [2 ** 32 + 1]),
]


def build():
    """Compute all vectors with the scalar implementation; return the JSON document (dict)."""
    fnv = [{"name": n, "fnv1a64": "0x%016x" % s_fnv1a(n)}
           for n in ["", "a", "x", "proj.weight", "température", "权重.weight", "emoji_\U0001F600.bias"]]
    mix = [{"in": "0x%016x" % z, "out": "0x%016x" % s_mix64(z)}
           for z in [0, 1, 0x9E3779B97F4A7C15, 0xCBF29CE484222325, M64, 2 ** 63, 123456789]]
    vectors = []
    for seed, name, shape, center, scale, extra in CASES:
        n = 1
        for d in shape:
            n *= d
        stream = s_mix64(seed ^ s_fnv1a(name))
        values = []
        raws = []
        for i in range(n):
            val, x = s_value(seed, name, i, center, scale)
            values.append(val)
            raws.append(x)
        blob = b"".join(struct.pack("<f", v) for v in values)
        idx = sorted(set([0, n - 1] + [i for i in extra]))
        vectors.append({
            "seed": seed,
            "name": name,
            "shape": shape,
            "center": center,
            "scale": scale,
            "key": "0x%016x" % s_fnv1a(name),
            "stream": "0x%016x" % stream,
            "first_raw": ["0x%016x" % x for x in raws[:4]],
            "first": [f32_bits(v) for v in values[:16]],
            "at": [[i, f32_bits(s_value(seed, name, i, center, scale)[0])] for i in idx],
            "sha256_f32le": hashlib.sha256(blob).hexdigest(),
        })
    return {
        "description": (
            "Test vectors for the deterministic generator of fixtures/FORMAT.md, computed by the "
            "scalar implementation in reference/make_synth_vectors.py. "
            "fnv1a64: key(name) over UTF-8 bytes. mix64: SplitMix64 finaliser in/out. "
            "vectors[]: seed (uint64 as a JSON integer, may exceed 2^53), name (UTF-8), shape, "
            "center/scale (JSON doubles, rounded to float32 once), key = key(name), "
            "stream = mix64(seed xor key), first_raw = x_0..x_3 (uint64 hex), "
            "first = value_0..value_15 (or all, if fewer) as float32 bit patterns, "
            "at = [flat index, float32 bits] pairs (indices may lie beyond the shape: the formula "
            "is defined for every index), sha256_f32le = SHA-256 of the whole array as "
            "little-endian float32 in row-major order."),
        "format_version": 1,
        "fnv1a64": fnv,
        "mix64": mix,
        "vectors": vectors,
    }


def check_numpy(doc):
    """Recompute every vector with vitbench_ref.synth (NumPy) and raise on any bit difference."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import numpy as np
    from vitbench_ref import synth as S

    for e in doc["fnv1a64"]:
        assert "0x%016x" % S.fnv1a64(e["name"]) == e["fnv1a64"], e
    for e in doc["mix64"]:
        got = int(S.mix64(np.array([int(e["in"], 16)], dtype=np.uint64))[0])
        assert "0x%016x" % got == e["out"], e
    for v in doc["vectors"]:
        arr = S.synth(v["seed"], v["name"], v["shape"], v["center"], v["scale"])
        bits = arr.reshape(-1).view("<u4")
        assert ["0x%08x" % b for b in bits[:16]] == v["first"], v["name"]
        assert hashlib.sha256(arr.astype("<f4").tobytes()).hexdigest() == v["sha256_f32le"], v["name"]
        idx = np.array([i for i, _ in v["at"]], dtype=np.uint64)
        got = S.synth_at(v["seed"], v["name"], idx, v["center"], v["scale"]).view("<u4")
        assert ["0x%08x" % b for b in got] == [b for _, b in v["at"]], v["name"]
        raw = S.raw_bits(v["seed"], v["name"], np.arange(4, dtype=np.uint64))
        assert ["0x%016x" % int(x) for x in raw[: len(v["first_raw"])]] == v["first_raw"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("-o", "--out", default=os.path.normpath(os.path.join(here, "..", "fixtures", "synth_vectors.json")))
    args = ap.parse_args()
    doc = build()
    check_numpy(doc)
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print("wrote %s (%d vectors; NumPy generator agrees)" % (args.out, len(doc["vectors"])), file=sys.stderr)


if __name__ == "__main__":
    main()
