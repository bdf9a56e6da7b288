#!/usr/bin/python3
"""Convert a PyTorch checkpoint (.pth) into the .npz that ``vitbench bench -weights`` reads.

    /usr/bin/python3 reference/convert_checkpoint.py --case vit_s16 CHECKPOINT.pth OUT.npz
    /usr/bin/python3 reference/convert_checkpoint.py --case-json my_case.json CHECKPOINT.pth OUT.npz

The checkpoint may be a state_dict or a dict holding one under "model" or "state_dict" (as timm,
DeiT, T2T-ViT and VOLO release them). Every array the case needs is looked up by its state_dict
name, checked against the shape the case derives, converted to float32 and written; integer
buffers eval mode does not read (BatchNorm's num_batches_tracked) are dropped. Missing arrays and
shape mismatches are all listed and nothing is written (exit 2); arrays the case does not use
are listed as ignored (an error with --strict).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from vitbench_ref import cases as C  # noqa: E402
from vitbench_ref.checkpoint import convert, state_dict_of  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(prog="convert_checkpoint.py", description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--case", help="a built-in case name (vitbench list)")
    g.add_argument("--case-json", help="a case description {name, op, params, batch}")
    ap.add_argument("--strict", action="store_true", help="fail when the checkpoint holds arrays the case does not use")
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    args = ap.parse_args(argv)
    try:
        if args.case:
            found = [c for c in C.select() if c["name"] == args.case]
            if not found:
                raise ValueError("no built-in case %r" % args.case)
            case = found[0]
        else:
            with open(args.case_json, encoding="utf-8") as f:
                case = C.check_case(json.load(f))
        sd = state_dict_of(torch.load(args.checkpoint, map_location="cpu"))
    except (ValueError, OSError, json.JSONDecodeError, RuntimeError) as e:
        print("convert_checkpoint: %s" % e, file=sys.stderr)
        return 2
    arrays, problems, ignored = convert(case, sd)
    if ignored:
        print("convert_checkpoint: %d arrays not used by %s: %s" % (len(ignored), case["name"], ", ".join(ignored)),
              file=sys.stderr)
        if args.strict:
            problems.append("%d unused arrays (--strict)" % len(ignored))
    if problems:
        print("convert_checkpoint: %s does not fit %s:\n  %s" % (args.checkpoint, case["name"], "\n  ".join(problems)),
              file=sys.stderr)
        return 2
    tmp = args.out + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, args.out)
    print("wrote %s: %d arrays for %s" % (args.out, len(arrays), case["name"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
