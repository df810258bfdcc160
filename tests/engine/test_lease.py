"""The story's round lease (issue 10, defects 2 and 3): renewed while a round runs, fencing the accepted round.

A round that outlives its lease must not lose an accepted round: while it runs, a heartbeat renews
the lease, and accepting the round is written only if its attempt still holds the lease. A round whose
lease was taken meanwhile fails with one sentence, and its rolls stay. An attempt whose process died
is marked abandoned when the story's next round starts. Since issue 15 the lease is taken by the
transaction that opens the round and let go by the one that accepts (or pauses) it; every other end
lets it go on its own. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.exc import OperationalError
from sqlmodel import col, select

import gm.engine._attempt
from gm.engine.round import RoundPaused, RoundResult, RoundSettings
from gm.errors import (
    Conflict,
    GmError,
    LeaseBusy,
    LeaseLost,
    RoundFailed,
    SettingsError,
    StoryBusy,
    StoryEnded,
    StoryNotFound,
)
from gm.store import Attempt, RollRecord, RoundRecord, Store, Story
from gm.store._stories import Claim
from gm.testing import http_error, reply, slow
from tests.support.rounds import narrate_roll, roll_mara, table
from tests.support.worlds import write_world

SHORT = RoundSettings(lease_seconds=0.6, heartbeat_seconds=0.15)


def attempts(store: Store) -> list[Attempt]:
    with store.session() as session:
        return list(session.exec(select(Attempt).order_by(col(Attempt.started_at))))


def holder_of(store: Store, story_id: str) -> str | None:
    return store.story(story_id).lease_holder


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_heartbeat_beats_while_the_round_runs_and_ends_with_it(store: Store, tmp_path: Path) -> None:
    def beating() -> int:
        return len([task for task in asyncio.all_tasks() if task.get_name().startswith("heartbeat")])

    async def play() -> tuple[int, int]:
        async with table(store, [slow(reply("Done."), 0.5)], settings=SHORT) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            round_ = asyncio.create_task(played.game.play(story, "I wait."))
            # In the model's 0.5 s wait, the lease taken: not a fixed sleep, which a loaded machine outruns.
            for _ in range(400):
                if played.master.requests:
                    break
                await asyncio.sleep(0.025)
            during = beating()
            await round_
            await asyncio.sleep(0.3)
            return during, beating()

    assert asyncio.run(play()) == (1, 0)


def test_the_settings_are_checked() -> None:
    from gm.engine.lease import check_settings

    with pytest.raises(SettingsError, match="heartbeat"):
        check_settings(RoundSettings(lease_seconds=10, heartbeat_seconds=10))
    assert RoundSettings().lease_seconds <= 30 and RoundSettings().heartbeat_seconds * 2 < RoundSettings().lease_seconds


# The lease taken by the transaction that opens the round, and let go by the one that ends it (issue 15).


def test_opening_under_a_lease_another_holds_does_nothing_at_all(store: Store) -> None:
    """The lease's UPDATE comes first: a story another round holds is refused before anything is read or
    written (a running attempt there is the other round's, not a dead one to mark abandoned)."""
    story = store.create_story(Story(title="T", world_data={}, dice_data=None, settings={}))
    assert store.take_lease(story.id, "theirs", 30)
    theirs = store.start_attempt(story.id, 1)
    with pytest.raises(LeaseBusy, match="being played"):
        store.open_attempt(story.id, regenerate=False, lease=Claim("mine", 30))
    assert [(a.id, a.status) for a in attempts(store)] == [(theirs.id, "running")]
    assert holder_of(store, story.id) == "theirs"
    with pytest.raises(StoryNotFound):
        store.open_attempt("0" * 32, regenerate=False, lease=Claim("mine", 30))


def test_opening_takes_a_free_or_expired_lease_in_its_own_transaction(store: Store) -> None:
    story = store.create_story(Story(title="T", world_data={}, dice_data=None, settings={}))
    assert store.take_lease(story.id, "dead process", -1)  # expired long ago
    opened = store.open_attempt(story.id, regenerate=False, lease=Claim("mine", 30))
    assert holder_of(store, story.id) == "mine" and opened.number == 1
    assert not store.take_lease(story.id, "theirs", 30)

    store.release_lease(story.id, "mine")
    with store.session() as session:  # an ended story plays no more rounds
        ended = session.get(Story, story.id)
        assert ended is not None
        ended.ended_at = datetime.now(UTC)
        session.add(ended)
        session.commit()
    with pytest.raises(StoryEnded):  # a refusal rolls the whole opening back, the lease with it
        store.open_attempt(story.id, regenerate=False, lease=Claim("refused", 30))
    assert holder_of(store, story.id) is None and len(attempts(store)) == 1


def test_a_round_waits_for_the_lease_and_plays_once_it_is_let_go(store: Store, tmp_path: Path) -> None:
    async def play() -> tuple[Any, Any, float]:
        waiting = RoundSettings(wait_seconds=5)
        async with table(store, [reply("The fog lifts.")], settings=waiting) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            assert store.take_lease(story, "theirs", 30)
            started = asyncio.get_running_loop().time()
            round_ = asyncio.create_task(played.game.play(story, "I wait."))
            await asyncio.sleep(0.3)
            during = (round_.done(), [a.status for a in attempts(store)])
            store.release_lease(story, "theirs")
            result = await round_
            return during, result, asyncio.get_running_loop().time() - started

    during, result, waited = asyncio.run(play())
    assert during == (False, [])  # waiting: nothing opened while another held the story
    assert result.number == 1 and waited >= 0.3
    [story] = store.stories()
    assert story.lease_holder is None and story.lease_expires is None  # let go by the accepting transaction


def test_a_busy_story_is_refused_with_nothing_written(store: Store, tmp_path: Path) -> None:
    async def play() -> BaseException | Any:
        async with table(store, [], settings=RoundSettings(wait_seconds=0.2)) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            assert store.take_lease(story, "theirs", 30)
            [outcome] = await asyncio.gather(played.game.play(story, "I shout."), return_exceptions=True)
            return outcome

    outcome = asyncio.run(play())
    assert isinstance(outcome, StoryBusy) and str(outcome) == (
        "another round of this story is being played right now; try again when it is done"
    )
    [story] = store.stories()
    assert attempts(store) == [] and story.lease_holder == "theirs"  # never let go by a round that did not take it


def test_the_lease_is_let_go_after_a_refused_opening(store: Store, tmp_path: Path) -> None:
    async def play() -> tuple[str, BaseException | Any]:
        async with table(store, []) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            await played.game.end(story)
            [outcome] = await asyncio.gather(played.game.play(story, "Once more."), return_exceptions=True)
            return story, outcome

    story, outcome = asyncio.run(play())
    assert isinstance(outcome, Conflict) and "ended" in str(outcome)
    assert holder_of(store, story) is None and attempts(store) == []


def test_the_lease_is_let_go_after_a_failed_round(store: Store, tmp_path: Path) -> None:
    async def play() -> tuple[str, BaseException | Any]:
        async with table(store, [http_error(400, "Bad request.")], transport="http") as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            [outcome] = await asyncio.gather(played.game.play(story, "I wait."), return_exceptions=True)
            return story, outcome

    story, outcome = asyncio.run(play())
    assert isinstance(outcome, GmError), outcome
    assert holder_of(store, story) is None
    assert [a.status for a in attempts(store)] == ["failed"]


def test_the_lease_is_let_go_after_a_cancelled_round(store: Store, tmp_path: Path) -> None:
    async def play() -> str:
        asked = asyncio.Event()

        async def held(request: dict[str, Any]) -> Any:
            asked.set()
            await asyncio.sleep(30)
            return reply("never")

        async with table(store, [held, reply("The fog lifts.")]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            round_ = asyncio.create_task(played.game.play(story, "I wait."))
            await asked.wait()
            round_.cancel()
            with pytest.raises(asyncio.CancelledError):
                await round_
            assert holder_of(store, story) is None
            assert (await played.game.play(story, "Again.")).number == 1  # the story is free at once
            return story

    story = asyncio.run(play())
    assert [a.status for a in attempts(store)] == ["failed", "accepted"]
    assert holder_of(store, story) is None


def test_the_lease_is_let_go_when_the_opening_fails_after_taking_it(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure between the opening's commit and the first model call (here the prompt) still lets it go."""

    def broken(*arguments: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(gm.engine._attempt, "game_master_messages", broken)

    async def play() -> tuple[str, BaseException | Any]:
        async with table(store, []) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            [outcome] = await asyncio.gather(played.game.play(story, "I wait."), return_exceptions=True)
            return story, outcome

    story, outcome = asyncio.run(play())
    assert isinstance(outcome, RuntimeError)
    assert holder_of(store, story) is None
    assert [a.status for a in attempts(store)] == ["running"]  # as before: the next round marks it abandoned


def test_a_round_paused_for_dice_lets_the_lease_go_and_takes_it_again_when_answered(
    store: Store, tmp_path: Path
) -> None:
    async def play() -> tuple[str | None, str | None, Any]:
        async with table(store, [roll_mara(), narrate_roll()]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"), settings={"dice_from": "player"})
            paused = await played.game.play(story, "I pick the lock.")
            assert isinstance(paused, RoundPaused)
            while_paused = holder_of(store, story)
            assert store.take_lease(story, "theirs", 30)  # someone else holds it as the player answers
            with pytest.raises(StoryBusy):
                await played.game.answer(story, "11")
            still = holder_of(store, story)
            store.release_lease(story, "theirs")
            return while_paused, still, await played.game.answer(story, "11")

    while_paused, still, result = asyncio.run(play())
    assert while_paused is None and still == "theirs"
    assert isinstance(result, RoundResult) and result.number == 1
    [story] = store.stories()
    assert story.lease_holder is None


def test_a_lease_that_cannot_be_let_go_leaves_the_rounds_own_error_to_tell(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unreachable(*arguments: Any) -> None:
        raise OperationalError("UPDATE stories ...", {}, Exception("database is locked"))

    monkeypatch.setattr(store, "release_lease", unreachable)

    async def play() -> tuple[str, BaseException | Any]:
        async with table(store, [reply(""), reply(""), reply("")], settings=RoundSettings(max_refusals=1)) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            [outcome] = await asyncio.gather(played.game.play(story, "I wait."), return_exceptions=True)
            return story, outcome

    story, outcome = asyncio.run(play())
    assert isinstance(outcome, RoundFailed) and "refusals" in str(outcome), outcome
    assert holder_of(store, story) is not None  # left to run out
    assert "could not be let go" in caplog.text
