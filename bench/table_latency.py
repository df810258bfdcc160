"""Live latency at a table: from one player's action to another viewer's stream receiving it.

One player sends a message (POST /api/stories/{id}/messages) to one `gm serve`; another viewer follows the story
(GET /api/stories/{id}/events) on the other server. Timed from the moment the POST is sent: the `action` event
(the round has started: what a page shows as the other player's words) and the `round` event (the round is
accepted: a page then reads it). Two processes on one PostgreSQL database (the event goes through
LISTEN/NOTIFY), side by side with one process on the same database (both requests to it) as the baseline.
The fake model (bench/fake_server.py's `serve` script: every other round rolls a check) answers at once, so the
round's own time is the engine's and the database's.

    python bench/table_latency.py --rounds 200
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from serve_processes import postgres_database, start_fake, start_servers

POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def post(port: int, path: str, body: Any, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


class Follower:
    """The other viewer's stream, read in a thread: the moment each event kind arrived, by its id."""

    def __init__(self, port: int, story: str, token: str) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/stories/{story}/events", headers={"Authorization": f"Bearer {token}"}
        )
        self.response = urllib.request.urlopen(request, timeout=60)
        self.seen: list[tuple[str, float]] = []
        self.ready = threading.Event()
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.ready.wait(30)

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # closed under the reader at the end of a run
            self._read_events()

    def _read_events(self) -> None:
        kind = ""
        for raw in self.response:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line == "" and kind:
                with self.changed:
                    self.seen.append((kind, time.perf_counter()))
                    self.changed.notify_all()
                if kind == "ready":
                    self.ready.set()
                kind = ""

    def wait_for(self, kind: str, after: int) -> tuple[float, int]:
        with self.changed:
            while True:
                for index in range(after, len(self.seen)):
                    if self.seen[index][0] == kind:
                        return self.seen[index][1], index + 1
                if not self.changed.wait(30):
                    raise RuntimeError(f"no {kind} event within 30 s")


def run(ports: tuple[int, int], rounds: int) -> dict[str, list[float]]:
    acting, watching = ports
    started = post(acting, "/api/stories", {"world": "harbour-heist"})
    story, token = started["story"]["id"], started["token"]
    follower = Follower(watching, story, token)
    times: dict[str, list[float]] = {"action": [], "round": [], "answer": []}
    seen = 0
    for number in range(rounds):
        sent = time.perf_counter()
        text = f"[L1 s1 r{number + 1}] Odile works the strongroom lock."
        post(acting, f"/api/stories/{story}/messages", {"text": text}, token)
        answered = time.perf_counter()
        at, seen = follower.wait_for("action", seen)
        times["action"].append((at - sent) * 1000)
        at, seen = follower.wait_for("round", seen)
        times["round"].append((at - sent) * 1000)
        times["answer"].append((answered - sent) * 1000)
    follower.response.close()
    return times


def quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--postgres", default=POSTGRES, help="an admin URL; a fresh database is made on its server")
    arguments = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as folder, start_fake() as fake:
        for variant, count in (("one process", 1), ("two processes", 2)):
            with (
                postgres_database(arguments.postgres) as url,
                start_servers(sys.executable, url, fake, Path(folder), count) as servers,
            ):
                ports = (servers[0].port, servers[-1].port)
                run(ports, 5)  # warm up: imports, pools, the listening connection
                results[variant] = run(ports, arguments.rounds)
    print(f"{arguments.rounds} rounds each; ms from the POST sent; PostgreSQL; the fake model answers at once")
    print(f"{'':16}{'action p50':>12}{'action p99':>12}{'round p50':>12}{'round p99':>12}{'answer p50':>12}")
    for variant, times in results.items():
        a50, a99 = quantiles(times["action"])
        r50, r99 = quantiles(times["round"])
        w50, _ = quantiles(times["answer"])
        print(f"{variant:16}{a50:12.1f}{a99:12.1f}{r50:12.1f}{r99:12.1f}{w50:12.1f}")
    base, other = results["one process"], results["two processes"]
    print(
        "two processes / one: action p50 x{:.2f}, round p50 x{:.2f}".format(
            quantiles(other["action"])[0] / quantiles(base["action"])[0],
            quantiles(other["round"])[0] / quantiles(base["round"])[0],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
