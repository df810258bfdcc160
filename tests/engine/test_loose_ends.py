"""The writes that end a round the database failed in the middle of (gm.engine._loose_ends): kept while the
database is out of reach, written once it answers, never tried again when it refuses them, and bounded."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError, OperationalError

from gm.engine import _loose_ends
from gm.engine._loose_ends import LooseEnds
from gm.store import Attempt, Store, Story


def opened(store: Store) -> tuple[str, str]:
    """A story with a running attempt, its lease held by "gone"."""
    story = store.create_story(Story(title="T", world_data={}, dice_data=None, settings={}))
    attempt = store.start_attempt(story.id, 1)
    assert store.take_lease(story.id, "gone", 60)
    return story.id, attempt.id


def status(store: Store, attempt_id: str) -> str:
    with store.session() as session:
        found = session.get(Attempt, attempt_id)
        assert found is not None
        return found.status


def raising(error: Exception) -> Any:
    def fails(*arguments: Any, **keywords: Any) -> Any:
        raise error

    return fails


def test_loose_ends_stay_while_the_database_is_out_of_reach_and_are_written_once_it_answers(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    story, attempt = opened(store)
    ends = LooseEnds(store)
    ends.fail_later(story, attempt, "the database could not be used", [])
    ends.release_later(story, "gone")
    with monkeypatch.context() as down:
        down.setattr(store, "fail_attempt", raising(OperationalError("x", {}, sqlite3.OperationalError("disk I/O"))))
        with pytest.raises(OperationalError):
            asyncio.run(ends.settle(story))
    assert len(ends) == 1 and status(store, attempt) == "running"
    asyncio.run(ends.settle(story))
    assert len(ends) == 0 and status(store, attempt) == "failed"
    assert store.take_lease(story, "next", 60)  # let go


def test_a_write_the_database_refuses_is_dropped_not_tried_again(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    story, attempt = opened(store)
    ends = LooseEnds(store)
    ends.fail_later(story, attempt, "the database could not be used", [])
    monkeypatch.setattr(store, "fail_attempt", raising(IntegrityError("x", {}, sqlite3.IntegrityError("UNIQUE"))))
    asyncio.run(ends.settle(story))  # no error: the story's next round is not held on it
    assert len(ends) == 0


def test_loose_ends_are_bounded(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_loose_ends, "MAX_STORIES", 3)
    ends = LooseEnds(store)
    for number in range(5):
        ends.release_later(f"story-{number}", "gone")
    assert len(ends) == 3
