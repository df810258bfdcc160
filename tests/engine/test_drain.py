"""Draining a Game (issue 40): no new round starts, rounds in flight end or are stopped at the bound, cleanly.

A stopped round fails as any stopped round does: its attempt marked failed, its lease let go, and its caller
told one sentence (`RoundFailed`), not a cancellation. On SQLite and PostgreSQL (the `store` fixture).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.engine._in_flight import CLOSED, STOPPED_BY_DRAIN
from gm.errors import RoundFailed, ServerStopping
from gm.store import Attempt, Store
from gm.testing import Request, Step, reply, slow
from tests.support.rounds import table
from tests.support.worlds import write_world

SLOW_TEXT = "I wait for the tide."


def script(request: Request) -> Step:
    text = request["messages"][-1]["content"]
    if text == SLOW_TEXT:
        return slow(reply("The tide comes at last."), 30)  # far past the drain's bound
    return slow(reply(f"The harbour answers: {text}"), 0.3)  # ends within the bound


@pytest.mark.slow
def test_a_drain_lets_quick_rounds_finish_stops_slow_ones_cleanly_and_refuses_new_ones(
    store: Store, tmp_path: Path
) -> None:
    async def play() -> tuple[Any, list[Any], BaseException | None]:
        async with table(store, script, transport="http") as played:
            game = played.game
            stories = [game.start_story(write_world(tmp_path / f"w{n}")) for n in range(4)]
            texts = [SLOW_TEXT, SLOW_TEXT, "I look around.", "I listen."]
            rounds = [asyncio.create_task(game.play(story, text)) for story, text in zip(stories, texts)]
            while len(game.rounds) < 4:
                await asyncio.sleep(0.01)
            drained = await game.rounds.drain(1.5)
            results = await asyncio.gather(*rounds, return_exceptions=True)
            try:
                await game.play(stories[2], "And again.")
                refused = None
            except ServerStopping as error:
                refused = error
            return drained, results, refused

    drained, results, refused = asyncio.run(play())
    assert (drained.in_flight, drained.finished, drained.failed, drained.stopped) == (4, 2, 2, 2)
    assert drained.seconds < 1.5 + 2  # the bound, and the stopped rounds' failing
    assert [type(result) for result in results[:2]] == [RoundFailed, RoundFailed]
    assert [str(result) for result in results[:2]] == [STOPPED_BY_DRAIN] * 2
    assert [result.narration for result in results[2:]] == [
        "The harbour answers: I look around.",
        "The harbour answers: I listen.",
    ]
    assert isinstance(refused, ServerStopping) and str(refused) == CLOSED
    with store.session() as session:
        states = sorted(attempt.status for attempt in session.exec(select(Attempt)))
        held = [story.lease_holder for story in store.stories()]
    assert states == ["accepted", "accepted", "failed", "failed"]  # none left running
    assert held == [None] * 4


@pytest.mark.parametrize("seconds", [0.0])
def test_a_drain_with_nothing_in_flight_ends_at_once(store: Store, seconds: float) -> None:
    async def drain() -> Any:
        async with table(store, script) as played:
            return await played.game.rounds.drain(seconds)

    drained = asyncio.run(drain())
    assert (drained.in_flight, drained.finished, drained.failed, drained.stopped) == (0, 0, 0, 0)
