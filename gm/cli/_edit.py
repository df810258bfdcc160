"""`gm edit [WORLDS_DIR]`: the world editor in a browser, served by uvicorn; a thin layer over `gm.editor`."""

from __future__ import annotations

import argparse
import errno
import socket
from pathlib import Path
from typing import Any

from gm._hosts import allowed_hosts
from gm.cli._settings import settings_of
from gm.config import Settings
from gm.errors import SettingsError, UsageError


def add_edit_subcommand(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add `gm edit` to the command line."""
    edit = subcommands.add_parser(
        "edit",
        help="edit the worlds in a folder in your browser (world.json and dice.json as forms)",
        description="gm edit [WORLDS_DIR] serves the world editor; open the address it prints.",
    )
    edit.add_argument(
        "worlds", nargs="?", type=Path, default=Path("worlds"), help="the folder of worlds (default worlds/)"
    )
    edit.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; any other asks for a login)",
    )
    edit.add_argument("--port", type=int, default=8765, help="the port to listen on (default 8765)")
    edit.set_defaults(run=run_edit)


def run_edit(arguments: argparse.Namespace) -> int:
    worlds: Path = arguments.worlds
    if not worlds.is_dir():
        raise UsageError(f"there is no folder '{worlds}' to edit worlds in")
    check_port(arguments.host, arguments.port)
    import uvicorn  # imported here: the other commands need neither it nor FastAPI

    from gm.editor import create_app

    login, generated = editor_login(arguments.host, settings_of(arguments), UsageError)
    # On this machine only loopback Host names are answered (refusing DNS rebinding); off it, any.
    app = create_app(worlds, allowed_hosts=allowed_hosts(arguments.host), login=login)
    shown = f"[{arguments.host}]" if ":" in arguments.host else arguments.host
    print(f"World editor for {worlds.resolve()}: http://{shown}:{arguments.port}/  (Ctrl+C stops it)", flush=True)
    print_login(login is not None, generated)
    uvicorn.run(app, host=arguments.host, port=arguments.port, log_level="warning")
    return 0


def editor_login(host: str, settings: Settings, error: type[UsageError]) -> tuple[Any, str | None]:
    """The editor's login for listening on `host` (from GM_EDITOR_TOKEN, or generated beyond loopback) and
    the token to print if it was generated; a bad GM_EDITOR_TOKEN is one `error` sentence.

    Shared with `gm serve --editor`, so both ask for the same login in the same cases.
    """
    from gm.editor.sessions import login_for_host

    try:
        login, generated = login_for_host(host, settings.editor_token)
    except SettingsError as problem:
        raise error(f"GM_EDITOR_TOKEN: {problem} (or unset it to have one generated)") from None
    return login, generated


def print_login(required: bool, generated: str | None) -> None:
    """Say how to log in to the editor: a generated token is printed here, once; GM_EDITOR_TOKEN never is."""
    if generated is not None:
        print("Other machines can reach the editor, so it asks for this token (set GM_EDITOR_TOKEN to choose one):")
        print(f"    {generated}", flush=True)
    elif required:
        print("The editor asks for the token in GM_EDITOR_TOKEN.", flush=True)


def check_port(host: str, port: int) -> None:
    """Refuse a port that cannot be listened on now, with one sentence (uvicorn would log and exit).

    Shared with `gm serve`. Another program could still take the port between this probe and uvicorn's
    bind; that rare race ends in uvicorn's own message.
    """
    if not 0 <= port < 65536:
        raise UsageError(f"--port {port} is not a port; expected 1 to 65535 (or 0 for any free one)")
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except socket.gaierror:
        raise UsageError(f"--host {host} is not an address this machine has") from None
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise UsageError(f"cannot listen on {host}:{port}: it is in use; choose another with --port") from None
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
