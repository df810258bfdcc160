"""What a server's memory after a load rests on: a round's own objects die with it.

At 1,000 stories (bench/serve_bench.py) a server's Python objects after the load are as many as before it, give
or take the stories' bounded state; what stays resident is the allocator's (docs/performance.md, issue 40).
That holds only while nothing of a round outlives it: a record kept per round, a task left running, a list that
grows with each round would make the memory climb with every load.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from gm.engine.settings import RoundSettings
from gm.store import Store
from gm.testing import reply
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import served_app, start_story

ROUNDS = ("I pick the lock.", "I look around.") * 4  # 8 rounds: 4 rolled (3 model calls each), 4 plain
# The process's heartbeat task ends at its next beat once no lease is left, so the test beats often: a round's tail
# (its lease let go, the memory keeper's work, that last beat) is over well within QUIET_SECONDS even under load.
SETTINGS = replace(RoundSettings(), lease_seconds=2.0, heartbeat_seconds=0.5)
QUIET_SECONDS = 3 * SETTINGS.lease_seconds


def gms_objects() -> Counter[str]:
    """gm's objects alive now, by type, and the asyncio tasks. The test's harness keeps objects of its own (the
    fake model's record of its requests, its connections' handlers), so neither the libraries' objects nor
    gm.testing's are counted."""
    gc.collect()
    return Counter(
        f"{module}.{type(thing).__qualname__}"
        for thing in gc.get_objects()
        if ((module := str(type(thing).__module__)).startswith("gm.") and not module.startswith("gm.testing."))
        or isinstance(thing, asyncio.Task)
    )


def grown_once_quiet(client: TestClient, before: Counter[str]) -> dict[str, int]:
    """What is alive beyond `before` once the rounds' tails have ended: an answer is sent before its round lets
    go of its lease, and the memory keeper works after it, so what is left is waited for up to QUIET_SECONDS."""
    portal, app = client.portal, cast(FastAPI, client.app)
    assert portal is not None  # the client is in use (a `with` block): its event loop runs the app
    deadline = time.monotonic() + QUIET_SECONDS
    while True:
        portal.call(app.state.service.game.settle)
        now = gms_objects()
        grown = {kind: now[kind] - before[kind] for kind in now if now[kind] > before[kind]}
        if not grown or time.monotonic() > deadline:
            return grown
        portal.call(asyncio.sleep, 0.05)


@pytest.mark.slow
def test_rounds_leave_none_of_their_objects_behind(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll(), reply("The quay is quiet.")] * 4 * len(ROUNDS)
    with served_app(store, worlds, script, faces=[11, 12, 13, 14] * 4, transport="http", settings=SETTINGS) as (
        client,
        _,
    ):
        story, auth = start_story(client)

        def play() -> None:
            for text in ROUNDS:
                answer = client.post(f"/api/stories/{story}/messages", json={"text": text}, headers=auth)
                assert answer.status_code == 200, answer.text

        play()  # first use: imports, caches, pools, the story's own state, the memory keeper's statements
        play()
        assert gms_objects() != Counter()  # else this test proves nothing: gm's objects are counted
        before = gms_objects()
        play()
        play()
        grown = grown_once_quiet(client, before)
    assert grown == {}, grown  # 16 more rounds, not one more object of gm's (or task) alive once they are over
