"""The interpreter's settings as the test process started, which every test gets back (tests/conftest.py)."""

from __future__ import annotations

import gc
import sys

DEFAULT_COLLECTOR = gc.get_threshold()  # CPython's defaults: imported by conftest.py before any test runs
DEFAULT_SWITCH = sys.getswitchinterval()
