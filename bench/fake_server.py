"""The benchmarks' fake model server: one asyncio HTTP/1.1 process with kept connections, for many clients at once.

Why a process of its own: the benchmarks measure a process's CPU time (bench/cpu_bench.py) or a
server's (bench/serve_bench.py) on a 2-core machine; a fake answering in the measured process, or
in a thread a connection beside the load generator, would either be counted as gm's cost or starve
the server. One event loop answers any number of kept connections; a model's latency is an
`asyncio.sleep`, which costs nothing while it waits.

Scripts (`--script`):

- `round`: bench/round_bench.py's fake (`TimedFake`): the game master rolls `attempt` for Mara when
  the player's text asks the dice to decide, then narrates the honest outcome; otherwise it answers
  in plain text; an honest judge; memory summaries and folds of realistic length. Answers at once.
- `serve`: bench/serve_bench.py's fake: the player's text carries a marker `[L<level> s<story> r<round>]`;
  odd rounds roll `lockwork` for Odile (harbour-heist), even rounds end in plain text; an honest
  judge; one-line memory summaries (a batch's labelled `Round N:` each). Every chat completion is
  answered after `--delay` seconds. It counts each round's game-master and judge calls, by marker,
  for the bench to subtract.

Besides `POST /v1/chat/completions` it answers `GET /bench/stats` (JSON: requests served, the calls
counted per marker, memory-keeper calls, its own CPU seconds, requests in flight and seconds since
the last one) and `POST /bench/reset` (forget the counts; with a body `{"delay": seconds}`, answer after that delay from
now on).

Run by the benchmarks, not by hand: `python bench/fake_server.py --script serve --delay 0.05` prints
`PORT <n>` on its first line and serves until its standard input closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gm.engine.prompt import KEEPER_ANSWER, read_keeper_rounds
from gm.testing import FakeModel, Request, Step, call, honest_judge, is_judge_request, reply

MARKER = re.compile(r"\[L(\d+) s(\d+) r(\d+)\]")
MAX_HEADER = 64 * 1024
SUMMARY = "Odile worked the strongroom lock while the tide fell; Dace kept the boat."


class ServeScript:
    """The serve bench's game master, judge and memory keeper; counts each round's model calls by marker."""

    def __init__(self) -> None:
        self.calls: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # marker -> [game master, judge]
        self.keeper = 0

    def __call__(self, request: Request) -> Step:
        messages = request["messages"]
        if is_judge_request(request):
            first = next(m["content"] for m in messages if m.get("role") == "user")
            found = MARKER.search(first)
            if found:
                self.calls[found[0]][1] += 1
            return honest_judge(request)
        if "tools" not in request:  # the memory keeper: a summary, or a fold of several
            self.keeper += 1
            kept = read_keeper_rounds(str(messages[-1]["content"]))
            if len(kept) > 1:  # a batch: a labelled line a round, as the keeper's prompt asks (else gm asks each alone)
                return reply("\n".join(KEEPER_ANSWER.format(round.number) + SUMMARY for round in kept))
            return reply(SUMMARY)
        marker, number = _marker(messages)
        self.calls[marker][0] += 1
        last = messages[-1]
        if last["role"] == "tool":  # after roll_check: narrate the outcome honestly
            rolled = json.loads(last["content"])
            outcome = {"character": rolled["character"], "result": rolled["result"], "roll": rolled["roll"]}
            narration = f"{marker} The picks bite, the tumblers answer, and the water keeps falling."
            return call("narrate", {"narration": narration, "outcomes": [outcome]})
        if number % 2 == 1:
            arguments = {"check": "lockwork", "character": "Odile", "target": 13, "reason": "the strongroom lock"}
            return call("roll_check", arguments)
        return reply(f"{marker} Pruitt coughs upstairs and turns a page; nobody comes down.")

    def stats(self) -> dict[str, Any]:
        return {"calls": dict(self.calls), "keeper": self.keeper}

    def reset(self) -> None:
        self.calls.clear()
        self.keeper = 0


def _marker(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The marker of the newest player text (older rounds' texts are in the prompt too)."""
    for message in reversed(messages):
        if message["role"] == "user" and (found := MARKER.match(str(message["content"]))):
            return found[0], int(found[3])
    raise ValueError("a game-master request without the benchmark's marker in the player's text")


class Fake:
    """The HTTP side: parses requests, asks `FakeModel.handle` for the answer, waits the delay, writes it."""

    def __init__(self, model: FakeModel, delay: float, stats: Callable[[], dict[str, Any]], reset: Callable[[], None]):
        self.model = model
        self.delay = delay
        self._stats = stats
        self._reset = reset
        self.served = 0
        self.in_flight = 0
        self.last_seen = time.monotonic()

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                status, answer = await self.answer(method, path, body)
                writer.write(
                    b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (status, b"OK" if status == 200 else b"ERROR", len(answer), answer)
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # the client went, or the benchmark is over
        finally:
            writer.close()

    async def answer(self, method: str, path: str, body: bytes) -> tuple[int, bytes]:
        if path == "/bench/stats":
            stats = {
                **self._stats(),
                "served": self.served,
                "cpu": time.process_time(),
                "in_flight": self.in_flight,
                "idle": 0.0 if self.in_flight else time.monotonic() - self.last_seen,
                "failures": self.model.failures[:10],
            }
            return 200, json.dumps(stats).encode()
        if path == "/bench/reset":  # forget the counts; a body {"delay": seconds} sets the delay from now on
            self._reset()
            if body:
                self.delay = float(json.loads(body)["delay"])
            return 200, b"{}"
        self.in_flight += 1
        self.last_seen = time.monotonic()
        try:
            status, _, answer = self.model.handle(method, path, body)
            self.model.requests.clear()  # FakeModel keeps every request; nothing here reads them
            if self.delay and path.startswith("/v1/chat"):
                await asyncio.sleep(self.delay)
            self.served += 1
            return status, answer
        finally:
            self.in_flight -= 1
            self.last_seen = time.monotonic()


async def serve(fake: Fake) -> None:
    server = await asyncio.start_server(fake.connection, "127.0.0.1", 0, backlog=4096, limit=MAX_HEADER * 16)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the benchmark closes our standard input
    server.close()


@contextmanager
def fake_process(script: str) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """This fake in a process of its own, as the benchmarks run it: the process and the port it serves on.

    When the block ends its standard input is closed, which ends it; one that lingers is killed.
    """
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--script", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline().split()
        if first[:1] != ["PORT"]:
            raise RuntimeError(f"the fake model did not start (exit code {process.wait()})")
        yield process, int(first[1])
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--script", choices=("round", "serve"), required=True)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each chat completion's answer")
    arguments = parser.parse_args()
    if arguments.script == "round":
        from round_bench import TimedFake

        timed = TimedFake()
        timed.handle = super(TimedFake, timed).handle  # type: ignore[method-assign]  # no timing: another process
        fake = Fake(timed, arguments.delay, lambda: {"anomalies": timed.anomalies[:10]}, lambda: None)
    else:
        script = ServeScript()
        fake = Fake(FakeModel(script), arguments.delay, script.stats, script.reset)
    asyncio.run(serve(fake))


if __name__ == "__main__":
    main()
