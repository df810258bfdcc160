"""Real `gm serve` processes for the tests: started on a free port, waited for by readiness, always stopped."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gm.testing import FakeModel

HANG_SECONDS = 600.0  # a hang guard only: a slow start is waited for (wait_until_ready)
HTTP_SECONDS = 30.0  # no request of a test may take longer
BUSY = "another round of this story is being played right now; try again when it is done"


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
    """A port on 127.0.0.1 free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_server(name: str, worlds: Path, database_url: str, model: FakeModel, folder: Path) -> Server:
    """`gm serve` in a process of its own on a free port, its output in `folder`; not yet waited for."""
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


@contextmanager
def running_servers(
    names: Sequence[str], worlds: Path, database_url: str, model: FakeModel, folder: Path
) -> Iterator[list[Server]]:
    """`gm serve` processes named `names` on one database, all started at once (each migrates it; one waits for
    another) and then each waited for; stopped afterwards, their output written where pytest shows a failure's."""
    started: list[Server] = []
    try:
        for name in names:
            started.append(start_server(name, worlds, database_url, model, folder))
        for server in started:
            wait_until_up(server)
        yield started
    finally:
        for server in started:
            server.stop()
            sys.stderr.write(server.output() + "\n")


def wait_until_up(server: Server) -> None:
    """Waits until the server answers /api/worlds; fails at once if it exits first."""

    def answers() -> bool:
        try:
            status, _ = send(server, "GET", "/api/worlds", timeout=2)
        except OSError:
            return False
        return status == 200

    wait_until_ready(server.process, answers, f"server {server.name}", server.output)


def wait_until_ready(
    process: subprocess.Popen[Any], ready: Callable[[], bool], what: str, output: Callable[[], str]
) -> None:
    """Waits for a server process by readiness: until `ready()` is true, failing as soon as the process exits.

    A start has no deadline: a cold start imports the web stack and migrates the database, which takes
    seconds on a quiet machine and far longer on a loaded one. Only a start that neither answers nor
    exits within HANG_SECONDS fails, as hung."""
    started = time.monotonic()
    while not ready():
        if process.poll() is not None:
            pytest.fail(f"{what} exited (code {process.returncode}) before it answered\n{output()}")
        if time.monotonic() - started > HANG_SECONDS:
            pytest.fail(f"{what} neither answered nor exited in {HANG_SECONDS:.0f} s: hung\n{output()}")
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
