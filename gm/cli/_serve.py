"""`gm serve`: the story API, the play page and the world editor over HTTP, served by uvicorn."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from gm._hosts import LOOPBACK_HOSTS, allowed_hosts, is_loopback
from gm._text import visible
from gm.cli._edit import check_port, editor_login, print_login
from gm.cli._model import choose_judge, model_settings
from gm.cli._parser import REHEARSAL
from gm.cli._settings import settings_of
from gm.config import LogFormat, Settings, count_metrics_in
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

MAX_WORKERS = 64
# How long an idle connection is kept open. uvicorn's default of 5 s closes a player's connection while
# they think about their next move (bench/serve_bench.py's players think 5 to 15 s), so most rounds
# paid for a new connection (accepting it, uvicorn's protocol objects, the close): about 2% of the
# event loop under 1,000 players. Browsers keep theirs for minutes; 75 s is nginx's default.
KEEP_ALIVE_SECONDS = 75
KEPT_ARGUMENTS = (
    "worlds",
    "host",
    "port",
    "editor",
    "model",
    "rehearsal_delay",
    "base_url",
    "api_key",
    "tools",
    "judge",
    "prompts",
    "log_format",
)
GRACEFUL_SECONDS = 5  # after the drain (gm.web._health), how long uvicorn waits for other requests to end


def run_serve(arguments: argparse.Namespace) -> int:
    """Run the web app with uvicorn; several such processes may share one PostgreSQL database.

    With `--workers N`, uvicorn runs N worker processes on one port, each building its own Game,
    model client and database engine (`worker_app`) after it starts: nothing is shared but the database.
    uvicorn runs its event loop on uvloop and parses HTTP with httptools, both C, both dependencies
    of gm (uvloop where it is built: not on Windows, where asyncio's own loop serves).
    """
    settings = settings_of(arguments)
    check_workers(arguments.workers, default_database_url(settings))
    if settings.drain_seconds < 0:
        raise SettingsError(f"GM_DRAIN_SECONDS must be 0 or more seconds, not {settings.drain_seconds:g}")
    check_port(arguments.host, arguments.port)
    # Imported here: the web stack is heavy, and no other command needs it.
    import uvicorn

    use_prompts(arguments.prompts, settings)  # every prompt file is checked before anything else
    round_settings(settings)  # a bad GM_LEASE_SECONDS is one sentence now, not one per worker
    hosts = editor_hosts(arguments.host, editor=arguments.editor)
    mounted = hosts is not None and arguments.worlds.is_dir()
    login, generated = editor_login(arguments.host, settings, UsageError) if mounted else (None, None)
    log_format = configure_logging(log_format_of(arguments, settings), settings)
    metrics_dir: str | None = None
    if arguments.workers == 1:
        app = build_app(arguments, login)
    else:
        choose_serve_model(arguments)  # a model that is not configured is one sentence here, not N tracebacks
        kept = {name: str(value) if isinstance(value, Path) else value for name, value in vars(arguments).items()}
        handed = replace(settings, serve_worker_arguments=json.dumps({name: kept[name] for name in KEPT_ARGUMENTS}))
        if generated is not None:
            handed = replace(handed, editor_token=generated)  # every worker asks for the one token printed below
        # The workers count into one folder, which the scrape reads (gm.web._metrics).
        if handed.metrics_token and handed.metrics_dir is None:
            metrics_dir = tempfile.mkdtemp(prefix="gm-metrics-")
            handed = replace(handed, metrics_dir=Path(metrics_dir))
        handed.export("serve_worker_arguments", "editor_token", "metrics_dir")
        if handed.metrics_dir is not None:
            count_metrics_in(handed.metrics_dir)  # for the workers it starts: they import prometheus-client
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
    # Plain text: uvicorn's own log set-up, as before; JSON: its lines go to gm's handler (gm.web._logs).
    logs: dict[str, Any] = {"log_config": None} if log_format == "json" else {}
    served: dict[str, Any] = {
        "host": arguments.host,
        "port": arguments.port,
        "log_level": "warning",
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "timeout_graceful_shutdown": GRACEFUL_SECONDS,
        **logs,
    }
    try:
        if arguments.workers == 1:
            tune_server_process()  # the app is built: what lives now lives as long as the process (gm.web.process)
            uvicorn.run(app, **served)
        else:
            uvicorn.run("gm.cli._serve:worker_app", factory=True, workers=arguments.workers, **served)
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def log_format_of(arguments: argparse.Namespace, settings: Settings) -> LogFormat:
    """`--log-format`, else GM_LOG_FORMAT."""
    chosen = getattr(arguments, "log_format", None)
    return "json" if chosen == "json" else "text" if chosen == "text" else settings.log_format


def configure_logging(log_format: LogFormat, settings: Settings) -> LogFormat:
    from gm.web._logs import configure_logging as configure

    configure(log_format, settings)
    return log_format


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
    from gm.web._health import Operations
    from gm.web.app import create_app

    model = choose_serve_model(arguments)
    hosts = editor_hosts(arguments.host, editor=arguments.editor)
    judging: Literal["on", "off"] = "off" if arguments.judge == "off" else "on"
    settings = settings_of(arguments)
    metrics = serve_metrics(settings)
    game = Game(
        model,
        Store(default_database_url(settings)),
        settings=round_settings(settings),
        judge_model=choose_judge(arguments, model),
        judging=judging,
        memory_batch=settings.memory_batch,
    )
    app = create_app(
        game,
        arguments.worlds,
        api_token=settings.api_token,
        editor=hosts is not None and arguments.worlds.is_dir(),
        editor_hosts=hosts or LOOPBACK_HOSTS,
        editor_login=login,
        api_hosts=allowed_hosts(arguments.host),
    )
    if metrics is not None:
        metrics.time_database(game.store)
    # Health, readiness, /metrics and the drain on SIGTERM, ahead of the app's routes (gm.web._health).
    return Operations(
        app, game, drain_seconds=settings.drain_seconds, metrics=metrics, metrics_token=settings.metrics_token
    )


def serve_metrics(settings: Settings) -> Any:
    """The process's Prometheus metrics, installed as the engine's observer (gm.web._metrics); None when no
    GM_METRICS_TOKEN asks for them."""
    if not settings.metrics_token:
        return None
    from gm.engine.observe import observe

    if settings.metrics_dir is not None:
        count_metrics_in(settings.metrics_dir)  # before prometheus-client is imported (gm.web._metrics)
    from gm.web._metrics import Metrics

    metrics = Metrics(settings.metrics_dir)
    observe(metrics)
    return metrics


def worker_app() -> Any:
    """The app of one `gm serve --workers N` worker, from the options its parent checked (uvicorn's factory)."""
    settings = Settings.from_env()  # what the parent checked and handed down (`Settings.export`)
    arguments = argparse.Namespace(**json.loads(settings.serve_worker_arguments or "{}"), settings=settings)
    configure_logging(log_format_of(arguments, settings), settings)  # a worker is a fresh interpreter
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
        delay = getattr(arguments, "rehearsal_delay", 0.0)
        if not 0 <= delay <= 600:
            raise UsageError(f"--rehearsal-delay {delay:g} is out of range; give 0 to 600 seconds")
        return RehearsalModel(delay=delay)
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
