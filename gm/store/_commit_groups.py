"""SQLite's one database thread, committing together the work that queued while it was busy (group commit).

A commit on SQLite (`synchronous=FULL`, WAL) writes and syncs the log: under many players that is the
largest part of the database thread's time, and that one thread is what rounds wait on. So the thread
takes every piece of work queued when it is free (at most `MAX_GROUP`), runs them one after
another in one SQLite transaction, and commits once:

- each `Store.transaction()` block of a piece of work is still atomic: the first of a group's
  transaction is the group's own (a failure rolls back all there is so far: only itself), and every
  later one runs in a SAVEPOINT that a failure rolls back to, so what an earlier block or piece of work
  wrote stays, exactly as if each block had committed at its end;
- nothing is promised before it is durable: every caller learns its result (or its error) only once
  the group's COMMIT has returned, and what the work tells an event loop meanwhile (a roll's card for
  the player: `when_durable`) is told only then. A roll is on disk before the model hears of it, and an
  accepted round before the player sees it; a failed COMMIT fails every piece of its group;
- the order is kept: work runs in the order it was handed over, each seeing what came before it.

Work that need not be on disk when it returns (`durable=False`: a round's opening, its lease's
heartbeat and release, the memory keeper's notes) is committed with `synchronous=NORMAL` when its
group holds nothing else: SQLite's WAL is then written but not synced, which saves the sync's
CPU and wait. Such a commit is on disk by the next durable one, since SQLite's log is one file
written in order and a sync of it holds every commit before; a power cut before then loses that
work alone, never a roll or an accepted round (always durable work), and nothing anyone was told
had been kept (docs/durability.md says what each kind of work is, and what a power cut may take). A
group with any durable work in it commits with `synchronous=FULL`, as every connection has it otherwise.

The group's transaction begins with `BEGIN IMMEDIATE`, taking SQLite's write lock at once, so another
connection's write (another process, or a thread outside the group) waits for the group's commit on
the busy timeout rather than making the group's first write fail. Idle, the thread ends after
`IDLE_SECONDS` and a new one starts with the next work, so an engine no longer used leaves no thread.
Under load a group holds a few pieces of work; when the server is quiet, one.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

log = logging.getLogger(__name__)

# Pieces of work committed together at most. It bounds how long the first of them waits for the rest, and how
# many rounds the event loop takes up again at once when a group is committed: a burst that a request arriving
# meanwhile waits through. 8 keeps that burst short for a tenth fewer rounds a second than larger groups
# (docs/decisions/database-threads.md).
MAX_GROUP = 8
IDLE_SECONDS = 2.0  # an idle thread ends after this long; the next work starts another


class Group:
    """One group's transaction on the database thread: the connection, whether it holds writes, and what waits
    for its commit."""

    def __init__(self, engine_id: int, durable: bool = True) -> None:
        self.engine_id = engine_id
        self.durable = durable  # False: committed without a sync (see the module's docstring)
        self.relaxed = False  # the connection's synchronous was set to NORMAL for this group, and is set back
        self.connection: Connection | None = None
        self.holding = False  # a transaction block ended well inside the open transaction: a failure must not undo it
        self.depth = 0  # transaction blocks open just now (a block inside a block always gets a savepoint)
        self.after: list[Callable[[], object]] = []  # told once the group is durable (`when_durable`)

    def serves(self, engine: Engine) -> bool:
        return id(engine) == self.engine_id

    def _begun(self, engine: Engine) -> Connection:
        """The group's connection, in its transaction (begun now, with the write lock, if it was not)."""
        if self.connection is None:
            self.connection = engine.connect()
        if not self.connection.in_transaction():
            # SQLAlchemy's record of the transaction first (on SQLite its begin sends nothing), then the BEGIN
            # itself, straight to the driver: through `exec_driver_sql` it cost several times the statement.
            self.connection.begin()
            try:
                if not self.durable and not self.relaxed:
                    _on_driver(self.connection, "PRAGMA synchronous=NORMAL")  # outside the transaction, for its commit
                    self.relaxed = True
                _on_driver(self.connection, "BEGIN IMMEDIATE")
            except DBAPIError:
                self.connection.rollback()
                raise
        return self.connection

    @contextmanager
    def transaction(self, engine: Engine) -> Iterator[Connection]:
        """A transaction block inside the group's transaction: its own, or a savepoint after others."""
        connection = self._begun(engine)
        if self.holding or self.depth:
            # The savepoint goes straight to the driver, as the BEGIN does: SQLAlchemy's `begin_nested` and its
            # release run each statement through its execution, a sizeable part of the database thread's CPU
            # under load. SQLAlchemy's own savepoints (an
            # ORM session's, say) may still nest inside. One name serves every depth: SQLite rolls back to and
            # releases the newest savepoint of a name.
            name = "gm_block"
            _on_driver(connection, f"SAVEPOINT {name}")
            self.depth += 1
            try:
                yield connection
            except BaseException:
                _on_driver(connection, f"ROLLBACK TO SAVEPOINT {name}")
                _on_driver(connection, f"RELEASE SAVEPOINT {name}")
                raise
            finally:
                self.depth -= 1
            _on_driver(connection, f"RELEASE SAVEPOINT {name}")
        else:  # nothing else in the transaction yet: on a failure it is all rolled back, as a block of its own
            self.depth += 1
            try:
                yield connection
            except BaseException:
                connection.rollback()
                raise
            finally:
                self.depth -= 1
        self.holding = True

    @contextmanager
    def reading(self, engine: Engine) -> Iterator[Connection]:
        """Reads on the group's connection: they see what the group's earlier work wrote, as they would after
        its commits."""
        yield self._begun(engine)

    @contextmanager
    def session(self, engine: Engine) -> Iterator[Session]:
        """An ORM session whose commit releases a savepoint of the group's transaction."""
        connection = self._begun(engine)
        with Session(bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False) as session:
            yield session
        self.holding = True

    def commit(self) -> None:
        if self.connection is not None and self.connection.in_transaction():
            try:
                self.connection.commit()
            except BaseException:
                # Whatever the driver's state now, nothing of the group may be committed later on this
                # connection: it is discarded, and SQLite rolls back what it held.
                self.connection.invalidate()
                raise
        self.holding = False

    def close(self) -> None:
        if self.connection is not None:
            if self.relaxed and not self.connection.invalidated:
                try:  # the pooled connection goes back as every connection is: syncing each commit
                    self.connection.connection.driver_connection.execute("PRAGMA synchronous=FULL")  # type: ignore[union-attr]
                except Exception:
                    self.connection.invalidate()  # never handed out again without its syncs
                    raise
            self.connection.close()
            self.connection = None


def _on_driver(connection: Connection, sql: str) -> None:
    """Run `sql` on the connection's sqlite3 connection itself; its error raised as SQLAlchemy's (`DBAPIError`)."""
    driver: Any = connection.connection.driver_connection
    try:
        driver.execute(sql)
    except connection.dialect.loaded_dbapi.Error as error:
        raise DBAPIError.instance(sql, None, error, connection.dialect.loaded_dbapi.Error) from error


_current = threading.local()


def current_group() -> Group | None:
    """The group the calling thread is running work in, if it is a database thread."""
    found: Group | None = getattr(_current, "group", None)
    return found


def when_durable(tell: Callable[[], object]) -> None:
    """Call `tell` once what the calling work wrote is committed: now, or after its group's commit (dropped if
    that commit fails, as a block's news is when its own commit fails)."""
    group = current_group()
    if group is None:
        tell()
    else:
        group.after.append(tell)


class _Job:
    __slots__ = ("call", "durable", "future")

    def __init__(self, call: Callable[[], Any], durable: bool = True) -> None:
        self.call = call
        self.durable = durable
        self.future: Future[Any] = Future()


class CommitGroups:
    """One database thread for an engine, running the work handed to it in groups of one transaction each."""

    def __init__(self, engine: Engine, name: str) -> None:
        self._engine_id = id(engine)  # not the engine itself: it is dropped with its workers (gm.store._workers)
        self._name = name
        self._queue: collections.deque[_Job] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._closed = False
        self.groups = 0  # groups committed, and the work they held (bench/serve_bench.py reports them)
        self.grouped = 0

    def submit(self, call: Callable[[], Any], durable: bool = True) -> Future[Any]:
        """Queue `call` for the thread; with `durable=False` its commit need not be synced (see the module)."""
        job = _Job(call, durable)
        with self._ready:
            if self._closed:
                raise RuntimeError("these database workers are closed")
            self._queue.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=f"{self._name}_0", daemon=True)
                self._thread.start()
            else:
                self._ready.notify()
        return job.future

    def close(self) -> None:
        """Let the thread go once the work handed over is done."""
        with self._ready:
            self._closed = True
            self._ready.notify()

    def _take(self) -> list[_Job] | None:
        """The work queued now (waiting for some), at most `MAX_GROUP`; None when the thread is to end."""
        with self._ready:
            while not self._queue:
                if self._closed or (not self._ready.wait(IDLE_SECONDS) and not self._queue):
                    self._thread = None
                    return None
            count = min(len(self._queue), MAX_GROUP)
            return [self._queue.popleft() for _ in range(count)]

    def _serve(self) -> None:
        while (jobs := self._take()) is not None:
            try:
                self._run(jobs)
            except BaseException as error:  # the group's own failure (a bug): no caller is left waiting on it
                log.exception("a group of database work failed")
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(error)

    def _run(self, jobs: list[_Job]) -> None:
        group = Group(self._engine_id, durable=any(job.durable for job in jobs))
        _current.group = group
        outcomes: list[tuple[_Job, Any, BaseException | None]] = []
        try:
            for job in jobs:
                if not job.future.set_running_or_notify_cancel():
                    continue  # its caller was cancelled before it started: it never runs
                try:
                    outcomes.append((job, job.call(), None))
                except BaseException as error:  # the caller's to handle, once the group is durable
                    outcomes.append((job, None, error))
            _current.group = None
            try:
                group.commit()
            except BaseException as error:
                for job, _, _ in outcomes:
                    job.future.set_exception(error)
                return
        finally:
            _current.group = None
            group.close()
        self.groups += 1
        self.grouped += len(outcomes)
        for tell in group.after:
            tell()
        for job, result, failure in outcomes:
            if failure is None:
                job.future.set_result(result)
            else:
                job.future.set_exception(failure)
