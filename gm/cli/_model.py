"""`gm model check`: probe the configured model endpoint and say whether gm can play on it (see gm.models.check)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from gm._text import visible
from gm.cli._story import add_tools_argument, model_settings
from gm.errors import UsageError
from gm.models.check import check_model, render


def add_model_subcommands(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add `gm model check` to the command line."""
    model = subcommands.add_parser("model", help="the model endpoint: gm model check")
    actions = model.add_subparsers(dest="action", required=True, parser_class=type(model))
    check = actions.add_parser(
        "check",
        help="probe the endpoint: reachable, models, tool calls, structured output, reasoning, gm's settings",
        description="Exit 0 if gm can play on the endpoint; otherwise 1, with one error line saying what to change.",
    )
    check.add_argument("--model", help="the model's name (default GM_MODEL)")
    check.add_argument("--base-url", help="an OpenAI-compatible endpoint (default OPENAI_BASE_URL)")
    check.add_argument("--api-key", help="the endpoint's key (default OPENAI_API_KEY)")
    add_tools_argument(check)
    check.add_argument("--timeout", type=float, default=60.0, help="seconds allowed each probe (default 60)")
    check.set_defaults(run=run_model_check)


def run_model_check(arguments: argparse.Namespace) -> int:
    if arguments.timeout <= 0:
        raise UsageError(f"--timeout must be more than 0 seconds, not {arguments.timeout:g}")
    report = asyncio.run(check_model(model_settings(arguments), arguments.timeout))
    print(visible(render(report)), flush=True)  # it quotes what the server said
    if report.problem:
        print(f"error: {report.problem}", file=sys.stderr)
        return 1
    return 0
