"""Benchmark of a round's database work: statements, commits, connection checkouts and CPU per round.

What it measures
----------------
One story in the tests' harbour world, on a fresh SQLite file (synchronous=FULL, as shipped) or a
fresh PostgreSQL database, played through `gm.engine.game.Game` (judging off) with an in-process scripted
model that costs next to nothing: odd rounds roll a check (`roll_check`, then `narrate` with the
honest outcome), even rounds end in plain text. After each round `game.settle()` lets the memory
keeper write its note (and fold), measured apart from the round.

Per round, from SQLAlchemy's engine and pool events (the same listeners on any version of gm):

- statements: on PostgreSQL `before_cursor_execute` (every SQL statement sent, BEGIN not counted); on
  SQLite, SQLite's own trace of the statements it runs (`set_trace_callback`; BEGIN, COMMIT, savepoints
  and PRAGMAs not counted), which also sees the statements gm runs on the driver itself (gm.store._batch);
- commits: the engine's `commit` event; on SQLite, those synced to disk too (`PRAGMA synchronous` at the
  commit: gm.store._commit_groups commits some work without a sync of its own);
- checkouts: the pool's `checkout` event (a Session or a Connection taking a connection);
- round trips (PostgreSQL, with `--round-trips`): each Sync or Query message the client sends, from
  libpq's trace of every connection. Statements sent in a batch (gm.store._batch) go straight to
  psycopg, so SQLAlchemy's events do not see them: on PostgreSQL this is the figure to read, not
  statements. Tracing writes every message to a file, so the CPU figures of such a run are higher;
- db CPU: the CPU time (`time.thread_time`) of the thread holding a connection, from its checkout
  to its checkin: the ORM or Core work done while a connection is held, the driver and, on SQLite,
  the engine's own work and fsync's CPU. Work before the first statement of a session (building
  objects) is not counted; it is small, and it is counted in round CPU;
- round CPU: the whole process's CPU time (`time.process_time`) for `game.play`, and its wall time.

Reported as medians over a window of rolled and of plain rounds at the start of the story (rounds
1 to W) and at its end (the last W rounds of `--rounds`), for each database.

How to run
----------
From the project root, with the virtualenv active (PostgreSQL from `GM_TEST_POSTGRES_URL`, which
must allow creating databases; without it only SQLite is measured)::

    python bench/store_bench.py                            # this tree, 1,000 rounds on each database
    python bench/store_bench.py --baseline /work/base      # the baseline tree and this one, alternated
    python bench/store_bench.py --rounds 200 --window 20 --repeat 3

With `--baseline DIR`, each repetition runs the same worker (this file) once under DIR's virtualenv
(`DIR/.venv/bin/python`, importing DIR's gm) and once under this tree's, alternately, and the
report shows both side by side with the ratio of medians. `--profile FILE` (worker only) writes a
cProfile of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
# What SQLite's trace shows that is not one of the round's statements (as SQLAlchemy's events never counted them).
_NOT_STATEMENTS = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA")


# The worker: runs under whichever tree's interpreter the parent chose.


class _Counters:
    """Statements, commits, checkouts and the CPU time connections were held, counted by engine and pool events."""

    def __init__(self) -> None:
        self.statements = 0
        self.commits = 0
        self.synced = 0  # commits that sync SQLite's log to disk (every commit on PostgreSQL)
        self.checkouts = 0
        self.db_cpu = 0.0
        self._trace: Any = None  # libpq's trace of every PostgreSQL connection, with --round-trips
        self._held = threading.local()
        self._lock = threading.Lock()

    def attach(self, engine: Any) -> None:
        from sqlalchemy import event

        if os.environ.get(TRACE_ENV) and engine.dialect.name == "postgresql":
            self._trace = tempfile.TemporaryFile()  # noqa: SIM115 (read until the worker ends)
            engine.dispose()  # the connections open so far were not traced

            @event.listens_for(engine, "connect")
            def _traced(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.pgconn.trace(self._trace.fileno())

        if engine.dialect.name == "sqlite":
            # SQLite's own trace of every statement it runs: gm runs a batch's statements on the driver itself
            # (gm.store._batch), which SQLAlchemy's events do not see.
            engine.dispose()  # the connections open so far were not traced

            @event.listens_for(engine, "connect")
            def _traced_sqlite(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.set_trace_callback(self._sqlite_statement)

        else:

            @event.listens_for(engine, "before_cursor_execute")
            def _statement(*_: Any) -> None:
                with self._lock:
                    self.statements += 1

        sqlite = engine.dialect.name == "sqlite"

        @event.listens_for(engine, "commit")
        def _commit(connection: Any) -> None:
            # On SQLite, whether this commit syncs the log (synchronous=FULL, 2) or not (NORMAL, 1:
            # gm.store._commit_groups).
            synced = (
                not sqlite or connection.connection.driver_connection.execute("PRAGMA synchronous").fetchone()[0] > 1
            )
            with self._lock:
                self.commits += 1
                self.synced += synced

        @event.listens_for(engine.pool, "checkout")
        def _checkout(*_: Any) -> None:
            self._held.started = time.thread_time()
            with self._lock:
                self.checkouts += 1

        @event.listens_for(engine.pool, "checkin")
        def _checkin(*_: Any) -> None:
            started = getattr(self._held, "started", None)
            if started is not None:
                spent = time.thread_time() - started
                self._held.started = None
                with self._lock:
                    self.db_cpu += spent

    def _sqlite_statement(self, sql: str) -> None:
        if not sql.lstrip().upper().startswith(_NOT_STATEMENTS):
            with self._lock:
                self.statements += 1

    def snapshot(self) -> tuple[int, int, int, float, int, int]:
        with self._lock:
            return self.statements, self.commits, self.checkouts, self.db_cpu, self._round_trips(), self.synced

    def _round_trips(self) -> int:
        """Round trips to PostgreSQL so far (-1 untraced): each Sync (extended protocol, a pipeline included)
        or Query (simple protocol) the client sent, read from libpq's trace."""
        if self._trace is None:
            return -1
        self._trace.seek(0)
        lines = self._trace.read().split(b"\n")
        self._trace.seek(0, os.SEEK_END)
        return sum(1 for line in lines if b"\tF\t" in line and (b"\tSync" in line or b"\tQuery\t" in line))


class _Scripted:
    """A game master and memory keeper answered in process at almost no cost (no HTTP, no schema checks)."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Any:
        from gm.models.completion import Completion, ToolCall, Usage

        self.calls += 1
        last = messages[-1]
        usage = Usage(100, 50, True)
        if tools is None:  # the memory keeper: a note, or a fold
            text = "Mara pressed on at the harbour; the night grew colder and the guards more watchful."
            return Completion(text, [], "stop", usage, 0, 1, {"role": "assistant", "content": text})
        if last["role"] == "tool":
            result = json.loads(str(last["content"]))
            outcome = {"character": result["character"], "result": result["result"], "roll": result["roll"]}
            arguments = {"narration": f"It ends as the dice said: {result['result']}.", "outcomes": [outcome]}
            return _tool_call(Completion, ToolCall, usage, "narrate", arguments, self.calls)
        if "let the dice decide" in str(last["content"]):
            arguments = {"check": "attempt", "character": "Mara", "target": 12, "reason": "a risky attempt"}
            return _tool_call(Completion, ToolCall, usage, "roll_check", arguments, self.calls)
        text = "The quay is quiet; rain drums on the tarpaulins and Jon whistles under his breath. What now?"
        return Completion(text, [], "stop", usage, 0, 1, {"role": "assistant", "content": text})


def _tool_call(completion: Any, tool_call: Any, usage: Any, name: str, arguments: Any, number: int) -> Any:
    text = json.dumps(arguments)
    call_id = f"call_{number}"
    raw = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}],
    }
    return completion(None, [tool_call(call_id, name, text)], "tool_calls", usage, 0, 1, raw)


def _player_text(number: int) -> str:
    if number % 2:
        return f"Round {number}: I pick the lock of the harbour office. It is risky, so let the dice decide."
    return f"Round {number}: I look around the quay and listen."


def _database(kind: str, folder: Path) -> tuple[str, str | None]:
    """A fresh database's URL, and the PostgreSQL database's name to drop afterwards."""
    if kind == "sqlite":
        return f"sqlite:///{folder / 'gm.db'}", None
    import psycopg

    admin = os.environ["GM_TEST_POSTGRES_URL"]
    name = f"gm_store_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return admin.rsplit("/", 1)[0] + "/" + name, name


def _drop(name: str) -> None:
    import psycopg

    with psycopg.connect(os.environ["GM_TEST_POSTGRES_URL"], autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _play(kind: str, rounds: int, window: int, profile: str | None) -> dict[str, Any]:
    sys.path.insert(0, str(HERE / "tests" / "support"))
    from gm.engine.game import Game
    from gm.store import Store
    from worlds import write_world

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        url, dropped = _database(kind, folder)
        try:
            store = Store(url)
            counters = _Counters()
            counters.attach(store.engine)
            game = Game(_Scripted(), store, judging="off")
            story_id = game.start_story(write_world(folder / "harbour"))
            measured = set(range(1, window + 1)) | set(range(rounds - window + 1, rounds + 1))
            profiler = cProfile.Profile(time.process_time) if profile else None  # CPU, not waits
            rows: list[dict[str, Any]] = []
            for number in range(1, rounds + 1):
                before = counters.snapshot()
                cpu, wall = time.process_time(), time.perf_counter()
                if profiler is not None and number in measured:
                    profiler.enable()
                await game.play(story_id, _player_text(number))
                if profiler is not None:
                    profiler.disable()
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                after = counters.snapshot()
                await game.settle()
                settled = counters.snapshot()
                if number in measured:
                    rows.append(
                        {
                            "round": number,
                            "rolled": bool(number % 2),
                            "statements": after[0] - before[0],
                            "commits": after[1] - before[1],
                            "synced": after[5] - before[5],
                            "checkouts": after[2] - before[2],
                            "db_cpu_ms": (after[3] - before[3]) * 1000,
                            "cpu_ms": cpu * 1000,
                            "wall_ms": wall * 1000,
                            "memory_statements": settled[0] - after[0],
                            "memory_commits": settled[1] - after[1],
                            "memory_synced": settled[5] - after[5],
                            "memory_checkouts": settled[2] - after[2],
                            "memory_db_cpu_ms": (settled[3] - after[3]) * 1000,
                            "round_trips": after[4] - before[4] if after[4] >= 0 else -1,
                            "memory_round_trips": settled[4] - after[4] if after[4] >= 0 else -1,
                        }
                    )
            if profiler is not None and profile:
                profiler.dump_stats(profile)
            store.engine.dispose()
        finally:
            if dropped:
                _drop(dropped)
    return {"database": kind, "rounds": rounds, "window": window, "rows": rows}


# The parent: runs workers, alternating trees, and reports.

MEASURES = (
    ("statements", "statements", "{:.0f}"),
    ("commits", "commits", "{:.0f}"),
    ("synced", "commits synced to disk (SQLite)", "{:.0f}"),
    ("checkouts", "checkouts", "{:.0f}"),
    ("db_cpu_ms", "db CPU ms", "{:.2f}"),
    ("cpu_ms", "round CPU ms", "{:.2f}"),
    ("wall_ms", "round wall ms", "{:.2f}"),
    ("memory_statements", "memory keeper statements", "{:.0f}"),
    ("memory_commits", "memory keeper commits", "{:.0f}"),
    ("memory_synced", "memory keeper commits synced (SQLite)", "{:.0f}"),
    ("memory_db_cpu_ms", "memory keeper db CPU ms", "{:.2f}"),
    ("round_trips", "round trips (PostgreSQL, --round-trips)", "{:.0f}"),
    ("memory_round_trips", "memory keeper round trips", "{:.0f}"),
)
TRACE_ENV = "GM_STORE_BENCH_ROUND_TRIPS"


def _worker(python: str, tree: Path, kind: str, arguments: argparse.Namespace) -> dict[str, Any]:
    command = [python, str(Path(__file__).resolve()), "--worker", kind]
    command += ["--rounds", str(arguments.rounds), "--window", str(arguments.window)]
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    if arguments.round_trips:
        environment[TRACE_ENV] = "1"
    done = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the worker failed under {tree}:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _medians(runs: list[dict[str, Any]], rolled: bool, early: bool) -> dict[str, float]:
    """Each measure's median over the window's rounds of every run (rolled or plain; start or end)."""
    values: dict[str, list[float]] = {key: [] for key, _, _ in MEASURES}
    for run in runs:
        for row in run["rows"]:
            if row["rolled"] != rolled or (row["round"] <= run["window"]) != early:
                continue
            for key in values:
                values[key].append(row[key])
    return {key: statistics.median(found) for key, found in values.items() if found}


def _report(results: dict[str, dict[str, list[dict[str, Any]]]], arguments: argparse.Namespace) -> None:
    variants = list(results)
    print(f"# store_bench: {arguments.rounds} rounds, windows of {arguments.window}, {arguments.repeat} run(s) each")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; medians per round\n")
    for kind in arguments.databases:
        for early in (True, False):
            where = f"rounds 1-{arguments.window}" if early else f"last {arguments.window} of {arguments.rounds}"
            for rolled in (True, False):
                print(f"## {kind}, {'rolled' if rolled else 'plain'} rounds, {where}\n")
                header = "| measure | " + " | ".join(variants) + (" | ratio |" if len(variants) == 2 else "")
                print(header)
                print("|---" * (header.count("|") - 1) + "|")
                medians = [_medians(results[variant][kind], rolled, early) for variant in variants]
                for key, label, shape in MEASURES:
                    if any(found.get(key, -1) < 0 for found in medians):
                        continue  # not measured (round trips without --round-trips, or on SQLite)
                    cells = [shape.format(found[key]) for found in medians]
                    line = f"| {label} | " + " | ".join(cells)
                    if len(variants) == 2:
                        before, after = medians[0][key], medians[1][key]
                        line += f" | {after / before:.2f}" if before else " | -"
                    print(line + " |")
                print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--window", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each variant, alternated")
    parser.add_argument("--baseline", type=Path, help="another checkout of gm (with .venv) to compare against")
    parser.add_argument("--databases", nargs="+", default=None, choices=["sqlite", "postgresql"])
    parser.add_argument("--worker", choices=["sqlite", "postgresql"], help=argparse.SUPPRESS)
    parser.add_argument("--profile", help="worker only: write a cProfile of the measured rounds here")
    parser.add_argument(
        "--round-trips", action="store_true", help="count PostgreSQL round trips (libpq's trace: the CPU figures grow)"
    )
    arguments = parser.parse_args()
    if arguments.window * 2 > arguments.rounds:
        parser.error("--rounds must be at least twice --window")
    if arguments.worker:
        print(json.dumps(asyncio.run(_play(arguments.worker, arguments.rounds, arguments.window, arguments.profile))))
        return
    if arguments.databases is None:
        arguments.databases = ["sqlite"] + (["postgresql"] if os.environ.get("GM_TEST_POSTGRES_URL") else [])
    elif "postgresql" in arguments.databases and not os.environ.get("GM_TEST_POSTGRES_URL"):
        parser.error("--databases postgresql needs GM_TEST_POSTGRES_URL: a server it may create databases on")
    trees = {"this tree": (sys.executable, HERE)}
    if arguments.baseline:
        base = arguments.baseline.resolve()
        trees = {"baseline": (str(base / ".venv" / "bin" / "python"), base), **trees}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {k: [] for k in arguments.databases} for name in trees}
    for repetition in range(arguments.repeat):
        for kind in arguments.databases:
            for name, (python, tree) in trees.items():
                print(f"run {repetition + 1}: {kind} under {name} ({tree})", file=sys.stderr)
                results[name][kind].append(_worker(python, tree, kind, arguments))
    _report(results, arguments)


if __name__ == "__main__":
    main()
