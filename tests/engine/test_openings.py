"""Rounds opening at once wait for a place (gm.engine.lease.OPENINGS_AT_ONCE): the rounds already open go first.

Under many stories every round's opening used to join the database threads' queue at once, and the work of the
rounds already open (their rolls, their acceptance, a page's read) queued behind all of them, each of those rounds
holding its whole state while it waited (docs/decisions/round-openings.md). On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from gm.engine.lease import OPENINGS_AT_ONCE
from gm.store import Store
from gm.store._workers import SERVER_THREADS
from gm.testing import reply
from tests.support.rounds import table
from tests.support.worlds import write_world

STORIES = OPENINGS_AT_ONCE * 3


def test_work_queued_after_many_openings_waits_for_a_few_of_them_only(store: Store, tmp_path: Path) -> None:
    opened: list[str] = []
    open_attempt = store.open_attempt

    def counted(story_id: str, **options: Any) -> Any:
        opened.append(story_id)
        return open_attempt(story_id, **options)

    store.open_attempt = counted  # type: ignore[method-assign]

    async def play() -> tuple[int, list[int]]:
        async with table(store, [reply("The quay is quiet.")] * STORIES) as played:
            world = write_world(tmp_path / "w")
            stories = [played.game.start_story(world) for _ in range(STORIES)]
            free = threading.Event()
            # Every database thread held, so that each round's opening queues (or waits for its place) at once.
            blockers = [asyncio.create_task(store.off_loop(free.wait, 10)) for _ in range(SERVER_THREADS)]
            rounds = [asyncio.create_task(played.game.play(story, "I wait.")) for story in stories]
            await asyncio.sleep(0.2)  # every round has reached its opening
            late = asyncio.create_task(store.off_loop(lambda: len(opened)))  # work of a round already open, say
            await asyncio.sleep(0.05)
            free.set()
            before_late = await late
            await asyncio.gather(*blockers)
            results = await asyncio.gather(*rounds)
            return before_late, [result.number for result in results]

    before_late, numbers = asyncio.run(play())
    assert numbers == [1] * STORIES  # every round played, in its turn
    assert len(opened) == len(set(opened)) == STORIES  # each story opened its round once
    # Only the openings holding a place were queued ahead of it; without the gate all of them were.
    assert before_late <= OPENINGS_AT_ONCE, before_late
