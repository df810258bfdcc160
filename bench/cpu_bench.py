"""Framework CPU per round: what one round costs the process that plays it, at round 1 and at round 1,000.

What it measures
----------------
A player process plays two stories of the tests' harbour world (tests/support/worlds.py's `write_world`),
one with the judge on (the default: a third model call on rolled rounds) and one with it off, a
round of each in turn, on a SQLite file (or PostgreSQL with `--postgres URL`, a fresh database made
and dropped), through `gm.engine.game.Game` with the real `ModelClient` (the openai client over loopback
HTTP). The fake model (bench/fake_server.py, `round` script: bench/round_bench.py's answers) runs
in a process of its own and answers at once, so the player process's CPU time is gm's alone: the
round engine, the database (and any threads it uses), the openai client and this side of HTTP.

Odd rounds roll a check (roll_check, then narrate with the honest outcome: 2 game-master calls, plus
the judge's when it is on); even rounds end in plain text (1 call). After each `game.play` the
player awaits `game.settle(flush=False)`, timed apart: the memory keeper's CPU, reported on its own.
`flush=False` waits for the keeper's work that round started, without writing a batch not yet due,
as a server runs it (a tree from before the batches has no `flush`, and settles each round).

For each round: CPU ms = `time.process_time()` (every thread of the player process) across
`game.play`; wall ms = `time.perf_counter()` across it (which also holds the fake's own time and
the scheduler's). Reported as medians and p95 (nearest rank), rolled and plain apart, in a window
at round 1 (rounds 1-50) and at round 1,000 (rounds 951-1000); the memory keeper's CPU per round
as a mean over all rounds (it folds every few rounds, so a mean says what it costs).

Side by side: `--baseline /work/base` plays the same stories in a second player process run by
that tree's Python (`/work/base/.venv/bin/python`: the code before issue 15) on its own database.
The two players take turns by chunks of 25 rounds (who goes first alternates), so both see the
same machine; they use only the API both trees have (Game, ModelClient, ModelSettings, Store).

How to run
----------
From the project root, with the virtualenv active::

    python bench/cpu_bench.py                             # 1,000 rounds a story, this tree only
    python bench/cpu_bench.py --baseline /work/base       # before and after, side by side
    python bench/cpu_bench.py --quick --baseline /work/base   # 120 rounds, windows of 30
    python bench/cpu_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test

The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import inspect
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FULL_ROUNDS = 1000
QUICK_ROUNDS = 120
CHUNK = 25
JUDGES = ("on", "off")
ROLL_MARKER = "let the dice decide"  # bench/round_bench.py's fake rolls when the player's text says this
PLACES = ("the harbour office", "the customs shed", "the tide gate", "the ropewalk", "the salt warehouse")


def player_text(number: int) -> str:
    """Odd rounds ask for a roll, even rounds do not; the fake reads the round's number from the start."""
    place = PLACES[number % len(PLACES)]
    if number % 2:
        return f"Round {number}: I try to pick the lock of {place}. It is risky, so {ROLL_MARKER}."
    return f"Round {number}: I look around {place} and listen for the watch."


# The player (a child process, run by either tree's Python)


async def player(base_url: str, world: str, database: str, settle_every: str = "1") -> None:
    """Play rounds as the parent asks on stdin ('play FIRST LAST'), one JSON line per round on stdout."""
    try:  # the front door; a tree from before it has these in their own modules
        from gm import Game, ModelClient, ModelSettings, Store
    except ImportError:
        from gm.game import Game
        from gm.model import ModelClient, ModelSettings
        from gm.store import Store

    client = ModelClient(ModelSettings(base_url, "bench-key", "fake-model"))
    store = Store(database)
    game = Game(client, store)
    stories = {judge: game.start_story(world, settings={"judge": judge}) for judge in JUDGES}
    batched = "flush" in inspect.signature(game.settle).parameters  # trees before the keeper's batches: no flush
    settle = functools.partial(game.settle, flush=False) if batched else game.settle
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line or line.startswith("quit"):
            break
        _, first, last = line.split()
        for number in range(int(first), int(last) + 1):
            for judge, story_id in stories.items():
                cpu, wall = time.process_time(), time.perf_counter()
                result = await game.play(story_id, player_text(number))
                played_cpu, played_wall = time.process_time(), time.perf_counter()
                if number % int(settle_every) == 0:
                    await settle()
                row = {
                    "judge": judge,
                    "n": number,
                    "rolled": bool(getattr(result, "rolls", ())),
                    "refusals": len(getattr(result, "refusals", ())),
                    "cpu": played_cpu - cpu,
                    "wall": played_wall - wall,
                    "settle_cpu": time.process_time() - played_cpu,
                    "settle_wall": time.perf_counter() - played_wall,
                }
                print(json.dumps(row), flush=True)
        print(json.dumps({"done": True}), flush=True)
    await client.aclose()
    store.engine.dispose()


# The parent: the fake, the players, the turns


@dataclass
class Player:
    name: str
    process: subprocess.Popen[str]

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def rows(self) -> Iterator[dict[str, Any]]:
        """Lines up to the next 'done' (or 'ready')."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            row = json.loads(line)
            if row.get("done") or row.get("ready"):
                return
            yield row
        raise RuntimeError(f"the {self.name} player stopped (exit code {self.process.wait()})")


@contextmanager
def fake_process() -> Iterator[str]:
    """bench/fake_server.py's `round` script in its own process; its base URL."""
    from fake_server import fake_process as fake_server_process

    with fake_server_process("round") as (_, port):
        yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def player_process(
    name: str, python: str, base_url: str, world: Path, database: str, log: IO[str], settle_every: int
) -> Iterator[Player]:
    command = [python, str(HERE / "cpu_bench.py"), "--child", base_url, str(world), database, str(settle_every)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("GM_DATABASE_URL", None)
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=str(ROOT), env=env
    )
    player = Player(name, process)
    try:
        list(player.rows())  # 'ready'
        yield player
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        try:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait(timeout=30)


@contextmanager
def database(kind: str, folder: Path, name: str) -> Iterator[str]:
    """A SQLite file in `folder`, or a fresh PostgreSQL database on the server `kind` names (dropped after)."""
    if kind == "sqlite":
        yield f"sqlite:///{folder / f'{name}.db'}"
        return
    import psycopg

    made = f"gm_cpu_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(kind, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{made}"')
    try:
        yield f"{kind.rsplit('/', 1)[0]}/{made}"
    finally:
        with psycopg.connect(kind, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{made}" WITH (FORCE)')


def run(rounds: int, variants: dict[str, str], kind: str, settle_every: int) -> dict[str, list[dict[str, Any]]]:
    """Every variant's rows, played in turns of CHUNK rounds; the first to play alternates."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from worlds import write_world

    results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="gm-cpu-bench-") as name, ExitStack() as stack:
        folder = Path(name)
        world = write_world(folder / "harbor")
        base_url = stack.enter_context(fake_process())
        log = stack.enter_context((folder / "players.log").open("w"))
        players = []
        for variant, python in variants.items():
            url = stack.enter_context(database(kind, folder, variant))
            player = player_process(variant, python, base_url, world, url, log, settle_every)
            players.append(stack.enter_context(player))
        started = time.perf_counter()
        for turn, first in enumerate(range(1, rounds + 1, CHUNK)):
            last = min(rounds, first + CHUNK - 1)
            for player in players if turn % 2 == 0 else players[::-1]:
                player.send(f"play {first} {last}")
                results[player.name] += list(player.rows())
            if last % 100 == 0 or last == rounds:
                print(f"  round {last}/{rounds}, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        for player in players:
            player.send("quit")
    return results


# Figures


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def windows_for(rounds: int) -> list[tuple[str, int, int]]:
    width = min(50, rounds // 4)
    return [
        (f"round 1 ({1}-{width})", 1, width),
        (f"round {rounds:,} ({rounds - width + 1}-{rounds})", rounds - width + 1, rounds),
    ]


def pick(rows: Sequence[dict[str, Any]], judge: str, rolled: bool, first: int, last: int) -> list[dict[str, Any]]:
    return [r for r in rows if r["judge"] == judge and r["rolled"] is rolled and first <= r["n"] <= last]


def round_table(results: dict[str, list[dict[str, Any]]], rounds: int) -> str:
    names = list(results)
    lines = [
        "| judge | window | kind | variant | n | CPU median (ms) | CPU p95 (ms) | wall median (ms) | wall p95 (ms) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for judge in JUDGES:
        for window, first, last in windows_for(rounds):
            for kind, rolled in (("rolled", True), ("plain", False)):
                for name in names:
                    chosen = pick(results[name], judge, rolled, first, last)
                    if not chosen:
                        continue
                    cpu, wall = [r["cpu"] for r in chosen], [r["wall"] for r in chosen]
                    lines.append(
                        f"| {judge} | {window} | {kind} | {name} | {len(chosen)} | {ms(statistics.median(cpu))} "
                        f"| {ms(p95(cpu))} | {ms(statistics.median(wall))} | {ms(p95(wall))} |"
                    )
    return "\n".join(lines)


def ratio_table(results: dict[str, list[dict[str, Any]]], rounds: int, before: str, after: str) -> str:
    lines = [
        "| judge | window | kind | CPU before (ms) | CPU after (ms) | after / before |",
        "|---|---|---|---:|---:|---:|",
    ]
    for judge in JUDGES:
        for window, first, last in windows_for(rounds):
            for kind, rolled in (("rolled", True), ("plain", False)):
                old = [r["cpu"] for r in pick(results[before], judge, rolled, first, last)]
                new = [r["cpu"] for r in pick(results[after], judge, rolled, first, last)]
                if old and new:
                    a, b = statistics.median(old), statistics.median(new)
                    lines.append(f"| {judge} | {window} | {kind} | {ms(a)} | {ms(b)} | {b / a:.2f}x |")
    return "\n".join(lines)


def keeper_table(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = [
        "| variant | judge | rounds | keeper CPU mean (ms/round) | median (ms) | p95 (ms) | keeper wall mean (ms) "
        "| play + keeper CPU mean (ms/round) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rows in results.items():
        for judge in JUDGES:
            cpu = [r["settle_cpu"] for r in rows if r["judge"] == judge]
            wall = [r["settle_wall"] for r in rows if r["judge"] == judge]
            total = [r["cpu"] + r["settle_cpu"] for r in rows if r["judge"] == judge]
            lines.append(
                f"| {name} | {judge} | {len(cpu):,} | {ms(statistics.fmean(cpu))} | {ms(statistics.median(cpu))} "
                f"| {ms(p95(cpu))} | {ms(statistics.fmean(wall))} | {ms(statistics.fmean(total))} |"
            )
    return "\n".join(lines)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, help=f"rounds a story (default {FULL_ROUNDS}; --quick {QUICK_ROUNDS})")
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_ROUNDS} rounds")
    parser.add_argument("--baseline", type=Path, help="a tree whose .venv/bin/python plays the 'before' side")
    parser.add_argument("--postgres", help="a PostgreSQL server to play on (a fresh database; default SQLite)")
    parser.add_argument(
        "--settle-every",
        type=int,
        default=1,
        help="await game.settle() after every N-th round only (default 1); the keeper's work between runs in "
        "the background, inside game.play's CPU: compare the 'play + keeper' means to see what batching saves",
    )
    arguments = parser.parse_args(argv)
    if arguments.rounds is None:
        arguments.rounds = QUICK_ROUNDS if arguments.quick else FULL_ROUNDS
    if arguments.rounds < 8:
        parser.error("--rounds must be at least 8")
    if arguments.settle_every < 1:
        parser.error("--settle-every must be at least 1")
    if arguments.baseline is not None and not (arguments.baseline / ".venv" / "bin" / "python").is_file():
        parser.error(f"--baseline {arguments.baseline} has no .venv/bin/python")
    return arguments


def _stop_on_term(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def main(argv: Sequence[str] | None = None) -> None:
    if sys.argv[1:2] == ["--child"]:
        asyncio.run(player(*sys.argv[2:6]))
        return
    signal.signal(signal.SIGTERM, _stop_on_term)  # children and databases are cleaned up on kill too
    arguments = parse_arguments(argv)
    rounds: int = arguments.rounds
    variants = {"after": sys.executable}
    if arguments.baseline is not None:
        variants = {"before": str(arguments.baseline / ".venv" / "bin" / "python"), **variants}
    started = time.perf_counter()
    results = run(rounds, variants, arguments.postgres or "sqlite", arguments.settle_every)
    where = "PostgreSQL" if arguments.postgres else "SQLite (synchronous=FULL, a file in a temporary folder)"
    print("# gm framework CPU per round\n")
    print(
        f"Two stories of {rounds:,} rounds (judge on, judge off) per variant on {where}; the real openai client "
        "over loopback HTTP; the fake model (bench/fake_server.py) in its own process, answering at once. "
        "CPU = the player process's CPU time (all its threads) across `game.play`; wall = its wall time. "
        f"Variants: {', '.join(f'{k} = `{v}`' for k, v in variants.items())}; turns of {CHUNK} rounds, alternating.\n"
    )
    print(round_table(results, rounds) + "\n")
    if "before" in results:
        print("## Before and after (CPU medians)\n")
        print(ratio_table(results, rounds, "before", "after") + "\n")
    every = "each round" if arguments.settle_every == 1 else f"every {arguments.settle_every} rounds"
    print(f"## The memory keeper (`game.settle(flush=False)` after {every}, timed apart)\n")
    print(keeper_table(results) + "\n")
    refusals = {name: sum(r["refusals"] for r in rows) for name, rows in results.items()}
    unrolled = {name: sum(1 for r in rows if r["n"] % 2 and not r["rolled"]) for name, rows in results.items()}
    print(f"Refusals: {refusals}; odd rounds that rolled nothing: {unrolled}.\n")
    print(
        f"_Python {platform.python_version()}, {os.cpu_count()} CPUs, {datetime.date.today().isoformat()}, "
        f"{time.perf_counter() - started:.0f} s; 1-minute load average {os.getloadavg()[0]:.2f} at the end._"
    )


if __name__ == "__main__":
    main()
