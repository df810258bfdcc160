"""gm's tests, in folders that mirror the package tree; shared helpers live in tests/support/.

The suite caches compiled bytecode (in `__pycache__`, which git ignores) even where the environment sets
PYTHONDONTWRITEBYTECODE: without it each xdist worker, and each `gm` process a test starts, compiles gm's
modules from source again (collection alone took 11 s a worker instead of 5). This package is imported before
any conftest, so the setting reaches every module of gm the tests import, and the processes they start.
"""

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
