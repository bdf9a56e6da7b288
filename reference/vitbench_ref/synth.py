"""The deterministic, counter-based array generator of fixtures/FORMAT.md (NumPy version).

Element ``i`` (row-major flat index) of the array called ``name`` depends only on
``seed``, ``name`` and ``i``::

    mix64(z):   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
                z = (z ^ (z >> 27)) * 0x94D049BB133111EB
                return z ^ (z >> 31)
    key(name)   = FNV-1a 64 over the UTF-8 bytes of name
    stream      = mix64(seed ^ key(name))
    x_i         = mix64(stream + 0x9E3779B97F4A7C15 * (i + 1))
    u_i         = float32(x_i >> 40) * 2**-24
    v_i         = 2 * u_i - 1
    value_i     = float32(center) + float32(float32(scale) * v_i)

All integer arithmetic wraps modulo 2**64 (NumPy uint64 arithmetic on arrays wraps silently;
the few scalar operations are done on Python ints masked to 64 bits).  Float arithmetic is
float32 with one rounding per operation (no fused multiply-add).

A deliberately independent scalar implementation lives in ``reference/make_synth_vectors.py``;
``fixtures/synth_vectors.json`` holds its output and ``tests/test_synth.py`` checks this module
against it.
"""

import math

import numpy as np

MASK64 = (1 << 64) - 1
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
GOLDEN = 0x9E3779B97F4A7C15
MIX_M1 = 0xBF58476D1CE4E5B9
MIX_M2 = 0x94D049BB133111EB

# Elements generated per NumPy pass; bounds the temporaries to a few tens of MB.
_CHUNK = 1 << 20


def fnv1a64(name):
    """Return the FNV-1a 64-bit hash (Python int) of the UTF-8 bytes of ``name``."""
    h = FNV_OFFSET
    for b in name.encode("utf-8"):
        h = ((h ^ b) * FNV_PRIME) & MASK64
    return h


def _mix64_int(z):
    """SplitMix64 finaliser on a Python int, modulo 2**64."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * MIX_M1) & MASK64
    z = ((z ^ (z >> 27)) * MIX_M2) & MASK64
    return z ^ (z >> 31)


def mix64(z):
    """SplitMix64 finaliser, element-wise on a uint64 array (wrapping multiplication)."""
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX_M2)
        return z ^ (z >> np.uint64(31))


def stream_of(seed, name):
    """Return the per-array stream value mix64(seed xor key(name)) as a Python int."""
    seed = int(seed)
    if not 0 <= seed <= MASK64:
        raise ValueError("seed must be an unsigned 64-bit integer, got %r" % seed)
    return _mix64_int(seed ^ fnv1a64(name))


def raw_bits(seed, name, indices):
    """Return x_i = mix64(stream + GOLDEN*(i+1)) as uint64 for the given flat indices."""
    idx = np.asarray(indices, dtype=np.uint64)
    stream = np.uint64(stream_of(seed, name))
    with np.errstate(over="ignore"):
        return mix64(stream + np.uint64(GOLDEN) * (idx + np.uint64(1)))


def synth_at(seed, name, indices, center=0.0, scale=1.0):
    """Return value_i (float32 array, same shape as ``indices``) for arbitrary flat indices.

    Lets a caller generate any slice of an array (e.g. element 10**9+7) without generating
    the elements before it.
    """
    x = raw_bits(seed, name, indices)
    u = (x >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)  # exact
    v = np.float32(2.0) * u - np.float32(1.0)  # exact
    c = np.float32(center)  # one rounding from the JSON double
    s = np.float32(scale)
    prod = (s * v).astype(np.float32)  # float32 product, rounded once
    return (c + prod).astype(np.float32)  # float32 sum, rounded once


def synth(seed, name, shape, center=0.0, scale=1.0):
    """Return the synthesized float32 array ``name`` of ``shape`` (C order), per FORMAT.md."""
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    out = np.empty(n, dtype=np.float32)
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        out[start:stop] = synth_at(seed, name, np.arange(start, stop, dtype=np.uint64), center, scale)
    return out.reshape(shape)


# Inputs whose default (center, scale) is not (0, 1), by input name.
INPUT_ROLES = {"sampling_locations": (0.5, 0.6), "attention_weights": (0.5, 0.5), "reference_points": (0.5, 0.5),
               "offset": (0.0, 2.0), "mask": (0.5, 0.5), "padding_mask": (0.0, 0.0),
               "image_mask": (0.0, 0.0)}
# VOLO's outlook attention logits Linear (``attn.weight`` of an outlook_attention case,
# ``...attn.attn.weight`` inside an Outlooker): its scale is this many times 1/sqrt(fan_in).
OUTLOOK_LOGITS_GAIN = 16.0


def default_role(name, shape, is_input):
    """Return the exporter's default ``(center, scale)`` for an array, by the FORMAT.md role table.

    Inputs, by name (deformable sampling inputs have a role of their own):

    - ``sampling_locations`` (normalized [0, 1] positions): (0.5, 0.6), i.e. [-0.1, 1.1], some
      samples outside the map
    - ``attention_weights``, ``reference_points``, ``mask`` (DCNv2 modulation): (0.5, 0.5)
    - ``offset`` (deform_conv2d pixel offsets): (0, 2)
    - ``padding_mask``, ``image_mask`` (deformable_detr's padded-batch image mask): (0, 0), all zeros
      = no padding (the (0, 1) default would pad nearly every pixel: nonzero = padded)
    - any other input (images / activations): (0, 1)

    Weights (``is_input`` false), by name:

    - name ends in ``query_embed.weight`` (Deformable DETR's nn.Embedding of the queries, whose
      init is N(0, 1); the reference points ``sigmoid(Linear(query_pos))`` then spread): (0, 1)
    - name is ``attn.weight`` or ends in ``attn.attn.weight`` (VOLO's outlook attention logits
      Linear, k^4*heads x C): (0, 16/sqrt(fan_in)).  With the plain Linear scale the scaled logits
      have a standard deviation of about 0.05, so each 9-way softmax is nearly uniform and an
      implementation that ignored the logits (or transposed target and source, or pooled v instead
      of x) would still pass the network tolerance; 16x makes them about 0.8 (0.5 on the raw
      component inputs)
    - name ends in ``weight`` with >= 2 dims (Linear / conv weight): (0, 1/sqrt(fan_in)),
      fan_in = product of all dims but the first
    - name ends in ``weight`` with 1 dim (norm scale): (1, 0.1)
    - name ends in ``bias``: (0, 0.02)
    - name ends in ``running_var`` (BatchNorm variance, must stay positive): (1, 0.1)
    - name ``w`` (a performer's random features, rows of norm about sqrt(m) when trained): (0, 1)
    - anything else (tokens, embeddings, running means): (0, 0.02)
    """
    if is_input:
        return INPUT_ROLES.get(name, (0.0, 1.0))
    if name.endswith("query_embed.weight"):
        return 0.0, 1.0
    if (name == "attn.weight" or name.endswith("attn.attn.weight")) and len(shape) == 2:
        return 0.0, OUTLOOK_LOGITS_GAIN / math.sqrt(int(shape[1]))
    if name.endswith("weight"):
        if len(shape) >= 2:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= int(d)
            return 0.0, 1.0 / math.sqrt(fan_in)
        if len(shape) == 1:
            return 1.0, 0.1
    if name.endswith("bias"):
        return 0.0, 0.02
    if name.endswith("running_var"):
        return 1.0, 0.1
    if name == "w" or name.endswith(".w"):
        return 0.0, 1.0
    return 0.0, 0.02
