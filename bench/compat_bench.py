"""What a round through the OpenAI-compatible endpoint costs beyond the same round through the story API.

What it measures
----------------
One `gm serve` subprocess per database (as deployed: `python -m gm.cli serve`, one uvicorn worker,
the repository's worlds/), its game master serve_bench's fake model answering at once in plain text,
so a round is one model call (the memory keeper's summary runs after each round in the server's
background; the benchmark waits for it, so it runs beside neither path). One story is played
through `POST /api/stories/{id}/messages` and one chat through `POST /v1/chat/completions`,
alternately, round by round, each on its own kept HTTP connection: the chat sends its whole
history every time, as a front end does, so at round n it sends 2n-1 messages. Reported per
database: p50 and p99 (nearest rank) of each path's round time as the client saw it, and the
chat's extra (its p50 minus the API's p50), over all rounds and over the last tenth (the longest
histories).

How to run
----------
From the project root, with the virtualenv active::

    python bench/compat_bench.py                      # 200 rounds a path, about a minute
    python bench/compat_bench.py --rounds 20          # smoke run
    python bench/compat_bench.py --postgres postgresql://postgres@127.0.0.1:5432/test

PostgreSQL is used when `--postgres` or GM_TEST_POSTGRES_URL names a server (a fresh database for
the run, dropped after). The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serve_bench import WORLD, BenchFake, percentile, postgres_database, request, served

from gm.testing import Request, Step, reply

SETTLE_SECONDS = 0.02  # the fake idle this long: the memory keeper's work for the last round is done


class QuietFake(BenchFake):
    """serve_bench's fake (kept HTTP/1.1 connections, no delay), answering every round in plain text."""

    def answer(self, request: Request) -> Step:
        if "tools" not in request:
            return reply("The round was quiet.")  # the memory keeper
        return reply("The tide turns under the pier; nobody has seen you yet.")


def settle(fake: BenchFake) -> None:
    """Wait for the memory keeper of the round just played, so neither path's round runs beside it."""
    deadline = time.monotonic() + 5
    while fake.idle_for() < SETTLE_SECONDS and time.monotonic() < deadline:
        time.sleep(0.005)


def play(port: int, fake: BenchFake, rounds: int) -> tuple[list[float], list[float]]:
    """`rounds` rounds on each path, alternately; the seconds each took, API first."""
    api = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    chat = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    status, started = request(api, "POST", "/api/stories", {"world": WORLD})
    assert status == 201, started
    story, token = started["story"]["id"], started["token"]
    history: list[dict[str, Any]] = []
    api_times: list[float] = []
    chat_times: list[float] = []
    for number in range(1, rounds + 1):
        text = f"I watch the harbour, round {number}."
        began = time.perf_counter()
        status, body = request(api, "POST", f"/api/stories/{story}/messages", {"text": text}, token)
        api_times.append(time.perf_counter() - began)
        assert status == 200, body
        settle(fake)
        history.append({"role": "user", "content": text})
        began = time.perf_counter()
        status, body = request(chat, "POST", "/v1/chat/completions", {"model": f"gm/{WORLD}", "messages": history})
        chat_times.append(time.perf_counter() - began)
        assert status == 200, body
        history.append({"role": "assistant", "content": body["choices"][0]["message"]["content"]})
        settle(fake)
    return api_times, chat_times


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def rows(database: str, api: Sequence[float], chat: Sequence[float]) -> list[str]:
    lines = []
    tail = max(1, len(api) // 10)
    for label, a, c in (("all rounds", api, chat), ("last tenth", api[-tail:], chat[-tail:])):
        a50, c50 = percentile(a, 0.5), percentile(c, 0.5)
        lines.append(
            f"| {database} | {label} | {ms(a50)} | {ms(percentile(a, 0.99))} | {ms(c50)} | "
            f"{ms(percentile(c, 0.99))} | {ms(c50 - a50)} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=200, help="rounds on each path (default 200)")
    parser.add_argument("--postgres", default=os.environ.get("GM_TEST_POSTGRES_URL"), help="a PostgreSQL server")
    arguments = parser.parse_args(argv)
    lines = [
        "| Database | Rounds | API p50 | API p99 | Chat p50 | Chat p99 | Chat extra (p50) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    fake = QuietFake(0.0).start()
    with tempfile.TemporaryDirectory() as folder:
        databases: list[tuple[str, Any]] = [("SQLite", lambda: _nothing(f"sqlite:///{folder}/bench.db"))]
        if arguments.postgres:
            databases.append(("PostgreSQL", lambda: postgres_database(arguments.postgres)))
        for name, database in databases:
            with database() as url, served(url, fake, Path(folder)) as server:
                print(f"  {name}: warming up ...", file=sys.stderr, flush=True)
                play(server.port, fake, 5)
                print(f"  {name}: {arguments.rounds} rounds a path ...", file=sys.stderr, flush=True)
                api, chat = play(server.port, fake, arguments.rounds)
                lines += rows(name, api, chat)
    fake.close()
    print("\n".join(lines))


class _nothing:
    """A context manager yielding a value (the SQLite URL, which needs no setting up)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __enter__(self) -> str:
        return self.value

    def __exit__(self, *_: object) -> None:
        return None


if __name__ == "__main__":
    main()
