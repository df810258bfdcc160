"""A server killed mid-round (`kill -9`) blocks its story only until its lease runs out (issue 10, defect 3).

Two real `gm serve` processes share one database and one fake model. Server A starts a round whose
model call never ends and is killed with SIGKILL in the middle of it; server B answers 409 while A's
lease lasts, then plays the story, and its round marks A's attempt abandoned. The lease is shortened
here (3 s, renewed every second) so the test is quick; `bench/crash_bench.py` measures the default.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from gm.store import Attempt, Store
from gm.testing import FakeModel, Request, Step, reply, slow
from tests.support.rounds import fake
from tests.support.servers import BUSY, Server, game_master_texts, running_servers, send

LEASE_SECONDS = 3.0
HEARTBEAT_SECONDS = 1.0
STUCK_TEXT = "I wait for the tide to turn."
RETRY_TEXT = "I try the gate again."


def script(request: Request) -> Step:
    if "tools" not in request:
        return reply("Something happened.")
    text = request["messages"][-1]["content"]
    if text == STUCK_TEXT:
        return slow(reply("never seen"), 120)  # the server is killed while it waits for this
    return reply(f"The harbour answers: {text}")


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake(script) as started:  # started, and closed after the test
        yield started


@pytest.fixture
def pair(
    tmp_path: Path, worlds: Path, database_url: str, model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Server, Server]]:
    monkeypatch.setenv("GM_LEASE_SECONDS", str(LEASE_SECONDS))
    monkeypatch.setenv("GM_HEARTBEAT_SECONDS", str(HEARTBEAT_SECONDS))
    with running_servers(("A", "B"), worlds, database_url, model, tmp_path) as started:
        yield started[0], started[1]


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_killed_servers_story_can_be_played_again_once_its_lease_runs_out(
    pair: tuple[Server, Server], model: FakeModel, database_url: str
) -> None:
    a, b = pair
    status, created = send(a, "POST", "/api/stories", {"world": "harbour"})
    assert status == 201, created
    story, token = created["story"]["id"], created["token"]

    def stuck_round() -> None:
        with contextlib.suppress(OSError):  # the server is killed under this request
            send(a, "POST", f"/api/stories/{story}/messages", {"text": STUCK_TEXT}, token)

    threading.Thread(target=stuck_round, daemon=True).start()
    deadline = time.monotonic() + 30
    while STUCK_TEXT not in game_master_texts(model):  # A is in the middle of its round, waiting for the model
        assert time.monotonic() < deadline, "server A never asked the model"
        time.sleep(0.05)
    time.sleep(HEARTBEAT_SECONDS * 1.5)  # at least one heartbeat has renewed A's lease
    a.process.kill()  # SIGKILL: no cleanup of any kind
    killed = time.monotonic()
    a.process.wait(timeout=10)

    refusals = []
    while True:
        status, answer = send(b, "POST", f"/api/stories/{story}/messages", {"text": RETRY_TEXT}, token)
        if status == 200:
            break
        refusals.append((status, answer))
        assert time.monotonic() - killed < LEASE_SECONDS + 10, f"the story is still blocked: {refusals[-3:]}"
        time.sleep(0.2)
    waited = time.monotonic() - killed
    assert refusals and all(refusal == (409, {"error": BUSY}) for refusal in refusals), refusals[-3:]
    assert waited <= LEASE_SECONDS + 2, waited  # a dead holder's lease ran out, renewed no more
    assert answer["round"]["number"] == 1 and answer["round"]["player_text"] == RETRY_TEXT

    store = Store(database_url)
    try:
        with store.session() as session:
            statuses = sorted((attempt.status, attempt.error or "") for attempt in session.exec(select(Attempt)))
        assert [status for status, _ in statuses] == ["abandoned", "accepted"]
        assert "stopped before it ended" in statuses[0][1]
        assert store.story(story).rounds == 1
    finally:
        store.engine.dispose()
