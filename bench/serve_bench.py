"""Load test of `gm serve`: many stories played at once against one server process, on SQLite and PostgreSQL.

What it measures
----------------
One `gm serve` subprocess (exactly as deployed: `python -m gm.cli serve`, uvicorn, one worker) per
database, with the repository's `worlds/` folder, against a fake model that answers every request
after a fixed delay (default 50 ms) and serves both the game master and the memory keeper. The
fake's answers are `gm.testing.FakeModel`'s (a function script); they are carried by a threaded
HTTP/1.1 server in this process with kept connections and TCP_NODELAY, as a real model server
would carry them (`--fake-http10` uses FakeModel's own HTTP/1.0 server instead: a new connection a
request, which costs the server's openai client more under concurrency than it costs gm).

For 1, 10 and 100 concurrent stories in turn, each story is played by its own client thread (one
keep-alive HTTP connection each, `POST /api/stories/{id}/messages`), rounds back to back, for a
fixed time per level (default 12 s; a round running when time is up is finished and counted; at
most 1,000 rounds a story). Odd rounds of a story roll a check (the game master calls `roll_check`
for the lockwork check, then `narrate` with the honest outcome: 2 model calls); even rounds end in
plain text (1 model call): a 50/50 mix. The stories of a level are created before its clock starts.

Reported per database and level:

- rounds/s: rounds answered 200 / the level's wall time (first round sent to last answer).
- added latency, p50 and p99 (nearest rank): the round's latency as the client saw it minus the
  fake's fixed delay times the game-master calls the round made (counted by the fake, from the
  marker in the player's text). It is what gm adds: the API, the round engine, the database, the
  openai client and both loopback HTTP hops. The fake's own work beyond the delay is in it too; it
  is measured separately (the "fake overhead" line) to show the fake is not the bottleneck.
- The memory keeper runs after a round has been answered, in the server's background; its model
  calls (one per round, plus a fold every few rounds of a long story) also wait the fixed delay.
  They are not part of any round's latency and nothing is subtracted for them, but they load the
  same event loop and database while the rounds run, as in production. After each level the
  benchmark waits for the fake to go idle, so one level's memory work does not run into the next's.
- server CPU: the `gm serve` process's CPU time over the level's wall time (100% = one core);
  bench CPU, the same for this process (the clients, the probe and the fake).
- probe p99: latency of `GET /api/none` (a 404 answered by the app without any database work),
  sent every 50 ms on its own connection during the level: how long the server's event loop is
  blocked between turns.

How to run
----------
From the project root, with the virtualenv active::

    python bench/serve_bench.py                     # about 2 minutes
    python bench/serve_bench.py --quick             # smoke run: 2 s a level
    python bench/serve_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test

PostgreSQL is used when `--postgres` or GM_TEST_POSTGRES_URL names a server: a fresh database is
created there for the run and dropped after. Everything runs on 127.0.0.1. The output is Markdown,
ready to paste into a README; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import itertools
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg

from gm.testing import FakeModel, Request, Response, Step, call, reply, slow

ROOT = Path(__file__).resolve().parent.parent
WORLDS = ROOT / "worlds"
WORLD = "harbour-heist"
LEVELS = (1, 10, 100)
FULL_SECONDS = 12.0
QUICK_SECONDS = 2.0
MAX_ROUNDS_PER_STORY = 1000
DELAY = 0.05
STARTUP_SECONDS = 60.0
REQUEST_SECONDS = 120.0
IDLE_SECONDS = 0.5  # the fake is idle when no request has come or been in flight this long
DRAIN_SECONDS = 60.0
PROBE_EVERY = 0.05
MARKER = re.compile(r"^\[L(\d+) s(\d+) r(\d+)\] ")
FAKE_BACKLOG = 1024  # socketserver's default of 5 makes the kernel drop connections arriving together


# The fake model


class BenchFake(FakeModel):
    """The fake model, timed: its own work per request beyond the delay, and the requests in flight.

    Its answers come from `FakeModel.handle`. With `keep_alive` (the default) they are carried by the
    benchmark's own HTTP/1.1 server, as a real model server would carry them: connections are kept,
    and TCP_NODELAY is set, since the handler writes headers and body apart and Nagle's algorithm
    would hold the body back until the client's delayed ACK, 40 ms later. Without it, FakeModel's
    own transport is used: HTTP/1.0, one new connection a request.
    """

    def __init__(self, delay: float, *, keep_alive: bool = True) -> None:
        super().__init__(self.answer)
        self.keep_alive = keep_alive
        self.delay = delay
        self.counter = threading.Lock()
        self.game_master_calls: dict[tuple[int, int, int], int] = defaultdict(int)  # (level, story, round) -> calls
        self.keeper_calls = 0
        self.levels = itertools.count()
        self.overheads: list[float] = []  # seconds in handle beyond the delay
        self.in_flight = 0
        self.last_seen = time.monotonic()

    def handle(self, method: str, path: str, body: bytes) -> Response:
        began = time.perf_counter()
        with self.counter:
            self.in_flight += 1
            self.last_seen = time.monotonic()
        try:
            return super().handle(method, path, body)
        finally:
            spent = time.perf_counter() - began
            with self.counter:
                self.in_flight -= 1
                self.last_seen = time.monotonic()
                self.overheads.append(spent - self.delay)
            self.requests.clear()  # FakeModel keeps every request; nothing here reads them

    def answer(self, request: Request) -> Step:
        messages = request["messages"]
        if "tools" not in request:  # the memory keeper: a summary, or a fold of several
            with self.counter:
                self.keeper_calls += 1
            return slow(reply("Odile worked the strongroom lock while the tide fell; Dace kept the boat."), self.delay)
        level, story, number = _marker(messages)
        with self.counter:
            self.game_master_calls[(level, story, number)] += 1
        last = messages[-1]
        if last["role"] == "tool":  # after roll_check: narrate the outcome honestly
            rolled = json.loads(last["content"])
            outcome = {"character": rolled["character"], "result": rolled["result"], "roll": rolled["roll"]}
            narration = f"Round {number}: the picks bite, the tumblers answer, and the water keeps falling."
            return slow(call("narrate", {"narration": narration, "outcomes": [outcome]}), self.delay)
        if number % 2 == 1:
            arguments = {"check": "lockwork", "character": "Odile", "target": 13, "reason": "the strongroom lock"}
            return slow(call("roll_check", arguments), self.delay)
        return slow(reply(f"Round {number}: Pruitt coughs upstairs and turns a page; nobody comes down."), self.delay)

    def start(self) -> BenchFake:
        if not self.keep_alive:
            super().start()
            return self
        self.server = _KeepAliveServer(("127.0.0.1", 0), _KeepAliveHandler)
        self.server.fake = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)
        self.thread.start()
        return self

    def close(self) -> None:
        super().close()  # ends scripted delays at once
        if self.keep_alive:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1" if self.keep_alive else super().base_url

    def idle_for(self) -> float:
        with self.counter:
            return 0.0 if self.in_flight else time.monotonic() - self.last_seen


class _KeepAliveServer(ThreadingHTTPServer):
    request_queue_size = FAKE_BACKLOG
    daemon_threads = True


class _KeepAliveHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with kept connections and TCP_NODELAY, carrying requests to `FakeModel.handle`."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ThreadingHTTPServer

    def _serve(self) -> None:
        fake: FakeModel = self.server.fake  # type: ignore[attr-defined]
        size = int(self.headers.get("Content-Length") or 0)
        status, headers, body = fake.handle(self.command, self.path, self.rfile.read(size) if size else b"")
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _marker(messages: Sequence[dict[str, Any]]) -> tuple[int, int, int]:
    for message in reversed(messages):
        if message["role"] == "user" and (found := MARKER.match(str(message["content"]))):
            return int(found[1]), int(found[2]), int(found[3])
    raise ValueError("a game-master request without the benchmark's marker in the player's text")


# The server


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:] if self.log.exists() else ""

    def cpu_seconds(self) -> float:
        """User and system CPU time of the server process so far, from /proc."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def listen_overflows() -> int:
    """How many times a listening socket's queue overflowed on this machine (TcpExt ListenOverflows), or -1."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return -1
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split()[1:], values.split()[1:]))["ListenOverflows"])
    return -1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def served(database_url: str, fake: FakeModel, folder: Path) -> Iterator[Server]:
    """A `gm serve` subprocess on the database, answering /api/worlds; always terminated."""
    env = {
        **os.environ,
        "GM_DATABASE_URL": database_url,
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "bench-key",
        "GM_MODEL": fake.model,
        "GM_HOME": str(folder / "gm-home"),
    }
    env.pop("GM_API_TOKEN", None)
    port = free_port()
    log = folder / f"server-{port}.log"
    command = [sys.executable, "-m", "gm.cli", "serve", "--worlds", str(WORLDS), "--host", "127.0.0.1"]
    with log.open("wb") as output:
        process = subprocess.Popen(
            [*command, "--port", str(port)], env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
        )
    server = Server(process, port, log)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gm serve did not start (exit code {process.poll()}):\n{server.output()}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


def _answers(port: int) -> bool:
    try:
        status, _ = request(http.client.HTTPConnection("127.0.0.1", port, timeout=2), "GET", "/api/worlds")
    except OSError:
        return False
    return status == 200


def request(
    connection: http.client.HTTPConnection, method: str, path: str, body: Any = None, token: str | None = None
) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    answer = connection.getresponse()
    data = answer.read()
    return answer.status, json.loads(data) if data else None


# A level: N stories at once


@dataclass(slots=True)
class Played:
    level: int
    story: int
    number: int
    seconds: float


@dataclass
class Level:
    database: str
    stories: int
    wall: float = 0.0
    played: list[Played] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    server_cpu: float = 0.0
    bench_cpu: float = 0.0  # this process: the clients, the probe and the fake
    probe: list[float] = field(default_factory=list)
    keeper_calls: int = 0


def start_stories(port: int, count: int) -> list[tuple[str, str]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_SECONDS)
    made = []
    try:
        for _ in range(count):
            status, body = request(connection, "POST", "/api/stories", {"world": WORLD})
            if status != 201:
                raise RuntimeError(f"creating a story answered {status}: {body}")
            made.append((body["story"]["id"], body["token"]))
    finally:
        connection.close()
    return made


def play_level(server: Server, fake: BenchFake, database: str, count: int, seconds: float) -> Level:
    """`count` stories at once, rounds back to back for `seconds`; then wait for the memory keeper to finish."""
    level = Level(database, count)
    level_index = next(fake.levels)  # in the marker: the fake counts each round's calls apart from every other's
    stories = start_stories(server.port, count)
    ready = threading.Barrier(count + 2, timeout=REQUEST_SECONDS)
    finished = threading.Event()
    lock = threading.Lock()
    ends: list[float] = []

    def story_thread(index: int, story_id: str, token: str) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=REQUEST_SECONDS)
        try:
            ready.wait()
            deadline = time.monotonic() + seconds
            number = 1
            while time.monotonic() < deadline and number <= MAX_ROUNDS_PER_STORY:
                text = f"[L{level_index} s{index} r{number}] I work at the strongroom lock, quietly."
                began = time.perf_counter()
                status, body = request(connection, "POST", f"/api/stories/{story_id}/messages", {"text": text}, token)
                took = time.perf_counter() - began
                with lock:
                    if status == 200:
                        level.played.append(Played(level_index, index, number, took))
                    else:
                        level.errors.append(f"story {index} round {number}: {status} {body}")
                if status != 200:
                    break
                number += 1
        except (OSError, threading.BrokenBarrierError, http.client.HTTPException) as error:
            with lock:
                level.errors.append(f"story {index}: {type(error).__name__}: {error}")
        finally:
            connection.close()
            with lock:
                ends.append(time.perf_counter())

    def probe_thread() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=REQUEST_SECONDS)
        try:
            ready.wait()
            while not finished.wait(PROBE_EVERY):
                began = time.perf_counter()
                request(connection, "GET", "/api/none")
                level.probe.append(time.perf_counter() - began)
        except (OSError, threading.BrokenBarrierError, http.client.HTTPException) as error:
            level.errors.append(f"probe: {type(error).__name__}: {error}")
        finally:
            connection.close()

    threads = [threading.Thread(target=story_thread, args=(i, *story), daemon=True) for i, story in enumerate(stories)]
    probe = threading.Thread(target=probe_thread, daemon=True)
    for thread in [*threads, probe]:
        thread.start()
    keeper_before = fake.keeper_calls
    ready.wait()
    began, cpu_before, own_before = time.perf_counter(), server.cpu_seconds(), time.process_time()
    for thread in threads:
        thread.join(timeout=seconds + REQUEST_SECONDS)
    level.wall = (max(ends) if ends else time.perf_counter()) - began
    level.server_cpu = (server.cpu_seconds() - cpu_before) / level.wall
    level.bench_cpu = (time.process_time() - own_before) / level.wall
    finished.set()
    probe.join(timeout=REQUEST_SECONDS)
    if any(thread.is_alive() for thread in threads):
        level.errors.append("a story's client thread did not finish in time")
    drain(fake)
    level.keeper_calls = fake.keeper_calls - keeper_before
    return level


def drain(fake: BenchFake) -> None:
    """Wait until the memory keeper's calls are over: the fake has been idle for a while."""
    deadline = time.monotonic() + DRAIN_SECONDS
    while fake.idle_for() < IDLE_SECONDS and time.monotonic() < deadline:
        time.sleep(0.05)


# A database


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    name = f"gm_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin_url.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_database(
    name: str, url: str, fake: BenchFake, folder: Path, seconds: float, levels: Sequence[int]
) -> list[Level]:
    results = []
    with served(url, fake, folder) as server:
        warm = play_level(server, fake, name, 2, min(1.0, seconds))  # imports, pools, caches; not reported
        if warm.errors:
            raise RuntimeError(f"warm-up failed: {warm.errors[:3]}\n{server.output()}")
        for count in levels:
            print(f"  {name}: {count} stories for {seconds:.0f} s ...", file=sys.stderr, flush=True)
            level = play_level(server, fake, name, count, seconds)
            results.append(level)
            print(
                f"  {name}: {count} stories: {len(level.played)} rounds, {len(level.played) / level.wall:.1f}/s, "
                f"{len(level.errors)} errors",
                file=sys.stderr,
                flush=True,
            )
        if server.process.poll() is not None:
            raise RuntimeError(f"gm serve exited during the run:\n{server.output()}")
    return results


# Statistics and tables


def percentile(values: Sequence[float], fraction: float) -> float:
    """By nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def added(level: Level, fake: BenchFake) -> tuple[list[float], list[float], list[str]]:
    """Added latency of each round, split into rounds with a roll and plain rounds; and any unexpected call counts."""
    rolled: list[float] = []
    plain: list[float] = []
    odd: list[str] = []
    for played in level.played:
        calls = fake.game_master_calls[(played.level, played.story, played.number)]
        expected = 2 if played.number % 2 == 1 else 1
        if calls != expected:
            odd.append(f"story {played.story} round {played.number}: {calls} game-master calls, expected {expected}")
        (rolled if expected == 2 else plain).append(played.seconds - fake.delay * calls)
    return rolled, plain, odd


def table(levels: Sequence[Level], fake: BenchFake) -> str:
    lines = [
        "| Database | Stories at once | Rounds | Rounds/s | Added p50 (ms) | Added p99 (ms) "
        "| p50 roll / plain (ms) | Server CPU | Bench CPU | Probe p50 / p99 (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in levels:
        rolled, plain, _ = added(level, fake)
        both = rolled + plain
        if not both:
            lines.append(f"| {level.database} | {level.stories} | 0 | - | - | - | - | - | - | - |")
            continue
        split = f"{ms(statistics.median(rolled)) if rolled else '-'} / {ms(statistics.median(plain)) if plain else '-'}"
        probe = f"{ms(statistics.median(level.probe))} / {ms(percentile(level.probe, 0.99))}" if level.probe else "-"
        lines.append(
            f"| {level.database} | {level.stories} | {len(both):,} | {len(both) / level.wall:.1f} "
            f"| {ms(statistics.median(both))} | {ms(percentile(both, 0.99))} | {split} "
            f"| {level.server_cpu * 100:.0f}% | {level.bench_cpu * 100:.0f}% | {probe} |"
        )
    return "\n".join(lines)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_SECONDS:.0f} s a level")
    parser.add_argument("--seconds", type=float, help=f"how long each level plays (default {FULL_SECONDS:.0f})")
    parser.add_argument("--delay", type=float, default=DELAY, help=f"the fake model's delay in seconds ({DELAY})")
    parser.add_argument(
        "--fake-http10",
        action="store_true",
        help="carry the fake's answers over FakeModel's own HTTP/1.0 server (a new connection a request)",
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("GM_TEST_POSTGRES_URL"),
        help="a PostgreSQL server to create the run's database on (default GM_TEST_POSTGRES_URL; none: SQLite only)",
    )
    arguments = parser.parse_args(argv)
    if arguments.seconds is None:
        arguments.seconds = QUICK_SECONDS if arguments.quick else FULL_SECONDS
    if not 0 < arguments.seconds <= 60:
        parser.error("--seconds must be more than 0 and at most 60")
    return arguments


def main(argv: Sequence[str] | None = None) -> None:
    arguments = parse_arguments(argv)
    started = time.perf_counter()
    fake = BenchFake(arguments.delay, keep_alive=not arguments.fake_http10)
    fake.start()
    overflows = listen_overflows()
    load_before = os.getloadavg()[0]
    levels: list[Level] = []
    try:
        with tempfile.TemporaryDirectory(prefix="gm-serve-bench-") as name:
            folder = Path(name)
            levels += run_database("SQLite", f"sqlite:///{folder / 'gm.db'}", fake, folder, arguments.seconds, LEVELS)
            if arguments.postgres:
                with postgres_database(arguments.postgres) as url:
                    levels += run_database("PostgreSQL", url, fake, folder, arguments.seconds, LEVELS)
    finally:
        fake.close()
    total = time.perf_counter() - started
    overflows = listen_overflows() - overflows if overflows >= 0 else -1

    transport = (
        "FakeModel's HTTP/1.0 server, a new connection a request"
        if arguments.fake_http10
        else "HTTP/1.1 with kept connections and TCP_NODELAY"
    )
    print("# gm serve load benchmark\n")
    print(
        f"One `gm serve` process (uvicorn, one worker) per database; 1, 10 and 100 stories at once, each played "
        f"rounds back to back by its own client for {arguments.seconds:.0f} s over a keep-alive HTTP connection. "
        f"A fake model (`gm.testing.FakeModel`'s answers, in the benchmark's process, a thread a connection, "
        f"{transport}) answers every request after {arguments.delay * 1000:.0f} ms. Odd rounds of a story roll a "
        "check (roll_check, then narrate: 2 model calls), even rounds end in plain text (1 call): half and half. "
        "World: worlds/harbour-heist.\n"
    )
    print(table(levels, fake))
    overheads = fake.overheads
    print(
        f"\nAdded latency = the round's latency at the client - {arguments.delay * 1000:.0f} ms x the game-master "
        "calls it made: the API, round engine, database, openai client and both loopback hops. p99 by nearest rank. "
        "The memory keeper (one call a round after the round is answered, plus folds) is not in any round's "
        "latency and nothing is subtracted for it, but it shares the server with the rounds; each level waits for "
        "it to finish before the next starts. Server CPU = the server process's CPU time / wall time (100% = one "
        "core); Bench CPU, the same for this process (clients, probe and fake). Probe = `GET /api/none` (a 404, "
        "no database) every 50 ms during the level: event-loop stalls.\n"
    )
    keeper = ", ".join(f"{level.database} {level.stories}: {level.keeper_calls:,}" for level in levels)
    print(f"Memory-keeper calls per level: {keeper}.")
    if overheads:
        print(
            f"Fake overhead (its own time per request beyond the delay): p50 {ms(statistics.median(overheads))} ms, "
            f"p99 {ms(percentile(overheads, 0.99))} ms over {len(overheads):,} requests. Listen-queue overflows "
            f"on this machine during the run (TcpExt ListenOverflows): {overflows if overflows >= 0 else 'unknown'}.\n"
        )
    problems = [error for level in levels for error in level.errors]
    problems += [odd for level in levels for odd in added(level, fake)[2]]
    if problems:
        print(f"## Anomalies ({len(problems)})\n")
        print("\n".join(f"- {problem}" for problem in problems[:20]) + "\n")
    if not arguments.postgres:
        print("PostgreSQL was not run: give --postgres or set GM_TEST_POSTGRES_URL.\n")
    today = datetime.date.today().isoformat()
    print(
        f"_Python {platform.python_version()} ({platform.python_implementation()}), {os.cpu_count()} CPUs, {today}, "
        f"total benchmark time {total:.0f} s; 1-minute load average {load_before:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end (the server, PostgreSQL and this process share the machine; other "
        "load shows up in every figure)._"
    )


if __name__ == "__main__":
    main()
