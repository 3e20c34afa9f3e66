"""Paths the tests share."""

import os
import sys

PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON)
TESTDATA = os.path.join(PYTHON, "gradtune", "testdata")
CONFIGS = os.path.join(REPO, "configs", "h200")

if PYTHON not in sys.path:
    sys.path.insert(0, PYTHON)
