"""More than one server: two real `gm serve` processes sharing one PostgreSQL database and one fake model.

Everything a story needs lives in the database, so either server can play any story, and the story's
lease keeps two rounds of one story from running at once even when they reach different servers.
Runs only on PostgreSQL (GM_TEST_POSTGRES_URL); each server is a subprocess, always terminated.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gm.testing import FakeModel, Request, Step, call, honest_judge, is_judge_request, reply, slow
from tests.support.databases import POSTGRES_URL
from tests.support.rounds import fake, narrate_roll
from tests.support.servers import (
    BUSY,
    HTTP_SECONDS,
    Server,
    game_master_texts,
    running_servers,
    send,
)

pytestmark = pytest.mark.skipif(
    not POSTGRES_URL, reason="two gm serve processes share a PostgreSQL database: set GM_TEST_POSTGRES_URL"
)

SLOW_SECONDS = 1.5  # the game master's slow answer, long enough for the two rounds to overlap
SLOW_TEXT = "I wait by the tide gate."
SLOW_NARRATION = "The tide turns slowly; the gate groans but holds."
ROLL_TEXT = "I pick the strongroom lock."
SUMMARY = "Something memorable happened."


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


@pytest.fixture
def model() -> Iterator[FakeModel]:
    """One fake model for both servers, checking every request and answer against OpenAI's schemas."""
    with fake(game_master) as started:  # started, and closed after the test
        yield started


@pytest.fixture
def servers(tmp_path: Path, worlds: Path, database_url: str, model: FakeModel) -> Iterator[tuple[Server, Server]]:
    """Two `gm serve` processes on one database, started at once (both migrate it; one waits for the other)."""
    with running_servers(("A", "B"), worlds, database_url, model, tmp_path) as started:
        yield started[0], started[1]


@pytest.mark.slow
@pytest.mark.subprocess
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
