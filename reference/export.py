#!/usr/bin/python3
"""Entry point: /usr/bin/python3 reference/export.py --out DIR [--only REGEX] [--seed N] [--case-json FILE].
See vitbench_ref/export.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from vitbench_ref.export import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
