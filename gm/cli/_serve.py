"""`gm serve`: the story API, the play page and the world editor over HTTP, served by uvicorn."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from gm._hosts import LOOPBACK_HOSTS, allowed_hosts, is_loopback
from gm._text import visible
from gm.cli._edit import check_port, editor_login, print_login
from gm.cli._settings import settings_of
from gm.cli._story import (
    REHEARSAL,
    add_judge_argument,
    add_prompts_argument,
    add_tools_argument,
    choose_judge,
    model_settings,
)
from gm.config import Settings
from gm.engine.game import Game
from gm.engine.instructions import use_prompts
from gm.engine.lease import check_settings
from gm.engine.settings import RoundSettings
from gm.errors import SettingsError, UsageError
from gm.models.client import ChatModel, ModelClient
from gm.rehearsal.model import RehearsalModel
from gm.store import Store, default_database_url
from gm.web.process import tune_server_process
from gm.world.definition import WORLD_FILE


def add_serve_subcommand(subcommands: argparse._SubParsersAction[Any]) -> None:
    """Add `gm serve` to the command line."""
    serve = subcommands.add_parser("serve", help="serve the story API, the play page and the editor over HTTP")
    serve.add_argument("--worlds", type=Path, default=Path("worlds"), help="the worlds folder (default worlds/)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes on the one port, one per core (default 1; more than 1 needs PostgreSQL)",
    )
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


MAX_WORKERS = 64
# How long an idle connection is kept open. uvicorn's default of 5 s closes a player's connection while
# they think about their next move (bench/serve_bench.py's players think 5 to 15 s), so most rounds
# paid for a new connection (accepting it, uvicorn's protocol objects, the close): about 2% of the
# event loop under 1,000 players. Browsers keep theirs for minutes; 75 s is nginx's default.
KEEP_ALIVE_SECONDS = 75
KEPT_ARGUMENTS = ("worlds", "host", "port", "editor", "model", "base_url", "api_key", "tools", "judge", "prompts")


def run_serve(arguments: argparse.Namespace) -> int:
    """Run the web app with uvicorn; several such processes may share one PostgreSQL database.

    With `--workers N`, uvicorn runs N worker processes on one port, each building its own Game,
    model client and database engine (`worker_app`) after it starts: nothing is shared but the database.
    uvicorn runs its event loop on uvloop and parses HTTP with httptools, both C, both dependencies
    of gm (uvloop where it is built: not on Windows, where asyncio's own loop serves).
    """
    settings = settings_of(arguments)
    check_workers(arguments.workers, default_database_url(settings))
    check_port(arguments.host, arguments.port)
    # Imported here: the web stack is heavy, and no other command needs it.
    import uvicorn

    use_prompts(arguments.prompts, settings)  # every prompt file is checked before anything else
    round_settings(settings)  # a bad GM_LEASE_SECONDS is one sentence now, not one per worker
    hosts = editor_hosts(arguments.host, editor=arguments.editor)
    mounted = hosts is not None and arguments.worlds.is_dir()
    login, generated = editor_login(arguments.host, settings, UsageError) if mounted else (None, None)
    if arguments.workers == 1:
        app = build_app(arguments, login)
    else:
        choose_serve_model(arguments)  # a model that is not configured is one sentence here, not N tracebacks
        kept = {name: str(value) if isinstance(value, Path) else value for name, value in vars(arguments).items()}
        handed = replace(settings, serve_worker_arguments=json.dumps({name: kept[name] for name in KEPT_ARGUMENTS}))
        if generated is not None:
            handed = replace(handed, editor_token=generated)  # every worker asks for the one token printed below
        handed.export("serve_worker_arguments", "editor_token")
    shown = f"[{arguments.host}]" if ":" in arguments.host else arguments.host
    print(f"Serving stories at http://{shown}:{arguments.port}/  (Ctrl+C stops it)")
    if arguments.workers > 1:
        print(f"{arguments.workers} worker processes share the port and the database.")
    print(visible(describe_worlds(arguments.worlds)))  # the folder's path is shown, never obeyed
    if arguments.model == REHEARSAL:
        print("Rehearsal: an offline stand-in plays the game master of each story's world; no model is called.")
    if hosts is None:
        print(f"The world editor is not mounted: {arguments.host} serves other machines (add --editor to mount it).")
    elif mounted:
        print(f"The world editor is at http://{shown}:{arguments.port}/editor/")
    print_login(login is not None, generated)
    sys.stdout.flush()
    if arguments.workers == 1:
        tune_server_process()  # the app is built: what lives now lives as long as the process (gm.web.process)
        uvicorn.run(
            app,
            host=arguments.host,
            port=arguments.port,
            log_level="warning",
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
    else:
        uvicorn.run(
            "gm.cli._serve:worker_app",
            factory=True,
            workers=arguments.workers,
            host=arguments.host,
            port=arguments.port,
            log_level="warning",
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
    return 0


def check_workers(workers: int, database_url: str) -> None:
    """Refuse a number of workers that cannot be served, in one sentence."""
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers {workers} is not a number of processes; expected 1 to {MAX_WORKERS}")
    if workers > 1 and not database_url.startswith("postgresql"):
        raise UsageError(
            f"--workers {workers} needs a PostgreSQL database (GM_DATABASE_URL): SQLite has one writer, "
            "so serve it with one process"
        )


def build_app(arguments: argparse.Namespace, login: Any) -> Any:
    """The web app for one process: its own Game, model client and database engine."""
    from gm.web.app import create_app

    model = choose_serve_model(arguments)
    hosts = editor_hosts(arguments.host, editor=arguments.editor)
    judging: Literal["on", "off"] = "off" if arguments.judge == "off" else "on"
    settings = settings_of(arguments)
    game = Game(
        model,
        Store(default_database_url(settings)),
        settings=round_settings(settings),
        judge_model=choose_judge(arguments, model),
        judging=judging,
        memory_batch=settings.memory_batch,
    )
    return create_app(
        game,
        arguments.worlds,
        api_token=settings.api_token,
        editor=hosts is not None and arguments.worlds.is_dir(),
        editor_hosts=hosts or LOOPBACK_HOSTS,
        editor_login=login,
        api_hosts=allowed_hosts(arguments.host),
    )


def worker_app() -> Any:
    """The app of one `gm serve --workers N` worker, from the options its parent checked (uvicorn's factory)."""
    settings = Settings.from_env()  # what the parent checked and handed down (`Settings.export`)
    arguments = argparse.Namespace(**json.loads(settings.serve_worker_arguments or "{}"), settings=settings)
    arguments.worlds = Path(arguments.worlds)
    use_prompts(arguments.prompts, settings)
    mounted = editor_hosts(arguments.host, editor=arguments.editor) is not None and arguments.worlds.is_dir()
    login, _ = editor_login(arguments.host, settings, UsageError) if mounted else (None, None)
    app = build_app(arguments, login)
    tune_server_process()  # each worker is a process of its own (gm.web.process)
    return app


def choose_serve_model(arguments: argparse.Namespace) -> ChatModel:
    """The rehearsal stand-in when asked for by name (it plays each story's own world); else the endpoint."""
    if arguments.model == REHEARSAL:
        return RehearsalModel()
    return ModelClient(model_settings(arguments))


def describe_worlds(folder: Path) -> str:
    """One line saying which worlds folder is served and what it holds, or that it holds no world."""
    from gm.web.service import WORLD_NAME  # the names the server offers; others are not served

    where = folder.resolve()
    if not folder.is_dir():
        return f"Worlds: there is no folder {where}, so no story can be started (choose one with --worlds DIR)."
    names = sorted(
        entry.name for entry in folder.iterdir() if WORLD_NAME.match(entry.name) and (entry / WORLD_FILE).is_file()
    )
    if not names:
        return f"Worlds: {where} holds no world (a folder with {WORLD_FILE}), so no story can be started."
    return f"Worlds from {where}: {', '.join(names)}"


def round_settings(settings: Settings) -> RoundSettings:
    """The round settings, with the lease's times from GM_LEASE_SECONDS and GM_HEARTBEAT_SECONDS (see
    gm.engine.lease)."""
    rounds = replace(
        RoundSettings(), lease_seconds=settings.lease_seconds, heartbeat_seconds=settings.heartbeat_seconds
    )
    try:
        check_settings(rounds)
    except SettingsError as error:
        raise SettingsError(f"GM_LEASE_SECONDS and GM_HEARTBEAT_SECONDS: {error}") from None
    return rounds


def editor_hosts(host: str, *, editor: bool) -> tuple[str, ...] | None:
    """The Host names the editor answers to when serving on `host`, or None when it is not mounted.

    On a loopback address the editor is mounted for this machine alone; elsewhere only with --editor,
    and then behind a login (see `gm.cli._edit.editor_login`).
    """
    if not is_loopback(host) and not editor:
        return None
    return allowed_hosts(host)
