"""How long a story stays blocked after the server playing it is killed mid-round (`kill -9`).

What it measures
----------------
Two `gm serve` subprocesses (exactly as deployed: `python -m gm.cli serve`) share one database and one
fake model, with the default lease settings (`RoundSettings`: a 20 s lease renewed every 5 s; set
GM_LEASE_SECONDS / GM_HEARTBEAT_SECONDS to try others). In each trial server A starts a round whose
model call never ends; once the fake has received that call, the bench waits a random 0 to 1
heartbeat (so the kill falls anywhere between two renewals), kills A with SIGKILL, and starts a
fresh A again for the next trial. Meanwhile it sends the same story's next round to server B every
100 ms: B answers 409 while A's lease lasts, then plays the round. Reported: the time from the kill
to B's first 200 (median, min and max over the trials), and that every answer before it was a 409.

How to run
----------
From the project root, with the virtualenv active::

    python bench/crash_bench.py                      # SQLite, 5 trials: about 2 minutes
    python bench/crash_bench.py --trials 3 --postgres postgresql://postgres@127.0.0.1:5432/test

PostgreSQL is used when `--postgres` names a server (a fresh database is created and dropped).
Everything runs on 127.0.0.1; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg

from gm.engine.round import RoundSettings
from gm.testing import FakeModel, Request, Step, reply, slow

ROOT = Path(__file__).resolve().parent.parent
STUCK = "I wait for the tide."


def script(request: Request) -> Step:
    if "tools" not in request:
        return reply("Something happened.")
    if request["messages"][-1]["content"].startswith(STUCK):
        return slow(reply("never seen"), 3600)
    return reply("The harbour answers.")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start(database_url: str, fake: FakeModel, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "GM_DATABASE_URL": database_url, "OPENAI_BASE_URL": fake.base_url}
    env.update({"OPENAI_API_KEY": "bench", "GM_MODEL": fake.model})
    port = free_port()
    command = [sys.executable, "-m", "gm.cli", "serve", "--worlds", str(ROOT / "worlds"), "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, cwd=folder)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        with suppress(OSError):
            if send(url, "GET", "/api/worlds")[0] == 200:
                return process, url
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit(f"gm serve did not start on {url}")
        time.sleep(0.1)


def send(url: str, method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def trial(number: int, a_url: str, a: subprocess.Popen[bytes], b_url: str, fake: FakeModel, heartbeat: float) -> float:
    """One kill: seconds from SIGKILL of A to B's first 200 for the same story."""
    status, created = send(a_url, "POST", "/api/stories", {"world": "harbour-heist"})
    assert status == 201, created
    story, token = created["story"]["id"], created["token"]
    text = f"{STUCK} ({number})"

    def stuck() -> None:
        with suppress(OSError):
            send(a_url, "POST", f"/api/stories/{story}/messages", {"text": text}, token)

    threading.Thread(target=stuck, daemon=True).start()
    while not any(r["messages"][-1]["content"] == text for r in list(fake.requests) if "tools" in r):
        time.sleep(0.02)
    time.sleep(random.uniform(0, heartbeat))
    a.kill()
    killed = time.monotonic()
    a.wait()
    while True:
        status, answer = send(b_url, "POST", f"/api/stories/{story}/messages", {"text": "I try again."}, token)
        if status == 200:
            return time.monotonic() - killed
        if status != 409:
            raise SystemExit(f"B answered {status} {answer} while A's lease lasted")
        time.sleep(0.1)


@contextmanager
def database(postgres: str | None, folder: Path) -> Iterator[str]:
    if not postgres:
        yield f"sqlite:///{folder / 'gm.db'}"
        return
    name = f"gm_crash_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{postgres.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(postgres, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: SQLite)")
    arguments = parser.parse_args(argv)
    default = RoundSettings()
    lease = float(os.environ.get("GM_LEASE_SECONDS") or default.lease_seconds)
    heartbeat = float(os.environ.get("GM_HEARTBEAT_SECONDS") or default.heartbeat_seconds)
    waits: list[float] = []
    with tempfile.TemporaryDirectory() as temporary, FakeModel(script) as fake:
        folder = Path(temporary)
        with database(arguments.postgres, folder) as url:
            b, b_url = start(url, fake, folder)
            try:
                for number in range(1, arguments.trials + 1):
                    a, a_url = start(url, fake, folder)
                    waits.append(trial(number, a_url, a, b_url, fake, heartbeat))
                    print(f"trial {number}: playable again {waits[-1]:.1f} s after the kill", file=sys.stderr)
            finally:
                b.terminate()
                b.wait()
        shutil.rmtree(folder, ignore_errors=True)
    kind = "PostgreSQL" if arguments.postgres else "SQLite"
    print("| Database | Lease / heartbeat | Trials | Playable again after kill -9: median | min | max |")
    print("|---|---|---:|---:|---:|---:|")
    print(
        f"| {kind} | {lease:g} s / {heartbeat:g} s | {len(waits)} | {statistics.median(waits):.1f} s"
        f" | {min(waits):.1f} s | {max(waits):.1f} s |"
    )


if __name__ == "__main__":
    main()
