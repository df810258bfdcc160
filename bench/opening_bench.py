"""CPU of a round's opening, by how its JSON columns are parsed, on PostgreSQL and on SQLite.

A round's opening reads the past its game master is shown: the newest rounds verbatim and, while the memory keeper
is behind, the rounds standing in for their missing notes, each with its JSON columns. This plays a story of
`--rounds` rounds with no notes yet (as under load, when the keeper waits its turn) and opens an attempt at its
next round `--openings` times, each in a transaction rolled back, timing the thread's CPU (`time.thread_time`), in
alternating runs of each variant in one process (this machine's speed drifts between runs): on PostgreSQL with
psycopg's JSON loaders put back, with gm's loader parsing in two passes (`json`'s own `decode`, as before
gm.store._json) and with gm's as it is; on SQLite with `json.loads` and with gm's `parsed`.

    GM_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test python bench/opening_bench.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import event

import gm.store
import gm.store._pgjson
from gm.store import Store, make_engine
from gm.store._memory import PastWindow
from gm.store._rounds import open_attempt

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from databases import a_story_with_rounds  # the suite's played story: JSON in every column a round has
from serve_processes import postgres_database

WINDOW = PastWindow(verbatim=3, late=16)  # gm.engine.memory's PAST_WINDOW


def per_opening(store: Store, story_id: str, openings: int) -> float:
    """Microseconds of CPU an opening, over `openings` of them (each rolled back)."""

    def once() -> None:
        with store.transaction() as connection:
            open_attempt(connection, story_id, regenerate=False, past=WINDOW)
            connection.rollback()

    for _ in range(20):
        once()
    start = time.thread_time()
    for _ in range(openings):
        once()
    return (time.thread_time() - start) / openings * 1e6


def psycopgs_own_loaders(url: str) -> Store:
    """A store on database `url` whose connections read JSON with psycopg's loaders, as before gm's."""
    from psycopg.types.json import JsonbLoader, JsonLoader

    fresh = Store(engine=make_engine(url))

    @event.listens_for(fresh.engine, "connect")  # after gm's own listener: these loaders are the ones kept
    def _theirs(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.adapters.register_loader("json", JsonLoader)
        dbapi_connection.adapters.register_loader("jsonb", JsonbLoader)

    fresh.engine.dispose()  # the connection the store's migration check opened has gm's: opened again, theirs
    return fresh


def two_passes(text: str, whole: Any = json.loads) -> Any:
    """How gm parsed JSON before gm.store._json: the whole parser, which strips whitespace first."""
    return whole(text)


def sqlite_with_json_loads(url: str) -> Store:
    """A SQLite store whose JSON columns are parsed by `json.loads` (SQLAlchemy's default), as before gm's `parsed`."""
    ours = gm.store.parsed
    gm.store.parsed = json.loads  # what make_engine hands SQLAlchemy as it makes the engine
    try:
        return Store(engine=make_engine(url))
    finally:
        gm.store.parsed = ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds played before the openings (default 20)")
    parser.add_argument("--openings", type=int, default=500, help="openings a run (default 500)")
    parser.add_argument("--runs", type=int, default=5, help="alternating runs of each variant (default 5)")
    arguments = parser.parse_args()
    admin_url = os.environ.get("GM_TEST_POSTGRES_URL")
    if not admin_url:
        sys.exit("set GM_TEST_POSTGRES_URL to a PostgreSQL server this may create databases on")
    times: dict[str, list[float]] = {}
    with postgres_database(admin_url) as url, tempfile.TemporaryDirectory() as folder:
        ours = Store(url)
        story_id = a_story_with_rounds(ours, arguments.rounds)
        theirs = psycopgs_own_loaders(url)
        sqlite_url = f"sqlite:///{folder}/bench.db"
        sqlite = Store(sqlite_url)
        sqlite_story = a_story_with_rounds(sqlite, arguments.rounds)
        sqlite_before = sqlite_with_json_loads(sqlite_url)
        ones = gm.store._pgjson.parsed
        for _ in range(arguments.runs):
            for name, store, story in (
                ("PostgreSQL, psycopg's JSON loaders", theirs, story_id),
                ("PostgreSQL, gm's loader in two passes", ours, story_id),
                ("PostgreSQL, gm's", ours, story_id),
                ("SQLite, json.loads", sqlite_before, sqlite_story),
                ("SQLite, gm's", sqlite, sqlite_story),
            ):
                gm.store._pgjson.parsed = two_passes if "two passes" in name else ones
                times.setdefault(name, []).append(per_opening(store, story, arguments.openings))
        gm.store._pgjson.parsed = ones
        for store in (ours, theirs, sqlite, sqlite_before):
            store.close()
    print(f"A round's opening, {arguments.rounds} rounds without notes behind it, CPU µs an opening:\n")
    print("| variant | each run | median |\n|---|---|---:|")
    for name, each in times.items():
        print(f"| {name} | {', '.join(f'{t:.0f}' for t in each)} | {statistics.median(each):.0f} |")
    median = {name: statistics.median(each) for name, each in times.items()}
    for label, after, before in (
        ("gm's loader against psycopg's (PostgreSQL)", "gm's loader in two passes", "psycopg's JSON loaders"),
        ("one pass against two (PostgreSQL)", "gm's", "gm's loader in two passes"),
    ):
        print(f"\n{label}: {median['PostgreSQL, ' + after] / median['PostgreSQL, ' + before]:.2f}x", end="")
    sqlite_ratio = median["SQLite, gm's"] / median["SQLite, json.loads"]
    print(f"\none pass against json.loads (SQLite): {sqlite_ratio:.2f}x")


if __name__ == "__main__":
    main()
