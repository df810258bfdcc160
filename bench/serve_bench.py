"""Load test of `gm serve`: stories played back to back, players who think between messages, and several processes.

What it measures
----------------
`gm serve` subprocesses (exactly as deployed: `python -m gm.cli serve`, uvicorn, one worker each)
with the repository's `worlds/` folder, on SQLite and on PostgreSQL, against a fake model in its own
process (bench/fake_server.py, `serve` script: one asyncio HTTP/1.1 server with kept connections)
that answers every chat completion after a fixed delay and serves the game master, the judge and
the memory keeper. The clients are coroutines in this process over raw asyncio streams, a kept
connection each, so 1,000 players cost the bench little; the bench's and the fake's CPU are
reported beside the server's, to show neither is the bottleneck.

Every round's player text carries a marker `[L<level> s<story> r<round>]`. Odd rounds roll a check
(the game master calls `roll_check` for lockwork, then `narrate` with the honest outcome, and the
judge reads it: 3 model calls with the judge on, the server's default), even rounds end in plain
text (1 call). The fake counts the game-master and judge calls of each marker.

Scenarios, each on each database:

- Backlogged: 1, 10 and 100 stories at once (`--levels`; `--levels` alone skips them; `--loads N` plays
  each level N times in a row on the same servers, new stories each time: whether a second load keeps more), each
  playing rounds back to back for `--seconds` (default 12) on one process. This is the server's
  throughput when it is the bottleneck.
- Players (`--players 1000 --think 10 --model-latency 1`): each player sends a message, waits for
  the answer, then thinks for a random pause drawn uniformly from 0.5x to 1.5x `--think` seconds
  (mean `--think`) before the next, as a person would. The players start spread over the first
  `--think` seconds; figures count the rounds sent after that ramp, over `--players-seconds`
  (default 60). The fake's delay is `--model-latency` here.
- Processes (`--processes N`, PostgreSQL only: SQLite has one writer, and is for one process): the
  backlogged level of 100 stories (and the players, when asked for) on N `gm serve` processes on
  one database, stories spread evenly over them, against the same on one process: the scaling ratio.

Reported: rounds/s (rounds answered 200 / the scenario's wall time); added latency p50 and p99
(nearest rank): the round's latency at the client minus the fake's delay times the model calls the
round made (game master and judge, as the fake counted them): the API, round engine, database,
openai client and both loopback hops; server CPU (the `gm serve` processes' CPU time over wall
time, 100% = one core), the bench's and the fake's; server CPU per round (the servers' CPU time over
the scenario, ramp and memory keeper included, divided by every round they answered: what the
server's throughput follows); server RSS (the servers' resident memory once the scenario and its
memory keeper are done; a server plays every scenario of a run, so this grows with the stories made);
probe p50/p99: the latency of `GET /api/none` (a 404 from the app, no database) sent every 50 ms on its
own connection: the event loop's stalls. Story-row updates per round (PostgreSQL): the rows of `stories`
PostgreSQL updated over the scenario (pg_stat_user_tables.n_tup_upd, read once the servers' connections have
reported theirs) over every round answered; each is a new version of a story row. RSS before / peak / end /
idle: the servers' resident memory before the scenario's stories are made, the most seen while it played
(read every half second), once it and its memory keeper are done, and `IDLE_AFTER` seconds later (a quiet
server gives its allocator's free memory back: gm.web.process).
The memory keeper runs after each round is answered, on the same server; its calls wait the delay
too, are in no round's latency, and each scenario waits for them to finish before the next starts.

Side by side: `--baseline /work/base` runs a second set of servers with that tree's Python
(`/work/base/.venv/bin/python -m gm.cli serve`: the code before issue 15) and its gm (PYTHONPATH is set
to the tree, so a tree exported with `git archive` beside a symlinked .venv serves its own code), each
variant on its own database; every scenario is played by both in turn (who goes first alternates), so before and
after come from one run on one machine.

How to run
----------
From the project root, with the virtualenv active::

    python bench/serve_bench.py                     # backlogged, SQLite (+ PostgreSQL if GM_TEST_POSTGRES_URL)
    python bench/serve_bench.py --quick             # smoke run: 2 s a level, 15 s of players
    python bench/serve_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test \\
        --players 1000 --think 10 --model-latency 1 --processes 2 --baseline /work/base

Many stories (issue 40; 1,000 stories back to back, the fake answering in 200 ms, 2 processes on
PostgreSQL)::

    python bench/serve_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test \\
        --levels 100 1000 --delay 0.2 --seconds 30 --processes 2 --baseline /tmp/base

PostgreSQL is used when `--postgres` or GM_TEST_POSTGRES_URL names a server: fresh databases are
created there for the run and dropped after. `--sqlite-only` skips it, `--postgres-only` skips SQLite.
Everything runs on 127.0.0.1. The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import math
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serve_processes import (
    Connection,
    Fake,
    Server,
    Setup,
    postgres_database,
    start_fake,
    start_servers,
    story_updates,
)

LEVELS = (1, 10, 100)
FULL_SECONDS = 12.0
QUICK_SECONDS = 2.0
PLAYERS_SECONDS = 60.0
QUICK_PLAYERS_SECONDS = 15.0
MAX_ROUNDS_PER_STORY = 1000
DELAY = 0.05
REQUEST_SECONDS = 120.0
GRACE_SECONDS = 30.0  # after the scenario's time, rounds still waiting this long are given up on (and reported)
PROBE_EVERY = 0.05
IDLE_AFTER = 8.0  # seconds the servers stay idle after a scenario before their resident memory is read again
CREATORS = 20  # connections creating a scenario's stories before its clock starts
LEVEL_INDEX = itertools.count()  # one marker space for every scenario of the run


# Scenarios


@dataclass(slots=True)
class Played:
    marker: str
    number: int
    sent: float
    seconds: float


@dataclass
class Result:
    """One scenario played by one variant."""

    variant: str
    database: str
    processes: int
    kind: str  # "backlogged" or "players"
    clients: int
    wall: float = 0.0
    played: list[Played] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    server_cpu: float = 0.0
    server_cpu_seconds: float = 0.0
    answered: int = 0  # every round answered 200, the ramp's too: what the server's CPU time was spent on
    bench_cpu: float = 0.0
    fake_cpu: float = 0.0
    probe: list[float] = field(default_factory=list)
    unfinished: list[float] = field(default_factory=list)  # seconds waited by rounds given up on at the end
    calls: dict[str, list[int]] = field(default_factory=dict)
    keeper_calls: int = 0
    delay: float = 0.0
    began: float = 0.0  # perf_counter at the scenario's start (rounds' `sent` are on the same clock)
    rss: float = 0.0  # the servers' resident memory once the scenario and its memory keeper are done (MiB)
    rss_before: float = 0.0  # ... before the scenario's stories were made
    rss_peak: float = 0.0  # ... the most seen while it played (read every half second)
    rss_idle: float = 0.0  # ... after the servers were idle IDLE_AFTER seconds more
    updates: int = -1  # story rows updated over the scenario (PostgreSQL's pg_stat_user_tables; -1: not counted)

    def added(self) -> tuple[list[float], list[str]]:
        """Each counted round's latency beyond the fake's delays; and rounds with unexpected call counts."""
        values, odd = [], []
        for played in self.played:
            master, judge = self.calls.get(played.marker, (0, 0))
            if master != (2 if played.number % 2 else 1):
                odd.append(f"{played.marker}: {master} game-master calls")
            values.append(played.seconds - self.delay * (master + judge))
        # A round given up on gained at least what it waited beyond the most its model calls could take (3).
        values += [waited - 3 * self.delay for waited in self.unfinished]
        return values, odd


async def create_stories(servers: Sequence[Server], count: int) -> list[tuple[Server, str, str]]:
    """`count` stories spread evenly over the servers, made a few at a time."""
    made: list[tuple[Server, str, str]] = []
    queue = list(range(count))

    async def creator() -> None:
        connections = {server.port: Connection(server.port) for server in servers}
        while queue:
            index = queue.pop()
            server = servers[index % len(servers)]
            status, body = await connections[server.port].request("POST", "/api/stories", {"world": "harbour-heist"})
            if status != 201:
                raise RuntimeError(f"creating a story answered {status}: {body}")
            made.append((server, body["story"]["id"], body["token"]))
        for connection in connections.values():
            connection.close()

    await asyncio.gather(*(creator() for _ in range(min(CREATORS, count))))
    return made


async def scenario(
    setup: Setup,
    fake: Fake,
    processes: int,
    clients: int,
    seconds: float,
    think: float | None,
    delay: float,
    grace: float = GRACE_SECONDS,
) -> Result:
    """`clients` stories on the first `processes` servers: back to back (think None), or players who think."""
    servers = setup.servers[:processes]
    kind = "backlogged" if think is None else "players"
    result = Result(setup.variant, setup.database, processes, kind, clients, delay=delay)
    level = next(LEVEL_INDEX)
    counting = setup.url.startswith("postgresql")
    updates_before = await asyncio.to_thread(story_updates, setup.url) if counting else 0
    result.rss_before = result.rss_peak = sum(server.rss_mib() for server in servers)
    stories = await create_stories(servers, clients)
    print(f"  {setup.variant} {setup.database}: {clients} stories made, the clock starts", file=sys.stderr, flush=True)
    ramp = 0.0 if think is None else think
    rng = random.Random(level)
    finished = asyncio.Event()

    async def story(index: int, server: Server, story_id: str, token: str, start: float, deadline: float) -> None:
        connection = Connection(server.port)
        waiting = 0.0  # when the round in flight was sent, if one is
        try:
            await asyncio.sleep(max(0.0, start - time.perf_counter()))
            number = 1
            while time.perf_counter() < deadline and number <= MAX_ROUNDS_PER_STORY:
                marker = f"[L{level} s{index} r{number}]"
                text = f"{marker} I work at the strongroom lock, quietly."
                sent = waiting = time.perf_counter()
                status, body = await connection.request(
                    "POST", f"/api/stories/{story_id}/messages", {"text": text}, token
                )
                took, waiting = time.perf_counter() - sent, 0.0
                if status != 200:
                    result.errors.append(f"{marker}: {status} {body}")
                    break
                result.answered += 1
                if sent >= began + ramp:
                    result.played.append(Played(marker, number, sent, took))
                number += 1
                if think is not None:
                    await asyncio.sleep(think * rng.uniform(0.5, 1.5))
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            result.errors.append(f"story {index}: {type(error).__name__}: {error}")
        except asyncio.CancelledError:  # given up on after the grace time
            if waiting:
                result.unfinished.append(time.perf_counter() - waiting)
        finally:
            connection.close()
            ends.append(time.perf_counter())

    async def probe() -> None:
        connections = [Connection(server.port) for server in servers]
        try:
            for turn in itertools.count():
                if finished.is_set():
                    return
                sent = time.perf_counter()
                await connections[turn % len(connections)].request("GET", "/api/none")
                if sent >= began + ramp:
                    result.probe.append(time.perf_counter() - sent)
                if turn % 10 == 0:
                    result.rss_peak = max(result.rss_peak, sum(server.rss_mib() for server in servers))
                await asyncio.sleep(PROBE_EVERY)
        except (OSError, asyncio.IncompleteReadError, ValueError) as error:
            result.errors.append(f"probe: {type(error).__name__}: {error}")
        finally:
            for connection in connections:
                connection.close()

    ends: list[float] = []
    await fake.reset(delay)
    fake_before = (await fake.stats())["cpu"]
    cpu_before, own_before = sum(s.cpu_seconds() for s in servers), time.process_time()
    began = result.began = time.perf_counter()
    deadline = began + ramp + seconds
    tasks = [
        asyncio.create_task(story(i, server, sid, token, began + rng.uniform(0, ramp), deadline))
        for i, (server, sid, token) in enumerate(stories)
    ]
    prober = asyncio.create_task(probe())
    _, pending = await asyncio.wait(tasks, timeout=ramp + seconds + grace)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    finished.set()
    await prober
    result.wall = (max(ends) if ends else time.perf_counter()) - began - ramp
    result.server_cpu_seconds = sum(s.cpu_seconds() for s in servers) - cpu_before
    result.server_cpu = result.server_cpu_seconds / (result.wall + ramp)
    result.bench_cpu = (time.process_time() - own_before) / (result.wall + ramp)
    stats = await fake.stats()
    result.fake_cpu = (stats["cpu"] - fake_before) / (result.wall + ramp)
    await fake.drain()
    stats = await fake.stats()
    result.calls, result.keeper_calls = stats["calls"], stats["keeper"]
    result.rss = sum(server.rss_mib() for server in servers)
    await asyncio.sleep(IDLE_AFTER)
    result.rss_idle = sum(server.rss_mib() for server in servers)
    if counting:
        result.updates = await asyncio.to_thread(story_updates, setup.url) - updates_before
    result.errors += [f"fake: {failure}" for failure in stats["failures"]]
    for server in servers:
        if server.process.poll() is not None:
            raise RuntimeError(f"gm serve exited during the run:\n{server.output()}")
    return result


# Tables


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)] if ordered else float("nan")


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f}"


def given_up(result: Result) -> str:
    return f" (+{len(result.unfinished):,} given up)" if result.unfinished else ""


def per_round(result: Result) -> str:
    """The servers' CPU time over the scenario (ramp and memory keeper included) per round answered."""
    return ms(result.server_cpu_seconds / result.answered) if result.answered else "-"


def updates(result: Result) -> str:
    """Story rows updated per round answered (PostgreSQL), the warm-up's and creation's none."""
    return f"{result.updates / result.answered:.2f}" if result.updates >= 0 and result.answered else "-"


def rate(result: Result) -> float:
    return len(result.played) / result.wall if result.wall > 0 else 0.0


def table(results: Sequence[Result]) -> str:
    lines = [
        "| variant | database | processes | scenario | rounds | rounds/s | added p50 (ms) | added p99 (ms) "
        "| probe p50 / p99 (ms) | server CPU | server CPU/round (ms) | story-row updates/round "
        "| RSS before / peak / end / idle (MiB) | bench CPU | fake CPU |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        added, _ = r.added()
        what = f"{r.clients} stories back to back" if r.kind == "backlogged" else f"{r.clients:,} players"
        probe = f"{ms(statistics.median(r.probe))} / {ms(percentile(r.probe, 0.99))}" if r.probe else "-"
        middle = f"{ms(statistics.median(added))} | {ms(percentile(added, 0.99))}" if added else "- | -"
        lines.append(
            f"| {r.variant} | {r.database} | {r.processes} | {what} | {len(r.played):,}{given_up(r)} | {rate(r):.1f} "
            f"| {middle} "
            f"| {probe} | {r.server_cpu * 100:.0f}% | {per_round(r)} | {updates(r)} "
            f"| {r.rss_before:.0f} / {r.rss_peak:.0f} / {r.rss:.0f} / {r.rss_idle:.0f} "
            f"| {r.bench_cpu * 100:.0f}% | {r.fake_cpu * 100:.0f}% |"
        )
    return "\n".join(lines)


def ratio(new: float, old: float) -> str:
    """`new / old` as a ratio, or a dash where `old` played no round (every round given up on)."""
    return f"{new / old:.2f}x" if old else "-"


def scaling_table(results: Sequence[Result], processes: int) -> str:
    lines = [
        f"| variant | database | scenario | 1 process: rounds/s | {processes} processes: rounds/s | scaling "
        f"| 1 process: added p99 (ms) | {processes} processes: added p99 (ms) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for many in (r for r in results if r.processes == processes):
        one = next(
            r
            for r in results
            if (r.variant, r.database, r.kind, r.clients, r.processes)
            == (many.variant, many.database, many.kind, many.clients, 1)
        )
        lines.append(
            f"| {many.variant} | {many.database} | {many.kind}, {many.clients:,} | {rate(one):.1f} | {rate(many):.1f} "
            f"| {ratio(rate(many), rate(one))} | {ms(percentile(one.added()[0], 0.99))} "
            f"| {ms(percentile(many.added()[0], 0.99))} |"
        )
    return "\n".join(lines)


def comparison_table(results: Sequence[Result]) -> str:
    lines = [
        "| database | processes | scenario | rounds/s before | rounds/s after | after / before "
        "| added p99 before (ms) | added p99 after (ms) | probe p99 before (ms) | probe p99 after (ms) |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for after in (r for r in results if r.variant == "after"):
        key = (after.database, after.processes, after.kind, after.clients)
        before = next(
            (r for r in results if r.variant == "before" and (r.database, r.processes, r.kind, r.clients) == key), None
        )
        if before is None:
            continue
        lines.append(
            f"| {after.database} | {after.processes} | {after.kind}, {after.clients:,} | {rate(before):.1f} "
            f"| {rate(after):.1f} | {ratio(rate(after), rate(before))} | {ms(percentile(before.added()[0], 0.99))} "
            f"| {ms(percentile(after.added()[0], 0.99))} | {ms(percentile(before.probe, 0.99))} "
            f"| {ms(percentile(after.probe, 0.99))} |"
        )
    return "\n".join(lines)


# The run


async def run_database(setups: list[Setup], fake: Fake, arguments: argparse.Namespace) -> list[Result]:
    results: list[Result] = []
    turn = itertools.count()

    async def each(processes: int, clients: int, seconds: float, think: float | None) -> None:
        delay = arguments.delay if think is None else arguments.model_latency
        order = setups if next(turn) % 2 == 0 else setups[::-1]
        for setup in order:
            if len(setup.servers) < processes:
                continue
            what = f"{clients} {'players' if think else 'stories'} on {processes} process(es)"
            print(f"  {setup.variant} {setup.database}: {what} ...", file=sys.stderr, flush=True)
            result = await scenario(setup, fake, processes, clients, seconds, think, delay)
            results.append(result)
            print(
                f"  {setup.variant} {setup.database}: {what}: {len(result.played)} rounds, {rate(result):.1f}/s, "
                f"{len(result.errors)} errors",
                file=sys.stderr,
                flush=True,
            )

    for setup in setups:  # imports, pools, caches: not reported
        warm = await scenario(setup, fake, len(setup.servers), 2 * len(setup.servers), 1.0, None, arguments.delay, 60.0)
        if warm.errors:
            raise RuntimeError(f"warm-up failed: {warm.errors[:3]}\n{setup.servers[0].output()}")
    for count in arguments.levels:
        for _ in range(arguments.loads):  # on the same servers, each time with stories of its own
            await each(1, count, arguments.seconds, None)
    if arguments.players:
        await each(1, arguments.players, arguments.players_seconds, arguments.think)
    processes = max(len(setup.servers) for setup in setups)
    if processes > 1 and arguments.levels:
        await each(processes, max(arguments.levels), arguments.seconds, None)
        if arguments.players:
            await each(processes, arguments.players, arguments.players_seconds, arguments.think)
    return results


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_SECONDS:.0f} s a level")
    parser.add_argument(
        "--seconds", type=float, help=f"how long each backlogged level plays (default {FULL_SECONDS:.0f})"
    )
    parser.add_argument(
        "--levels", type=int, nargs="*", default=list(LEVELS), help="stories at once (default 1 10 100; none: skip)"
    )
    parser.add_argument(
        "--loads",
        type=int,
        default=1,
        help="play each backlogged level this many times in a row on the same servers (RSS after a second load)",
    )
    parser.add_argument("--delay", type=float, default=DELAY, help=f"the fake's delay, backlogged ({DELAY} s)")
    parser.add_argument("--players", type=int, default=0, help="players who think between messages (0: none)")
    parser.add_argument("--think", type=float, default=10.0, help="a player's mean pause, seconds (uniform 0.5x-1.5x)")
    parser.add_argument("--model-latency", type=float, default=1.0, help="the fake's delay for the players, seconds")
    parser.add_argument(
        "--players-seconds", type=float, help=f"how long the players play after the ramp ({PLAYERS_SECONDS:.0f})"
    )
    parser.add_argument("--processes", type=int, default=1, help="also play on N gm serve processes (PostgreSQL)")
    parser.add_argument("--baseline", type=Path, help="a tree whose .venv/bin/python serves the 'before' side")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("GM_TEST_POSTGRES_URL"),
        help="a PostgreSQL server to create the run's databases on (default GM_TEST_POSTGRES_URL)",
    )
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL")
    parser.add_argument("--postgres-only", action="store_true", help="skip SQLite (needs --postgres)")
    parser.add_argument(
        "--rounds-out", type=Path, help="write every counted round (when sent, its added latency) here, JSON lines"
    )
    arguments = parser.parse_args(argv)
    if arguments.seconds is None:
        arguments.seconds = QUICK_SECONDS if arguments.quick else FULL_SECONDS
    if arguments.players_seconds is None:
        arguments.players_seconds = QUICK_PLAYERS_SECONDS if arguments.quick else PLAYERS_SECONDS
    if not 0 < arguments.seconds <= 600 or not 0 < arguments.players_seconds <= 3600:
        parser.error("--seconds and --players-seconds must be more than 0 (and at most 600 and 3600)")
    if arguments.players < 0 or arguments.think <= 0 or arguments.model_latency < 0 or arguments.delay < 0:
        parser.error("--players, --think, --model-latency and --delay cannot be negative (--think above 0)")
    if not 1 <= arguments.loads <= 10:
        parser.error("--loads must be from 1 to 10")
    if not 1 <= arguments.processes <= 16:
        parser.error("--processes must be from 1 to 16")
    if arguments.baseline is not None and not (arguments.baseline / ".venv" / "bin" / "python").is_file():
        parser.error(f"--baseline {arguments.baseline} has no .venv/bin/python")
    if arguments.sqlite_only and arguments.postgres_only:
        parser.error("--sqlite-only and --postgres-only exclude each other")
    if arguments.postgres_only and not arguments.postgres:
        parser.error("--postgres-only needs --postgres or GM_TEST_POSTGRES_URL")
    if arguments.sqlite_only:
        arguments.postgres = None
    return arguments


async def run_all(arguments: argparse.Namespace, folder: Path) -> tuple[list[Result], dict[str, str]]:
    pythons = {"after": sys.executable}
    if arguments.baseline is not None:
        pythons = {"before": str(arguments.baseline / ".venv" / "bin" / "python"), **pythons}
    results: list[Result] = []
    with ExitStack() as stack:
        fake = stack.enter_context(start_fake())
        databases = [] if arguments.postgres_only else [("SQLite", "sqlite")]
        databases += [("PostgreSQL", arguments.postgres)] if arguments.postgres else []
        for name, kind in databases:
            processes = arguments.processes if kind != "sqlite" else 1
            setups = []
            for variant, python in pythons.items():
                if kind == "sqlite":
                    url = f"sqlite:///{folder / f'{variant}.db'}"
                else:
                    url = stack.enter_context(postgres_database(kind))
                # A baseline tree's servers import gm from that tree (PYTHONPATH), whatever this process imports.
                extra = {"PYTHONPATH": str(arguments.baseline)} if variant == "before" else {}
                servers = start_servers(python, url, fake, folder, processes, extra)
                setups.append(Setup(variant, name, stack.enter_context(servers), url))
            results += await run_database(setups, fake, arguments)
            for setup in setups:
                setup.stop()
    return results, pythons


def write_rounds(results: Sequence[Result], path: Path) -> None:
    """Each counted round of each scenario as a JSON line: when it was sent (seconds into the scenario, ramp
    included) and the latency gm added, to see when a scenario's slow rounds came (`--rounds-out`)."""
    with path.open("w") as out:
        for result in results:
            what = {"variant": result.variant, "database": result.database, "processes": result.processes}
            what |= {"kind": result.kind, "clients": result.clients}
            for played in result.played:
                master, judge = result.calls.get(played.marker, (0, 0))
                added = played.seconds - result.delay * (master + judge)
                row = {**what, "sent": played.sent - result.began, "clock": played.sent, "seconds": played.seconds}
                out.write(json.dumps({**row, "added": added}) + "\n")


def _stop_on_term(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def main(argv: Sequence[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, _stop_on_term)  # children and databases are cleaned up on kill too
    arguments = parse_arguments(argv)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="gm-serve-bench-") as name:
        results, pythons = asyncio.run(run_all(arguments, Path(name)))
    if arguments.rounds_out is not None:
        write_rounds(results, arguments.rounds_out)
    print("# gm serve load benchmark\n")
    print(
        f"`gm serve` processes (uvicorn, one worker each): {', '.join(f'{k} = `{v}`' for k, v in pythons.items())}. "
        + (
            f"Backlogged: {', '.join(map(str, arguments.levels))} stories, rounds back to back for "
            f"{arguments.seconds:.0f} s, the fake answering after {arguments.delay * 1000:.0f} ms. "
            if arguments.levels
            else ""
        )
        + (
            f"Players: {arguments.players:,}, thinking {arguments.think:g} s on average (uniform 0.5x-1.5x) between "
            f"messages, the fake answering after {arguments.model_latency:g} s, measured over "
            f"{arguments.players_seconds:.0f} s "
            f"after a {arguments.think:g} s ramp. "
            if arguments.players
            else ""
        )
        + "Odd rounds roll (game master 2 calls + judge 1), even rounds are plain (1 call). "
        "World: worlds/harbour-heist.\n"
    )
    print(table(results) + "\n")
    if any(r.variant == "before" for r in results):
        print("## Before and after\n")
        print(comparison_table(results) + "\n")
    if arguments.processes > 1 and arguments.postgres:
        print(f"## {arguments.processes} processes against 1 (PostgreSQL)\n")
        print(scaling_table(results, arguments.processes) + "\n")
    print(
        "Added latency = the round's latency at the client - the fake's delay x the model calls the round made "
        f"(game master and judge); a round still unanswered {GRACE_SECONDS:.0f} s after the scenario's time is given "
        "up on, counted in the percentiles as its wait less 3 delays. CPU = CPU time / wall time (100% = one "
        "core): the `gm serve` processes, this "
        "process (clients and probe), the fake's process. Probe = `GET /api/none` every 50 ms.\n"
    )
    keeper = ", ".join(f"{r.variant} {r.database} {r.kind} {r.clients}: {r.keeper_calls:,}" for r in results)
    print(f"Memory-keeper calls per scenario: {keeper}.\n")
    problems = [e for r in results for e in r.errors] + [o for r in results for o in r.added()[1]]
    if problems:
        print(f"## Anomalies ({len(problems)})\n")
        print("\n".join(f"- {problem}" for problem in problems[:20]) + "\n")
    if not arguments.postgres:
        print("PostgreSQL was not run: give --postgres or set GM_TEST_POSTGRES_URL.\n")
    print(
        f"_Python {platform.python_version()}, {os.cpu_count()} CPUs, {datetime.date.today().isoformat()}, "
        f"{time.perf_counter() - started:.0f} s; 1-minute load average {load_before:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end (servers, PostgreSQL, the fake and this process share the machine)._"
    )


if __name__ == "__main__":
    main()
