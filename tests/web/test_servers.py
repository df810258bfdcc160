"""More than one server: two real `gm serve` processes sharing one PostgreSQL database and one fake model.

Everything a story needs lives in the database, so either server can play any story, and the story's
lease keeps two rounds of one story from running at once even when they reach different servers.
Runs only on PostgreSQL (GM_TEST_POSTGRES_URL); each server is a subprocess, always terminated.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import POSTGRES_URL
from rounds import fake, narrate_roll

from gm.testing import FakeModel, Request, Step, call, honest_judge, is_judge_request, reply, slow

pytestmark = pytest.mark.skipif(
    not POSTGRES_URL, reason="two gm serve processes share a PostgreSQL database: set GM_TEST_POSTGRES_URL"
)

STARTUP_SECONDS = 60.0  # a cold start imports FastAPI, SQLAlchemy and openai, and migrates the database
HTTP_SECONDS = 30.0  # no request of this test may take longer
SLOW_SECONDS = 1.5  # the game master's slow answer, long enough for the two rounds to overlap
SLOW_TEXT = "I wait by the tide gate."
SLOW_NARRATION = "The tide turns slowly; the gate groans but holds."
ROLL_TEXT = "I pick the strongroom lock."
SUMMARY = "Something memorable happened."
BUSY = "another round of this story is being played right now; try again when it is done"


def game_master(request: Request) -> Step:
    """The fake's script: the judge judges honestly, the memory keeper (no tools) summarises, and the game
    master answers by the player's text."""
    if is_judge_request(request):
        return honest_judge(request)
    if "tools" not in request:
        return reply(SUMMARY)
    last = request["messages"][-1]
    if last["role"] == "tool":  # after roll_check: narrate its outcome honestly
        return narrate_roll()(request)
    if last["content"] == SLOW_TEXT:
        return slow(reply(SLOW_NARRATION), SLOW_SECONDS)
    if last["content"] == ROLL_TEXT:
        return call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "the lock"})
    return reply(f"The harbour answers: {last['content']}")


def game_master_texts(model: FakeModel) -> list[str]:
    """The player's text of every game-master request (the keeper's carry no tools), in order."""
    texts = []
    for request in list(model.requests):
        if "tools" in request:
            users = [message["content"] for message in request["messages"] if message["role"] == "user"]
            texts.append(users[-1])
    return texts


@dataclass
class Server:
    """One `gm serve` subprocess, its port and its captured output."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        return f"--- server {self.name} (exit code {self.process.poll()}) output ---\n{text[-4000:] or '(none)'}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_server(name: str, worlds: Path, database_url: str, model: FakeModel, folder: Path) -> Server:
    env = {
        **os.environ,
        "GM_DATABASE_URL": database_url,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "test-key",
        "GM_MODEL": model.model,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("GM_API_TOKEN", None)
    port = free_port()
    log = folder / f"server-{name}.log"
    with log.open("wb") as output:  # the child keeps its own copy of the descriptor
        command = [sys.executable, "-m", "gm.cli", "serve", "--worlds", str(worlds), "--host", "127.0.0.1"]
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    return Server(name, process, port, log)


def wait_until_up(server: Server, deadline: float) -> None:
    while True:
        if server.process.poll() is not None:
            pytest.fail(f"server {server.name} exited before answering\n{server.output()}")
        try:
            status, _ = send(server, "GET", "/api/worlds", timeout=2)
            if status == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            waited = f"server {server.name} did not answer /api/worlds within {STARTUP_SECONDS:.0f} s"
            pytest.fail(f"{waited}\n{server.output()}")
        time.sleep(0.1)


def send(
    server: Server, method: str, path: str, body: Any = None, token: str | None = None, timeout: float = HTTP_SECONDS
) -> tuple[int, Any]:
    """One request; the status and the JSON answer (for errors too; an answer that is not JSON, as text)."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, _parsed(answer.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, _parsed(error.read())


def _parsed(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return body.decode(errors="replace")


@pytest.fixture
def model() -> Iterator[FakeModel]:
    """One fake model for both servers, checking every request and answer against OpenAI's schemas."""
    started = fake(game_master).start()
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def servers(tmp_path: Path, worlds: Path, database_url: str, model: FakeModel) -> Iterator[tuple[Server, Server]]:
    """Two `gm serve` processes on one database, started at once (both migrate it; one waits for the other)."""
    started: list[Server] = []
    try:
        for name in ("A", "B"):
            started.append(start_server(name, worlds, database_url, model, tmp_path))
        deadline = time.monotonic() + STARTUP_SECONDS
        for server in started:
            wait_until_up(server, deadline)
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()
            sys.stderr.write(server.output() + "\n")  # pytest shows it when the test fails


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_two_servers_share_stories_and_one_round_at_a_time(servers: tuple[Server, Server], model: FakeModel) -> None:
    a, b = servers
    status, created = send(a, "POST", "/api/stories", {"world": "harbour"})
    assert status == 201, created
    story, token = created["story"]["id"], created["token"]

    # Two rounds of one story at the same moment, one to each server: the lease lets exactly one through.
    answers: dict[str, tuple[int, Any, float]] = {}
    barrier = threading.Barrier(2, timeout=HTTP_SECONDS)

    def play(server: Server) -> None:
        barrier.wait()
        began = time.monotonic()
        try:
            status, body = send(server, "POST", f"/api/stories/{story}/messages", {"text": SLOW_TEXT}, token)
        except OSError as error:  # a timeout or a refused connection: reported by the assertion below
            status, body = 0, repr(error)
        answers[server.name] = (status, body, time.monotonic() - began)

    threads = [threading.Thread(target=play, args=(server,), daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=HTTP_SECONDS + 5)
    assert not any(thread.is_alive() for thread in threads), "a round did not come back in time"
    assert sorted(status for status, _, _ in answers.values()) == [200, 409], answers
    [(played, played_seconds)] = [(body, seconds) for status, body, seconds in answers.values() if status == 200]
    [(busy, busy_seconds)] = [(body, seconds) for status, body, seconds in answers.values() if status == 409]
    assert busy == {"error": BUSY}
    assert busy_seconds < SLOW_SECONDS <= played_seconds  # refused at once, while the other round was being played
    assert played["round"]["number"] == 1 and played["round"]["narration"] == SLOW_NARRATION
    assert game_master_texts(model) == [SLOW_TEXT]  # the refused round never reached the model

    # The transcript, read through each server: one round, the slow one.
    for server in servers:
        status, shown = send(server, "GET", f"/api/stories/{story}", token=token)
        assert status == 200, shown
        assert shown["story"]["rounds"] == 1
        assert [(r["number"], r["player_text"], r["narration"]) for r in shown["rounds"]] == [
            (1, SLOW_TEXT, SLOW_NARRATION)
        ]

    # A round with a roll played on A is on B, rolls and all; a round played on B is on A.
    status, rolled = send(a, "POST", f"/api/stories/{story}/messages", {"text": ROLL_TEXT}, token)
    assert status == 200, rolled
    [roll] = rolled["round"]["rolls"]
    status, plain = send(b, "POST", f"/api/stories/{story}/messages", {"text": "I slip out by the water gate."}, token)
    assert status == 200, plain
    assert plain["round"]["number"] == 3
    status, shown = send(a, "GET", f"/api/stories/{story}", token=token)
    assert status == 200, shown
    assert [r["number"] for r in shown["rounds"]] == [1, 2, 3]
    assert shown["rounds"][1]["rolls"] == [roll] and shown["rounds"][1]["outcomes"] == rolled["round"]["outcomes"]
    assert shown["rounds"][2]["narration"] == plain["round"]["narration"]
    status, from_b = send(b, "GET", f"/api/stories/{story}", token=token)
    assert status == 200 and from_b["rounds"] == shown["rounds"]

    # Nothing interleaved: one game-master request per plain round, two for the round with a roll.
    assert game_master_texts(model) == [SLOW_TEXT, ROLL_TEXT, ROLL_TEXT, "I slip out by the water gate."]
    model.assert_done()  # every request and answer matched OpenAI's schemas
