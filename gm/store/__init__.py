"""The one place that talks to the database: stories, attempts, rolls, rounds, memory and model calls.

`Store` is made of parts, one module each: gm/store/_stories.py (stories and the round lease),
gm/store/_rolls.py (attempts, rolls and their hash chain, seeds), gm/store/_rounds.py (an attempt
opened or taken up again, in one transaction), gm/store/_accept.py (a round accepted, in another),
gm/store/_memory.py (the memory keeper's notes, the running summary, the past a round is shown, model calls) and
gm/store/_paused.py (rounds waiting for the player's dice), gm/store/_seats.py (seats and their
messages), gm/store/_events.py (the events pages watch live); gm/store/_base.py holds what they share.
The store returns data; what a round does with it is the engine's. Rolls are append-only, each written in its own
transaction the moment it is rolled; an accepted round is written in one transaction fenced on the
story's lease. Two rounds of one story never run at once: the lease holds across processes.

`GM_DATABASE_URL` picks the database; the default is a SQLite file in `GM_HOME`
(default `~/.local/share/gm`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import create_engine

from gm.config import Settings
from gm.errors import SettingsError
from gm.store._accept import AcceptTables
from gm.store._base import ABANDONED, LEASE_LOST, SHORT_ID
from gm.store._batch import reset_batched_connections
from gm.store._commit_groups import when_durable
from gm.store._events import (
    EVENTS_CHANNEL,
    KEEP_EVENTS,
    OWNER_AUDIENCE,
    READ_AT_MOST,
    RIDER,
    Event,
    EventsRead,
    EventTables,
    LiveEvent,
    Stage,
    listen_url,
    notifications,
)
from gm.store._forks import FORKED_FROM, ForkTables
from gm.store._json import parsed
from gm.store._memory import MemoryTables, Past, PastWindow
from gm.store._paused import NOTHING_WAITING, PausedTables, waiting_sentence
from gm.store._pgjson import read_json_as_text
from gm.store._pgpool import drop_closed_connections
from gm.store._rolls import RollTables
from gm.store._rounds import NOTHING_TO_REGENERATE, Opened, RoundTables, StoryState, TakenUp
from gm.store._seats import ALREADY_ACTED, SeatTables
from gm.store._sheets import SheetStart, SheetTables, SheetWrite
from gm.store._stories import Claim, StoryTables
from gm.store._workers import BACKGROUND, SERVER_THREADS, workers_for
from gm.store.migrations import upgrade
from gm.store.records import (
    Attempt,
    MemoryEntry,
    ModelCall,
    PausedRound,
    RollRecord,
    RoundRecord,
    SeatRecord,
    SeedRecord,
    SheetChangeRecord,
    Story,
    StoryBase,
    TableMessage,
)

__all__ = [
    "ABANDONED",
    "ALREADY_ACTED",
    "BACKGROUND",
    "EVENTS_CHANNEL",
    "FORKED_FROM",
    "KEEP_EVENTS",
    "LEASE_LOST",
    "NOTHING_TO_REGENERATE",
    "NOTHING_WAITING",
    "OWNER_AUDIENCE",
    "READ_AT_MOST",
    "RIDER",
    "SHORT_ID",
    "Attempt",
    "Claim",
    "Event",
    "EventsRead",
    "LiveEvent",
    "MemoryEntry",
    "ModelCall",
    "Opened",
    "Past",
    "PastWindow",
    "PausedRound",
    "RollRecord",
    "RoundRecord",
    "SeatRecord",
    "SeedRecord",
    "SheetChangeRecord",
    "SheetStart",
    "SheetWrite",
    "Stage",
    "Store",
    "Story",
    "StoryBase",
    "StoryState",
    "TableMessage",
    "TakenUp",
    "default_database_url",
    "listen_url",
    "make_engine",
    "notifications",
    "waiting_sentence",
    "when_durable",
]


T = TypeVar("T")


def default_database_url(settings: Settings | None = None) -> str:
    """The database `settings` name (else the environment's, `gm.config`): GM_DATABASE_URL, else the SQLite
    file gm.db in GM_HOME, whose folder is made here if it is missing."""
    settings = settings or Settings.from_env()
    if settings.database_url:
        return settings.database_url
    settings.home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{settings.home / 'gm.db'}"


def require_psycopg() -> None:
    """Refuse a PostgreSQL database, in one sentence, where its driver is not installed (it is the `postgres` extra:
    gm plays on SQLite without it)."""
    try:
        import psycopg  # noqa: F401  (imported here: where only SQLite is used psycopg is never imported)
    except ImportError:
        raise SettingsError(
            "the database is PostgreSQL (GM_DATABASE_URL, or the URL given), whose driver psycopg is not installed;"
            " install it with pip install 'gm[postgres]'"
        ) from None


APP_CONNECTIONS = 4  # pooled PostgreSQL connections beyond the worker threads': for the web app's own threads


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL and a busy timeout so several processes can share the file."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if url.startswith("postgresql+psycopg"):
        require_psycopg()
    # hide_parameters: a failed statement's text goes to the log, but never its values (a player's words).
    if not url.startswith("sqlite"):
        # A connection for each worker thread (gm.store._workers), and `APP_CONNECTIONS` more for the web app's own
        # threads.
        # A connection a restarted server dropped becomes a new one at checkout, rather than a failed round,
        # found without pool_pre_ping's round trip (gm.store._pgpool).
        pool = {"pool_size": SERVER_THREADS, "max_overflow": APP_CONNECTIONS}
        # psycopg prepares no statement of its own: gm.store._pipeline prepares a round's, and psycopg's would have
        # it deallocate them all at every rollback.
        server_engine = create_engine(url, hide_parameters=True, connect_args={"prepare_threshold": None}, **pool)
        drop_closed_connections(server_engine)
        reset_batched_connections(server_engine)
        read_json_as_text(server_engine)  # JSON values read as SQLite's are, not guessed at (gm.store._pgjson)
        return server_engine
    # pool_use_lifo: the connection given back last is the next one handed out, so SQLite's database thread keeps
    # working on one connection, whose page cache stays valid between its transactions; handed connections in
    # turn (the pool's default), each found the file changed by the other since its last use and read its pages
    # again (the round's statements cost about 15% more of the thread's CPU, timed one by one over 400 rounds).
    # json_deserializer: JSON columns parsed as json.loads parses them, in one pass (gm.store._json).
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 30},
        hide_parameters=True,
        pool_use_lifo=True,
        json_deserializer=parsed,
    )

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        # Switching a new file to WAL needs a moment alone with it; processes opening it together
        # can find it locked, and the busy timeout does not always cover this one statement.
        for attempt in range(50):
            try:
                cursor.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.1)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=FULL")  # every commit synced (SQLite's default; said, not assumed)
        cursor.close()

    return engine


class Store(
    StoryTables,
    RollTables,
    RoundTables,
    AcceptTables,
    MemoryTables,
    PausedTables,
    ForkTables,
    SheetTables,
    SeatTables,
    EventTables,
):
    """The database behind every story; each method is one short transaction."""

    def __init__(self, url: str | None = None, *, engine: Engine | None = None) -> None:
        """The database at `url`; without one, the one the environment names (`default_database_url`)."""
        self.engine = engine or make_engine(url or default_database_url())
        upgrade(self.engine)  # to the newest schema: gm/migrations

    async def off_loop(self, work: Callable[..., T], *arguments: Any, durable: bool = True) -> T:
        """Run blocking database work for async code in the engine's worker threads (gm.store._workers), never on the
        event loop: one thread for SQLite, whose single writer would only make more of them queue, and a
        pool of them for a database server, so other stories and requests go on meanwhile.

        `durable=False` is for work a power cut may lose with no harm (never a roll or an accepted round):
        it may return before its commit is synced to disk (SQLite: gm.store._commit_groups; PostgreSQL: a transaction
        a batch opens commits with `synchronous_commit` off, gm.store._batch)."""
        return await workers_for(self.engine).run(work, *arguments, durable=durable)

    def close(self) -> None:
        """Let the store's database threads go once the work handed to them is done, and close its connections.

        For a program that opens stores and goes on (a test suite, a library user): the threads would otherwise
        stay for as long as anything holds the engine. The store is not used after this."""
        workers_for(self.engine).close()
        self.engine.dispose()
