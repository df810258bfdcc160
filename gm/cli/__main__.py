"""`python -m gm.cli`: the command line, as the `gm` script runs it."""

import sys

from gm.cli import main

sys.exit(main())
