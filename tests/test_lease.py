"""The story's round lease (issue 10, defects 2 and 3): renewed while a round runs, fencing the accepted round.

A round that outlives its lease must not lose an accepted round: while it runs, a heartbeat renews
the lease, and accepting the round is written only if its attempt still holds the lease. A round whose
lease was taken meanwhile fails with one sentence, and its rolls stay. An attempt whose process died
is marked abandoned when the story's next round starts. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import write_world
from rounds import narrate_roll, roll_mara, table
from sqlalchemy import update
from sqlmodel import col, select

from gm.errors import LeaseLost, StoryBusy
from gm.round import RoundSettings
from gm.store import Attempt, RollRecord, RoundRecord, Store, Story
from gm.testing import reply, slow

SHORT = RoundSettings(lease_seconds=0.6, heartbeat_seconds=0.15)


def attempts(store: Store) -> list[Attempt]:
    with store.session() as session:
        return list(session.exec(select(Attempt).order_by(col(Attempt.started_at))))


def holder_of(store: Store, story_id: str) -> str | None:
    return store.story(story_id).lease_holder


def test_a_long_round_keeps_its_lease_and_a_second_round_is_refused(store: Store, tmp_path: Path) -> None:
    """The issue's case: a lease shorter than the model's answer. Two rounds used to both become round 1."""

    async def play() -> tuple[Any, BaseException | Any]:
        script = [slow(reply("The tide turns slowly."), 1.5), reply("never played")]
        async with table(store, script, settings=SHORT) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            first = asyncio.create_task(played.game.play(story, "I wait."))
            await asyncio.sleep(1.0)  # past the lease, which the heartbeat has renewed meanwhile
            second = await asyncio.gather(played.game.play(story, "I run."), return_exceptions=True)
            return await first, second[0]

    first, second = asyncio.run(play())
    assert isinstance(second, StoryBusy), second
    assert first.number == 1 and first.narration == "The tide turns slowly."
    with store.session() as session:
        assert [(r.number, r.narration) for r in session.exec(select(RoundRecord))] == [(1, "The tide turns slowly.")]
    [story] = store.stories()
    assert story.rounds == 1 and story.lease_holder is None  # released at the end


def test_a_round_whose_lease_was_taken_is_not_written_and_its_rolls_stay(store: Store, tmp_path: Path) -> None:
    async def play() -> tuple[str, BaseException | Any]:
        narrating = lambda request: slow(narrate_roll()(request), 1.0)  # noqa: E731
        async with table(store, [roll_mara(), narrating], faces=[11], settings=SHORT) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            round_ = asyncio.create_task(played.game.play(story, "I pick the lock."))
            await asyncio.sleep(0.5)  # the roll is written; the game master is narrating
            steal(store, story)  # as if this process had been paused past its lease and another took it
            [outcome] = await asyncio.gather(round_, return_exceptions=True)
            return story, outcome

    story, outcome = asyncio.run(play())
    assert isinstance(outcome, LeaseLost), outcome
    assert len(str(outcome).split(". ")) == 1 and "not saved" in str(outcome)
    [attempt] = attempts(store)
    assert attempt.status == "failed" and attempt.error == str(outcome)
    assert [roll.check_key for roll in store.rolls_of_attempt(attempt.id)] == ["attempt"]  # the roll stays
    assert store.rounds(story) == [] and store.story(story).rounds == 0
    # both of the game master's calls are recorded, and the judge's reading of the narration
    assert [call.purpose for call in store.model_calls(story)] == ["game_master", "game_master", "judge"]
    assert holder_of(store, story) == "thief"  # releasing never takes another holder's lease


def steal(store: Store, story_id: str) -> None:
    later = datetime.now(UTC) + timedelta(seconds=60)
    with store.session() as session:
        session.execute(
            update(Story).where(col(Story.id) == story_id).values(lease_holder="thief", lease_expires=later)
        )
        session.commit()


def test_accepting_is_fenced_on_the_lease_holder(store: Store) -> None:
    story = store.create_story(Story(title="T", world_data={}, dice_data=None, settings={}))
    assert store.take_lease(story.id, "mine", 30)
    attempt = store.start_attempt(story.id, 1)

    def record() -> RoundRecord:
        return RoundRecord(
            story_id=story.id,
            number=1,
            attempt_id=attempt.id,
            player_text="p",
            narration="n",
            outcomes=[],
            rolls=[],
            refusals=[],
        )

    with pytest.raises(LeaseLost):
        store.accept_round(attempt.id, record(), holder="someone else")
    assert store.rounds(story.id) == [] and store.story(story.id).rounds == 0
    store.accept_round(attempt.id, record(), holder="mine")
    assert [r.number for r in store.rounds(story.id)] == [1] and store.story(story.id).rounds == 1


def test_renewing_keeps_a_lease_and_never_takes_anothers(store: Store) -> None:
    story = store.create_story(Story(title="T", world_data={}, dice_data=None, settings={}))
    assert store.take_lease(story.id, "mine", 0.3)
    assert store.renew_lease(story.id, "mine", 30)
    assert not store.renew_lease(story.id, "theirs", 30)
    assert not store.take_lease(story.id, "theirs", 30)  # renewed, so still held


def test_the_next_round_marks_an_abandoned_attempt(store: Store, tmp_path: Path) -> None:
    async def play() -> str:
        async with table(store, [reply("The harbour is quiet.")], settings=SHORT) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            # A process took the lease and started an attempt, then died: its lease expired, its attempt ran on.
            assert store.take_lease(story, "dead process", 0.05)
            dead = store.start_attempt(story, 1)
            store.record_roll(
                RollRecord(
                    story_id=story,
                    attempt_id=dead.id,
                    round_number=1,
                    kind="dice",
                    notation="1d6",
                    faces=[[3]],
                    total=3,
                    line="1d6 (3) = 3",
                )
            )
            await asyncio.sleep(0.1)
            result = await played.game.play(story, "I look around.")
            assert result.number == 1
            return dead.id

    dead_id = asyncio.run(play())
    by_id = {attempt.id: attempt for attempt in attempts(store)}
    assert by_id[dead_id].status == "abandoned" and "stopped" in (by_id[dead_id].error or "")
    assert [a.status for a in by_id.values() if a.id != dead_id] == ["accepted"]
    assert len(store.rolls_of_attempt(dead_id)) == 1  # its roll stays, marked by its abandoned attempt


def test_the_heartbeat_beats_while_the_round_runs_and_ends_with_it(store: Store, tmp_path: Path) -> None:
    def beating() -> int:
        return len([task for task in asyncio.all_tasks() if task.get_name().startswith("heartbeat")])

    async def play() -> tuple[int, int]:
        async with table(store, [slow(reply("Done."), 0.5)], settings=SHORT) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            round_ = asyncio.create_task(played.game.play(story, "I wait."))
            await asyncio.sleep(0.25)
            during = beating()
            await round_
            await asyncio.sleep(0.3)
            return during, beating()

    assert asyncio.run(play()) == (1, 0)


def test_the_settings_are_checked() -> None:
    from gm.lease import check_settings

    with pytest.raises(ValueError, match="heartbeat"):
        check_settings(RoundSettings(lease_seconds=10, heartbeat_seconds=10))
    assert RoundSettings().lease_seconds <= 30 and RoundSettings().heartbeat_seconds * 2 < RoundSettings().lease_seconds
