"""`gm model check`: probe the configured model endpoint and say whether gm can play on it (see gm.models.check)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from gm._text import visible
from gm.cli._story import model_settings
from gm.errors import UsageError
from gm.models.check import check_model, render


def run_model_check(arguments: argparse.Namespace) -> int:
    if arguments.timeout <= 0:
        raise UsageError(f"--timeout must be more than 0 seconds, not {arguments.timeout:g}")
    report = asyncio.run(check_model(model_settings(arguments), arguments.timeout))
    print(visible(render(report)), flush=True)  # it quotes what the server said
    if report.problem:
        print(f"error: {report.problem}", file=sys.stderr)
        return 1
    return 0
