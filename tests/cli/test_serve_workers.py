"""`gm serve --workers N`: N uvicorn worker processes on one port and one PostgreSQL database.

Each worker builds its own Game, model client and engine after it starts; a story made through one
worker is played through the other. Which process answered a connection is read from /proc: the
server side of the connection is a socket, and exactly one worker holds it. A bad number of
workers, or more than one on SQLite, is one sentence.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gm.testing import FakeModel, Request, Step, call, honest_judge, is_judge_request, reply
from tests.support.command_line import gm
from tests.support.databases import POSTGRES_URL
from tests.support.rounds import fake, narrate_roll
from tests.support.servers import free_port, wait_until_ready

HTTP_SECONDS = 30.0
ROLL_TEXT = "I pick the strongroom lock."


def script(request: Request) -> Step:
    if is_judge_request(request):
        return honest_judge(request)
    if "tools" not in request:
        return reply("Something memorable happened.")
    last = request["messages"][-1]
    if last["role"] == "tool":
        return narrate_roll()(request)
    if last["content"] == ROLL_TEXT:
        return call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "the lock"})
    return reply(f"The harbour answers: {last['content']}")


@pytest.mark.parametrize(
    ("arguments", "env", "said"),
    [
        (["--workers", "0"], {}, "error: --workers 0 is not a number of processes; expected 1 to 64"),
        (["--workers", "65"], {}, "error: --workers 65 is not a number of processes; expected 1 to 64"),
        (
            ["--workers", "2"],
            {"GM_DATABASE_URL": "sqlite:///gm.db"},
            "error: --workers 2 needs a PostgreSQL database (GM_DATABASE_URL): SQLite has one writer, "
            "so serve it with one process",
        ),
        (["--workers", "two"], {}, "error: argument --workers: invalid int value: 'two' (see 'gm serve --help')"),
    ],
)
def test_a_bad_number_of_workers_is_one_sentence(arguments: list[str], env: dict[str, str], said: str) -> None:
    ran = gm("serve", "--model", "rehearsal", "--port", str(free_port()), *arguments, env=env)
    assert (ran.returncode, ran.stdout, ran.stderr) == (2, "", said + "\n")


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake(script) as started:  # started, and closed after the test
        yield started


@pytest.fixture
def workers(tmp_path: Path, worlds: Path, database_url: str, model: FakeModel) -> Iterator[tuple[int, int]]:
    """`gm serve --workers 2` on the database: its port and its (supervisor) process id; always stopped."""
    port = free_port()
    env = {
        **os.environ,
        "GM_DATABASE_URL": database_url,
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "test-key",
        "GM_MODEL": model.model,
    }
    env.pop("GM_API_TOKEN", None)
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "gm.cli", "serve", "--workers", "2", "--worlds", str(worlds), "--port", str(port)]
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)

    def both_workers_answer() -> bool:
        return len(worker_pids(process.pid)) >= 2 and all(answers(port) for _ in range(4))

    try:
        wait_until_ready(process, both_workers_answer, "gm serve --workers 2", log.read_text)
        yield port, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        sys.stderr.write(log.read_text(errors="replace")[-4000:])
    assert "2 worker processes share the port and the database." in log.read_text()


def answers(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        return send(connection, "GET", "/api/worlds")[0] == 200
    except OSError:
        return False
    finally:
        connection.close()


def send(
    connection: http.client.HTTPConnection, method: str, path: str, body: Any = None, token: str | None = None
) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


def children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (the workers, and any helper multiprocessing starts)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry.name))
    return found


def worker_pids(supervisor: int) -> list[int]:
    """uvicorn's worker processes (started by multiprocessing's spawn), not its other helpers."""
    pids = []
    for pid in children(supervisor):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
        except OSError:
            continue  # gone since it was listed
    return pids


def owner(connection: http.client.HTTPConnection, port: int, supervisor: int) -> int:
    """The process holding the server's end of `connection`: its socket's inode, found among their descriptors."""
    assert connection.sock is not None
    client_port = connection.sock.getsockname()[1]
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16)
        if (local, remote) == (port, client_port):
            inode = fields[9]
    assert inode is not None, "the server's end of the connection is not in /proc/net/tcp"
    for pid in children(supervisor):
        try:
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue  # gone since it was listed
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor) == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    raise AssertionError(f"no worker holds socket {inode}")


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.skipif(not POSTGRES_URL, reason="several workers share a PostgreSQL database: set GM_TEST_POSTGRES_URL")
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_two_workers_play_one_story_between_them(workers: tuple[int, int], model: FakeModel) -> None:
    port, supervisor = workers
    assert len(worker_pids(supervisor)) == 2, "gm serve --workers 2 does not run 2 worker processes"
    answered: list[int] = []  # the worker process that answered each request, in order

    def through_another(method: str, path: str, body: Any = None, token: str | None = None) -> tuple[int, Any]:
        """One request on a new connection accepted by another worker than the last request's. The kernel hands
        a new connection to whichever worker accepts it first, so the last one is paused (SIGSTOP) until another
        has. A new connection each time, since uvicorn closes one left idle for 5 s, which a loaded machine can
        take between two steps (and uvicorn may replace a worker it finds unresponsive: pids are read afresh)."""
        last = answered[-1] if answered and answered[-1] in worker_pids(supervisor) else None
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_SECONDS)
        try:
            if last is not None:
                os.kill(last, signal.SIGSTOP)
            try:
                assert send(connection, "GET", "/api/worlds")[0] == 200
            finally:
                if last is not None:
                    os.kill(last, signal.SIGCONT)
            answered.append(owner(connection, port, supervisor))
            assert answered[-1] != last
            return send(connection, method, path, body, token)
        finally:
            connection.close()

    status, created = through_another("POST", "/api/stories", {"world": "harbour"})
    assert status == 201, created
    story, token = created["story"]["id"], created["token"]
    # Rounds of one story through each worker in turn: each reads what the other wrote.
    status, rolled = through_another("POST", f"/api/stories/{story}/messages", {"text": ROLL_TEXT}, token)
    assert status == 200, rolled
    [roll] = rolled["round"]["rolls"]
    status, plain = through_another("POST", f"/api/stories/{story}/messages", {"text": "I wait by the gate."}, token)
    assert status == 200, plain
    assert (rolled["round"]["number"], plain["round"]["number"]) == (1, 2)
    for _ in range(2):
        status, shown = through_another("GET", f"/api/stories/{story}", token=token)
        assert status == 200, shown
        assert [r["number"] for r in shown["rounds"]] == [1, 2]
        assert shown["rounds"][0]["rolls"] == [roll]
        assert shown["rounds"][1]["narration"] == "The harbour answers: I wait by the gate."
    assert len(set(answered)) >= 2  # both workers answered, and each request came to another than the last
    model.assert_done()  # every request and answer matched OpenAI's schemas
