"""Real weights for a case: a checkpoint's state_dict (``.pth``) or the ``.npz`` that
reference/convert_checkpoint.py writes, checked array by array against the shapes the case
derives.  Used by convert_checkpoint.py and by ``export.py --weights``."""

import numpy as np
import torch

from . import cases as C


def state_dict_of(obj):
    """The state_dict inside a loaded checkpoint object: the object itself, or the dict under
    "model", "state_dict" or "model_ema" (as timm, DeiT, T2T-ViT and VOLO release them)."""
    if isinstance(obj, dict):
        for key in ("model", "state_dict", "model_ema"):
            if key in obj and isinstance(obj[key], dict):
                return obj[key]
        return obj
    if hasattr(obj, "state_dict"):
        return obj.state_dict()
    raise ValueError("checkpoint holds a %s, not a state_dict" % type(obj).__name__)


def load(path):
    """The arrays of a weights file by state_dict name: ``.npz`` read as it is, anything else
    loaded with torch.load (on the CPU) and its state_dict taken (state_dict_of)."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    return state_dict_of(torch.load(path, map_location="cpu"))


def convert(case, sd):
    """Return (arrays, problems, ignored) for a normalised case and a state_dict (tensors or
    arrays): every weight the case needs as a little-endian float32 array, one problem line
    per missing array or shape mismatch (naming the array, its shape and the case's), and the
    arrays the case does not use (integer buffers eval mode does not read, BatchNorm's
    num_batches_tracked, are not listed)."""
    _, want, _ = C.shapes(case["op"], case["params"], 1)
    arrays, problems = {}, []
    for name, shape in sorted(want.items()):
        if name not in sd:
            problems.append("missing %s %s" % (name, shape))
            continue
        t = sd[name]
        got = list(t.shape)
        if got != shape:
            problems.append("%s has shape %s, the case needs %s" % (name, got, shape))
            continue
        a = t.detach().cpu().float().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, dtype=np.float32)
        arrays[name] = np.ascontiguousarray(a, dtype="<f4")
    ignored = sorted(k for k in sd if k not in want and not k.endswith("num_batches_tracked"))
    return arrays, problems, ignored
