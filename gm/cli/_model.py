"""The model a command plays with (the game master's endpoint from flags and settings, and the judge's), and
`gm model check`: probe the configured model endpoint and say whether gm can play on it (see gm.models.check).

Apart from the terminal chat's command module (gm.cli._story), so that `gm serve` does not import the chat's
line editor (prompt_toolkit) with it."""

from __future__ import annotations

import argparse
import asyncio
import sys

from gm._text import visible
from gm.cli._settings import settings_of
from gm.engine.judge import judge_settings
from gm.errors import UsageError
from gm.models.check import check_model, render
from gm.models.client import ChatModel, ModelClient, ModelSettings


def run_model_check(arguments: argparse.Namespace) -> int:
    if arguments.timeout <= 0:
        raise UsageError(f"--timeout must be more than 0 seconds, not {arguments.timeout:g}")
    report = asyncio.run(check_model(model_settings(arguments), arguments.timeout))
    print(visible(render(report)), flush=True)  # it quotes what the server said
    if report.problem:
        print(f"error: {report.problem}", file=sys.stderr)
        return 1
    return 0


def model_settings(arguments: argparse.Namespace) -> ModelSettings:
    """The endpoint's settings from the flags, the environment filling in what they leave out."""
    return ModelSettings.from_settings(
        settings_of(arguments),
        base_url=arguments.base_url,
        api_key=arguments.api_key,
        model=arguments.model,
        tools=arguments.tools,
    )


def choose_judge(arguments: argparse.Namespace, master: ChatModel) -> ChatModel | None:
    """The judge's own model where one is configured (--judge MODEL, GM_JUDGE_*); None to use the game master's."""
    endpoint = getattr(master, "settings", None)
    if not isinstance(endpoint, ModelSettings):
        return None  # the rehearsal plays its own judge
    named = None if arguments.judge in (None, "off") else arguments.judge
    settings = judge_settings(endpoint, settings_of(arguments), named)
    return None if settings == endpoint else ModelClient(settings)
