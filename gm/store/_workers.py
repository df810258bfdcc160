"""The worker threads where async code's blocking work runs, so a server's event loop never waits on it.

Every story a server plays shares one event loop: a commit, an fsync, a token look-up or a world
checked on it stalls every other story and request meanwhile. So the database work of async code
(`Store.off_loop`) runs here instead, each engine with its own workers:

- SQLite: one thread. SQLite has a single writer, so more threads would only queue on its lock (and
  lose time to it: measured in bench/serve_bench.py), while one thread keeps the loop free and the
  writes in the order they were asked for. The sqlite3 module lets go of the GIL while SQLite works,
  so the loop runs during every statement, commit and fsync. The thread commits the work that queued
  meanwhile together, in one transaction (`gm.store._commit_groups.CommitGroups`: group commit).
- A database server (PostgreSQL): `SERVER_THREADS` threads, and as many pooled connections for them
  (`gm.store.make_engine`), so one slow statement or round trip never holds up the other stories.

Work handed over keeps its order per caller (each awaits its own), and its error is raised in the
caller; a cancelled caller waits for its work already running (`Workers.run`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy.engine import Engine

from gm.store._commit_groups import CommitGroups

T = TypeVar("T")

# Per engine on a database server (its pool holds as many connections: gm.store.make_engine). A round's
# transactions go in batches (gm.store._batch), so a job holds its thread for a few round trips: 2 threads play
# as many rounds as more would, and every thread more takes the GIL from the event loop more often, which every
# story's requests wait on. A database far away (a round trip of a millisecond or more) keeps a thread longer a
# job, and more threads may then pay. The measurements behind this: docs/decisions/database-threads.md.
SERVER_THREADS = 2
BACKGROUND_LANES = SERVER_THREADS // 2  # of them, background work may hold at most this many (see `Workers`)


# Work no player waits for: set by the memory keeper's task (gm.engine.game), read by `Workers.run`.
BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("gm_background_work", default=False)
# False while work handed over with `durable=False` runs: its commit need not wait for a sync (on PostgreSQL
# `gm.store._batch` asks for none; SQLite's thread reads the job's own flag, gm.store._commit_groups).
DURABLE: contextvars.ContextVar[bool] = contextvars.ContextVar("gm_durable_work", default=True)


class Workers:
    """A fixed set of named worker threads, started as work arrives and kept while their owner lives.

    Background work (`BACKGROUND`: the memory keeper's) is handed to the threads `background_lanes` at a
    time, the rest waiting on the event loop: a round's work then queues behind at most that many jobs
    of it. Why: under many players the threads are busy most of the time, a job taking several times its
    CPU time in round trips and GIL waits, and a player waits on a round's work but on no keeper's. The
    keeper's work waits its turn instead: none of it is dropped, and a story's stays in order (one keeper
    per story at a time).
    """

    def __init__(self, threads: int, name: str, background_lanes: int | None = None) -> None:
        self.threads = threads
        self.background_lanes = background_lanes  # None: background work queues with the rest
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self._lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def submit(self, call: Callable[[], T], durable: bool = True) -> Future[T]:
        """Queue `call` for a worker thread (`durable` is read by SQLite's thread, `GroupCommitting`; here the
        call's context carries it, `DURABLE`, for `gm.store._batch`)."""
        return self._executor.submit(call)

    async def run(self, work: Callable[..., T], *arguments: Any, durable: bool = True) -> T:
        """`work(*arguments)` in a worker thread, with the caller's context variables (as `asyncio.to_thread`).

        A caller cancelled meanwhile stops work not yet started; work already running is waited for before
        the cancellation goes on, so what the caller does next (mark its attempt failed, release its lease)
        comes after it, as it would if the work had run in the caller. Background work first waits for a
        lane (see the class)."""
        if self.background_lanes is None or not BACKGROUND.get():
            return await self._run(work, arguments, durable)
        loop = asyncio.get_running_loop()
        lanes = self._lanes.get(loop)
        if lanes is None:  # a semaphore belongs to one event loop; a test may run several in turn
            lanes = self._lanes[loop] = asyncio.Semaphore(self.background_lanes)
        async with lanes:
            return await self._run(work, arguments, durable)

    async def _run(self, work: Callable[..., T], arguments: tuple[Any, ...], durable: bool) -> T:
        context = contextvars.copy_context()
        if not durable:
            context.run(DURABLE.set, False)
        call = functools.partial(context.run, work, *arguments)
        future = self.submit(call, durable)
        waited = asyncio.wrap_future(future)
        try:
            return await asyncio.shield(waited)
        except asyncio.CancelledError:
            if not future.cancel():  # running already: a transaction is never left half done by a cancel
                await asyncio.wait([waited])
            raise

    def close(self) -> None:
        """Let the threads go once the work handed over is done (they also go when this object is collected)."""
        self._executor.shutdown(wait=False)


class GroupCommitting(Workers):
    """SQLite's one database thread, committing the work that queued meanwhile in one transaction
    (gm.store._commit_groups)."""

    def __init__(self, engine: Engine, name: str) -> None:  # no thread pool: the groups have their thread
        self.threads = 1
        self.background_lanes = None  # the work keeps the order it was handed over in, background or not
        self.groups = CommitGroups(engine, name)

    def submit(self, call: Callable[[], T], durable: bool = True) -> Future[T]:
        return self.groups.submit(call, durable)

    def close(self) -> None:
        self.groups.close()


_workers: weakref.WeakKeyDictionary[Engine, Workers] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def workers_for(engine: Engine) -> Workers:
    """The engine's workers: one thread committing in groups for SQLite, `SERVER_THREADS` for a database server.

    Kept per engine (not per Store), so two stores on one engine share them, and dropped with the engine."""
    with _lock:
        found = _workers.get(engine)
        if found is None:
            if engine.dialect.name == "sqlite":
                found = _workers[engine] = GroupCommitting(engine, "gm-sqlite")
            else:
                name = f"gm-{engine.dialect.name}"
                found = _workers[engine] = Workers(SERVER_THREADS, name, background_lanes=BACKGROUND_LANES)
        return found
