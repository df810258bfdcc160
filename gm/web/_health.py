"""An operator's side of `gm serve`: health, readiness, metrics, and draining on SIGTERM (docs/operations.md).

`Operations` wraps the app (ASGI), ahead of its routes and guards:

- `GET /healthz`: 200 `{"status": "alive"}` while the process serves; it reads no database.
- `GET /readyz`: 200 `{"status": "ready"}` when the database answers within `READY_SECONDS` and its schema is
  at the newest migration; else 503 with one sentence saying which. Also 503 while draining.
- `GET /metrics`: Prometheus' text (gm.web._metrics), to `Authorization: Bearer <GM_METRICS_TOKEN>` only;
  404 when no token is set, 401 for a missing or wrong one.
- SIGTERM drains the process: from then on a request that would start a round is answered 503 with one
  sentence and `Retry-After` (a proxy in front may send it to another server), rounds in flight get up to
  `GM_DRAIN_SECONDS` to end, those still running are then stopped and fail cleanly (gm.engine._in_flight),
  and only then does uvicorn's own shutdown begin. The drain's figures are logged. A second SIGTERM stops
  at once. The handler is chained ahead of uvicorn's, in each worker process.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import re
import signal
import threading
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from alembic.script import ScriptDirectory
from sqlalchemy import text

from gm.engine._in_flight import CLOSED, Drained
from gm.engine.game import Game
from gm.store import Store
from gm.store.migrations import config
from gm.web._errors import error_body
from gm.web._metrics import CONTENT_TYPE, Metrics

log = logging.getLogger(__name__)
READY_SECONDS = 2.0  # how long /readyz waits for the database
RETRY_AFTER_SECONDS = 5
SETTLE_MEMORY_SECONDS = 5.0  # after the rounds, how long memory work in progress may take to end
# The requests that start (or take up) a round: refused while draining.
ROUND_PATHS = re.compile(r"^/api/stories/[^/]+/(messages|regenerate|faces)(/stream)?$|^/v1/chat/completions$")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Operations:
    """The app behind the operator's endpoints and the drain (see the module)."""

    def __init__(
        self, app: Any, game: Game, *, drain_seconds: float, metrics: Metrics | None = None, metrics_token: str | None
    ) -> None:
        self.app, self.game, self.drain_seconds = app, game, drain_seconds
        self.metrics, self.metrics_token = metrics, metrics_token
        self._previous: Any = None
        # What ends the process once drained: the SIGTERM handler before ours (uvicorn's); a test puts its own.
        self.stop_server: Callable[[int, Any], None] = self._pass_on
        self._heads: tuple[str, ...] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._lifespan(receive), send)
            return
        if scope["type"] == "http":
            path, method = scope["path"], scope["method"]
            if path == "/healthz" and method == "GET":
                return await _answer(send, 200, {"status": "alive"})
            if path == "/readyz" and method == "GET":
                problem = await self.unready()
                body = {"status": "ready"} if problem is None else {"status": "unready", "error": problem}
                return await _answer(send, 200 if problem is None else 503, body)
            if path == "/metrics" and method == "GET":
                return await self._metrics(scope, send)
            if self.game.rounds.closed and method == "POST" and ROUND_PATHS.match(path):
                retry = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
                return await _answer(send, 503, error_body(path, CLOSED, 503), retry)
        await self.app(scope, receive, send)

    # Readiness

    async def unready(self) -> str | None:
        """None when this process can play rounds; else one sentence saying why not."""
        if self.game.rounds.closed:
            return "this server is shutting down"
        store = self.game.store
        try:
            found = await asyncio.wait_for(store.off_loop(_schema_version, store, durable=False), READY_SECONDS)
        except TimeoutError:
            return f"the database did not answer within {READY_SECONDS:g} s"
        except Exception as error:  # what is wrong is the database's: its first line, never a traceback
            first = (str(error).splitlines() or [""])[0]
            log.warning("readiness: the database cannot be reached: %s: %s", type(error).__name__, first)
            return f"the database cannot be reached ({type(error).__name__})"
        if self._heads is None:
            self._heads = await asyncio.to_thread(_heads)
        heads = self._heads
        if found not in heads:
            return f"the database's schema is at {found or 'no revision'}, not at the newest ({', '.join(heads)})"
        return None

    # Metrics

    async def _metrics(self, scope: Scope, send: Send) -> None:
        if self.metrics is None or not self.metrics_token:
            return await _answer(send, 404, {"error": "there is no /metrics: set GM_METRICS_TOKEN to serve them"})
        given = dict(scope["headers"]).get(b"authorization", b"")
        expected = b"Bearer " + self.metrics_token.encode("utf-8")
        if not hmac.compare_digest(given, expected):
            return await _answer(send, 401, {"error": "/metrics needs Authorization: Bearer <GM_METRICS_TOKEN>"})
        body = await asyncio.to_thread(self.metrics.exposition)
        await _send(send, 200, body, CONTENT_TYPE.encode(), [])

    # The drain

    def _lifespan(self, receive: Receive) -> Receive:
        async def received() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.listen()
            elif message["type"] == "lifespan.shutdown" and self.metrics is not None:
                self.metrics.process_ended(os.getpid())
            return message

        return received

    def listen(self) -> None:
        """Drain on SIGTERM, then hand the signal to the handler before (uvicorn's): from the main thread only."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()

        def on_sigterm(sig: int, frame: Any) -> None:
            if self.game.rounds.closed:  # a second SIGTERM: stop now
                self.stop_server(sig, frame)
            else:
                loop.call_soon_threadsafe(lambda: loop.create_task(self.drain(sig)))

        self._previous = signal.signal(signal.SIGTERM, on_sigterm)

    async def drain(self, sig: int = signal.SIGTERM) -> Drained:
        """Refuse new rounds, let those in flight end (or stop them at the bound), log the figures, then stop."""
        log.info("SIGTERM: draining %d round(s) in flight, for up to %g s", len(self.game.rounds), self.drain_seconds)
        drained = await self.game.rounds.drain(self.drain_seconds)
        try:
            await asyncio.wait_for(self.game.settle(flush=False), SETTLE_MEMORY_SECONDS)
        except TimeoutError:
            log.warning("memory work still running after the drain is left for the stories' next rounds")
        figures = asdict(drained)
        log.info(
            "drained in %.2f s: %d round(s) in flight, %d finished, %d failed (%d stopped at the bound)",
            drained.seconds,
            drained.in_flight,
            drained.finished,
            drained.failed,
            drained.stopped,
            extra={"drain": figures},
        )
        self.stop_server(sig, None)
        return drained

    def _pass_on(self, sig: int, frame: Any) -> None:
        previous = self._previous
        if callable(previous):
            previous(sig, frame)
        else:  # no Python handler before ours: the signal's own default, now
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            os.kill(os.getpid(), sig)


def _schema_version(store: Store) -> str | None:
    with store.engine.connect() as connection:
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _heads() -> tuple[str, ...]:
    """The newest revisions of gm's migrations, read from their folder once."""
    with_no_connection = config(None)  # type: ignore[arg-type]
    return tuple(ScriptDirectory.from_config(with_no_connection).get_heads())


Headers = list[tuple[bytes, bytes]]


async def _answer(send: Send, status: int, body: dict[str, Any], headers: Headers | None = None) -> None:
    await _send(send, status, json.dumps(body).encode(), b"application/json", headers or [])


async def _send(send: Send, status: int, body: bytes, kind: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    head = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": head + headers})
    await send({"type": "http.response.body", "body": body})
