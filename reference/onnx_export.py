#!/usr/bin/python3
"""Entry point: /usr/bin/python3 reference/onnx_export.py --out DIR [--run REGEX] [--batch N] [--seed N] [--outputs].
See vitbench_ref/onnx_export.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vitbench_ref.onnx_export import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
