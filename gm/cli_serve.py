"""`gm serve`: the story API, the play page and the world editor over HTTP, served by uvicorn."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from gm.cli_edit import editor_login, print_login
from gm.cli_story import (
    REHEARSAL,
    add_judge_argument,
    add_prompts_argument,
    add_tools_argument,
    choose_judge,
    model_settings,
)
from gm.errors import UsageError
from gm.game import Game
from gm.hosts import LOOPBACK_HOSTS, allowed_hosts, is_loopback
from gm.instructions import use_prompts
from gm.lease import check_settings
from gm.model import ModelClient
from gm.round import RoundSettings
from gm.store import Store


def add_serve_subcommand(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add `gm serve` to the command line."""
    serve = subcommands.add_parser("serve", help="serve the story API, the play page and the editor over HTTP")
    serve.add_argument("--worlds", type=Path, default=Path("worlds"), help="the worlds folder (default worlds/)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    serve.add_argument(
        "--editor",
        action="store_true",
        help="also mount the world editor at /editor when --host serves other machines (it then asks for a login)",
    )
    serve.add_argument("--model", help=f"the model's name (default GM_MODEL), or '{REHEARSAL}'")
    serve.add_argument("--base-url", help="an OpenAI-compatible endpoint (default OPENAI_BASE_URL)")
    serve.add_argument("--api-key", help="the endpoint's key (default OPENAI_API_KEY)")
    add_tools_argument(serve)
    add_judge_argument(serve)
    add_prompts_argument(serve)
    serve.set_defaults(run=run_serve)


def run_serve(arguments: argparse.Namespace) -> int:
    """Run the web app with uvicorn; several such processes may share one PostgreSQL database."""
    # Imported here: the web stack is heavy, and no other command needs it.
    import uvicorn

    from gm.web.app import create_app

    use_prompts(arguments.prompts)  # every prompt file is checked before anything else
    if arguments.model == REHEARSAL:
        raise UsageError("rehearsal plays one world at a time; use it with gm play WORLD --model rehearsal")
    model = ModelClient(model_settings(arguments))
    hosts = editor_hosts(arguments.host, editor=arguments.editor)
    mounted = hosts is not None and arguments.worlds.is_dir()
    login, generated = editor_login(arguments.host, UsageError) if mounted else (None, None)
    if hosts is None:
        print(f"The world editor is not mounted: {arguments.host} serves other machines (add --editor to mount it).")
    judging: Literal["on", "off"] = "off" if arguments.judge == "off" else "on"
    game = Game(
        model,
        Store(),
        settings=round_settings(os.environ),
        judge_model=choose_judge(arguments, model),
        judging=judging,
    )
    print_login(login is not None, generated)
    app = create_app(
        game,
        arguments.worlds,
        api_token=os.environ.get("GM_API_TOKEN") or None,
        editor=mounted,
        editor_hosts=hosts or LOOPBACK_HOSTS,
        editor_login=login,
        api_hosts=allowed_hosts(arguments.host),
    )
    uvicorn.run(app, host=arguments.host, port=arguments.port, log_level="warning")
    return 0


def round_settings(environ: Mapping[str, str]) -> RoundSettings:
    """The round settings, with the lease's times from GM_LEASE_SECONDS and GM_HEARTBEAT_SECONDS (see gm.lease)."""
    default = RoundSettings()
    settings = replace(
        default,
        lease_seconds=_seconds(environ, "GM_LEASE_SECONDS", default.lease_seconds),
        heartbeat_seconds=_seconds(environ, "GM_HEARTBEAT_SECONDS", default.heartbeat_seconds),
    )
    try:
        check_settings(settings)
    except ValueError as error:
        raise UsageError(f"GM_LEASE_SECONDS and GM_HEARTBEAT_SECONDS: {error}") from None
    return settings


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{name} must be a number of seconds, not {text!r}") from None


def editor_hosts(host: str, *, editor: bool) -> tuple[str, ...] | None:
    """The Host names the editor answers to when serving on `host`, or None when it is not mounted.

    On a loopback address the editor is mounted for this machine alone; elsewhere only with --editor,
    and then behind a login (see `gm.cli_edit.editor_login`).
    """
    if not is_loopback(host) and not editor:
        return None
    return allowed_hosts(host)
