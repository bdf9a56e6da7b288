"""Puts reference/ on sys.path and locates the repository's fixtures/ directory."""
import os
import sys

REFERENCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(os.path.dirname(REFERENCE), "fixtures")
if REFERENCE not in sys.path:
    sys.path.insert(0, REFERENCE)
