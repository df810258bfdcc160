"""SIGTERM drains a real `gm serve` on PostgreSQL (issue 40): 100 stories in flight, none left running.

The fake model (gm.testing, over HTTP) answers half the stories in 3 s and keeps the other half waiting far
longer than the drain's bound (`GM_DRAIN_SECONDS`, 6 s here). Once all 100 rounds are with the model, the
server gets SIGTERM: a new round is then refused with 503 and `Retry-After`, the quick rounds finish, the slow
ones fail with one sentence at the bound, and the process exits. Then no attempt is `running`, no story's
lease is held, and the drain's figures (logged as JSON) add up. The figures are printed (`pytest -s`).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from gm.engine._in_flight import CLOSED, STOPPED_BY_DRAIN
from gm.testing import FakeModel, Request, Step, reply, slow
from tests.support.databases import POSTGRES_URL
from tests.support.rounds import fake
from tests.support.servers import HTTP_SECONDS, Server, send, start_server, wait_until_up

pytestmark = pytest.mark.skipif(
    not POSTGRES_URL, reason="the drain test serves on PostgreSQL: set GM_TEST_POSTGRES_URL"
)

STORIES = 100
DRAIN_SECONDS = 6.0
QUICK_SECONDS = 3.0
SLOW_TEXT = "I wait for the tide."


def script(request: Request) -> Step:
    if "tools" not in request:
        return reply("Something happened.")
    text = request["messages"][-1]["content"]
    if text == SLOW_TEXT:
        return slow(reply("The tide comes at last."), 120)  # past the drain's bound: stopped
    return slow(reply(f"The harbour answers: {text}"), QUICK_SECONDS)


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake(script) as started:  # started, and closed after the test
        yield started


def game_master_requests(model: FakeModel) -> int:
    return sum(1 for request in list(model.requests) if "tools" in request)


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_sigterm_drains_100_rounds_in_flight_and_leaves_nothing_running_or_held(
    tmp_path: Path, worlds: Path, database_url: str, model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GM_DRAIN_SECONDS", str(DRAIN_SECONDS))
    monkeypatch.setenv("GM_LOG_FORMAT", "json")
    server = start_server("drained", worlds, database_url, model, tmp_path)
    try:
        wait_until_up(server)
        stories = []
        for _ in range(STORIES):
            status, made = send(server, "POST", "/api/stories", {"world": "harbour"})
            assert status == 201, made
            stories.append((made["story"]["id"], made["token"]))
        answers: dict[int, tuple[int, Any]] = {}

        def play(index: int) -> None:
            story, token = stories[index]
            said = SLOW_TEXT if index % 2 else f"I look around, {index}."
            try:
                answers[index] = send(server, "POST", f"/api/stories/{story}/messages", {"text": said}, token)
            except OSError as error:
                answers[index] = (0, repr(error))

        threads = [threading.Thread(target=play, args=(index,), daemon=True) for index in range(STORIES)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + HTTP_SECONDS
        while game_master_requests(model) < STORIES and time.monotonic() < deadline:
            time.sleep(0.01)
        assert game_master_requests(model) == STORIES, "not every round reached the model"

        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        story, token = stories[0]
        refused = send(server, "POST", f"/api/stories/{story}/messages", {"text": "Again."}, token)
        ready = send(server, "GET", "/readyz")
        server.process.wait(timeout=DRAIN_SECONDS + 30)
        exited = time.monotonic() - signalled
        for thread in threads:
            thread.join(timeout=10)
    finally:
        server.stop()
        sys.stderr.write(server.output() + "\n")

    # uvicorn raises the signal again once it has shut down, so the process ends as SIGTERM asked (not a crash).
    assert server.process.returncode in (0, -signal.SIGTERM), server.output()
    assert refused == (503, {"error": CLOSED})
    assert ready == (503, {"status": "unready", "error": "this server is shutting down"})
    finished = sorted(index for index, (status, _) in answers.items() if status == 200)
    failed = sorted(index for index, (status, body) in answers.items() if status == 502)
    assert finished == list(range(0, STORIES, 2)), answers
    assert failed == list(range(1, STORIES, 2)), answers
    assert {answers[index][1]["error"] for index in failed} == {STOPPED_BY_DRAIN}

    engine = create_engine(database_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            statuses = dict(connection.execute(text("SELECT status, count(*) FROM attempts GROUP BY status")).all())
            held = connection.execute(text("SELECT count(*) FROM stories WHERE lease_holder IS NOT NULL")).scalar()
    finally:
        engine.dispose()
    assert statuses == {"accepted": STORIES // 2, "failed": STORIES // 2}  # none running
    assert held == 0

    [drain] = [line["drain"] for line in _json_lines(server) if "drain" in line]
    # On a loaded machine a few quick rounds may end between the model's 100th request and the signal.
    assert STORIES // 2 < drain["in_flight"] <= STORIES
    assert (drain["failed"], drain["stopped"]) == (STORIES // 2, STORIES // 2)
    assert drain["finished"] == drain["in_flight"] - STORIES // 2
    assert DRAIN_SECONDS <= drain["seconds"] < DRAIN_SECONDS + 10
    print(
        f"\ndrain of {drain['in_flight']} rounds in flight (bound {DRAIN_SECONDS:g} s):"
        f" {drain['seconds']:.2f} s to drain,"
        f" {exited:.2f} s from SIGTERM to exit; {drain['finished']} finished, {drain['failed']} failed"
        f" ({drain['stopped']} stopped at the bound)"
    )


def _json_lines(server: Server) -> list[dict[str, Any]]:
    lines = []
    for line in server.log.read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))
    return lines
