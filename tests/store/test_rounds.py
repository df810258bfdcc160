"""The round's database work, on SQLite and PostgreSQL: how many transactions it takes, and what each makes durable.

A round opens its attempt in one transaction (the story's lease taken, the story, a paused round, the
round's earlier rolls, the attempt, and what the game master is shown of the past), writes each roll
in its own transaction, and is accepted in one, which lets the lease go. What the model is told of a
roll is already committed: a second connection sees it while the model is called.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event
from sqlmodel import Session, select

from gm.errors import LeaseLost, StoryEnded
from gm.store import Attempt, MemoryEntry, RollRecord, RoundRecord, Store, Story, make_engine
from gm.store._workers import Workers
from gm.testing import calls, reply, tool_call
from gm.transcript.chain import roll_hash
from gm.transcript.shapes import RollPublic
from tests.support.databases import round_trips
from tests.support.rounds import narrate_roll, roll_mara, table


@contextmanager
def counted(store: Store) -> Iterator[dict[str, int]]:
    """Commits and connection checkouts on the store's engine while the block runs."""
    counts = {"commits": 0, "checkouts": 0}

    def commit(*_: Any) -> None:
        counts["commits"] += 1

    def checkout(*_: Any) -> None:
        counts["checkouts"] += 1

    event.listen(store.engine, "commit", commit)
    event.listen(store.engine.pool, "checkout", checkout)
    try:
        yield counts
    finally:
        event.remove(store.engine, "commit", commit)
        event.remove(store.engine.pool, "checkout", checkout)


def test_a_rolled_round_takes_three_transactions_and_a_plain_one_two(store: Store, harbor: Path) -> None:
    """The opening (with the lease and the past), the roll, the accepted round (letting the lease go): each
    one transaction on one connection, and nothing else."""

    async def play() -> tuple[dict[str, int], dict[str, int]]:
        async with table(store, [roll_mara(), narrate_roll(), reply("The quay is quiet.")], faces=[11]) as t:
            story = t.game.start_story(harbor, settings={"judge": "off"})
            t.game.world(story)  # the story's world is read once and then kept (gm.engine.game), before counting
            with counted(store) as rolled:
                await t.game.play(story, "I pick the lock.")
            await t.game.settle()
            with counted(store) as plain:
                await t.game.play(story, "I look around.")
            return rolled, plain

    rolled, plain = asyncio.run(play())
    assert rolled == {"commits": 3, "checkouts": 3}
    assert plain == {"commits": 2, "checkouts": 2}


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_on_postgresql_a_rolled_round_makes_four_round_trips_and_a_plain_one_three(store: Store, harbor: Path) -> None:
    """The opening two (the lease taken with the story read, then the rest with the commit, where the first roll
    goes read too), the roll one (written there, guarded on the chain not having moved: gm.store._rolls's `PLACES`)
    and the acceptance one, its commit included (its refusals are the server's: gm.store._accept)."""

    async def play() -> tuple[int, int]:
        async with table(store, [roll_mara(), narrate_roll(), reply("The quay is quiet.")], faces=[11]) as t:
            story = t.game.start_story(harbor, settings={"judge": "off"})
            t.game.world(story)
            with round_trips(store.engine) as count:
                await t.game.play(story, "I pick the lock.")
                rolled = count()
            await t.game.settle()
            with round_trips(store.engine) as count:
                await t.game.play(story, "I look around.")
                return rolled, count()

    assert asyncio.run(play()) == (4, 3)


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_roll_whose_place_was_taken_since_the_opening_goes_after_the_roll_that_took_it(store: Store) -> None:
    """The opening read where the attempt's first roll goes; another writer's roll took that place meanwhile (its
    lease ran out, say): the roll's guard finds it, and the roll is claimed and written after it, chained to it."""
    story = store.create_story(Story(title="t", world_data={}, settings={}))
    opened = store.open_attempt(story.id, regenerate=False)
    other = store.start_attempt(story.id, 1)
    theirs = store.record_roll(dice_roll(story.id, other.id))
    with round_trips(store.engine) as count:
        mine = store.record_roll(dice_roll(story.id, opened.attempt.id))
        assert count() == 4  # the guarded write that failed and its ROLLBACK, then the claim and the write
    assert (theirs.seq, mine.seq, mine.prev_hash) == (1, 2, roll_hash(RollPublic.from_stored(theirs).model_dump()))
    with round_trips(store.engine) as count:
        again = store.record_roll(dice_roll(story.id, opened.attempt.id))
        assert count() == 1  # where the roll before left the chain: one round trip
    assert (again.seq, again.id) == (3, mine.id + 1)  # type: ignore[operator]
    assert store.story(story.id).chain_length == 3


def dice_roll(story_id: str, attempt_id: str) -> RollRecord:
    return RollRecord(
        story_id=story_id, attempt_id=attempt_id, round_number=1, kind="dice", notation="1d6", faces=[[4]], total=4
    )


def test_a_roll_is_committed_before_the_model_hears_of_it(store: Store, database_url: str, harbor: Path) -> None:
    """While the game master is called with a roll's result, another connection already reads the roll,
    its place in the chain and the story's new head; the round is there as soon as the round returns."""
    seen: list[dict[str, Any]] = []
    elsewhere = make_engine(database_url)

    def look(request: dict[str, Any]) -> Any:
        with Session(elsewhere) as session:  # not the store's engine: only committed rows are visible here
            [roll] = session.exec(select(RollRecord)).all()
            story = session.exec(select(Story)).one()
            [attempt] = session.exec(select(Attempt)).all()
            seen.append(
                {
                    "roll": (roll.seq, roll.band, roll.faces),
                    "head": story.chain_head == roll_hash(RollPublic.from_stored(roll).model_dump(mode="json")),
                    "attempt": attempt.status,
                    "rounds": len(session.exec(select(RoundRecord)).all()),
                }
            )
        return narrate_roll()(request)

    async def play() -> Any:
        async with table(store, [roll_mara(), look], faces=[11]) as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "I pick the lock.")
            with Session(elsewhere) as session:
                return session.exec(select(RoundRecord)).one()

    try:
        accepted = asyncio.run(play())
    finally:
        elsewhere.dispose()
    assert seen == [{"roll": (1, "Partial success", [[11]]), "head": True, "attempt": "running", "rounds": 0}]
    assert [roll["band"] for roll in accepted.rolls] == ["Partial success"]


def test_a_round_of_a_number_already_accepted_is_refused_and_nothing_changes(store: Store) -> None:
    story = store.create_story(Story(title="t", world_data={}, settings={}))
    first = store.start_attempt(story.id, 1)
    store.accept_round(first.id, round_record(story.id, first.id, "first"))
    second = store.start_attempt(story.id, 1)
    with pytest.raises(LeaseLost, match="round 1 was played meanwhile"):
        store.accept_round(second.id, round_record(story.id, second.id, "second"))
    assert store.story(story.id).rounds == 1
    assert [record.narration for record in store.rounds(story.id)] == ["first"]
    with store.session() as session:
        assert session.get(Attempt, second.id).status == "running"  # type: ignore[union-attr]


def test_a_round_played_again_replaces_its_earlier_version_and_its_memory_and_is_counted_once(store: Store) -> None:
    story = store.create_story(Story(title="t", world_data={}, settings={}))
    for number in (1, 2):
        attempt = store.start_attempt(story.id, number)
        store.accept_round(attempt.id, round_record(story.id, attempt.id, f"first {number}", number=number))
        store.add_memory(
            MemoryEntry(story_id=story.id, round_number=number, summary=f"s{number}", rolls=[], outcomes=[])
        )
    again = store.start_attempt(story.id, 2, regenerating=True)
    store.accept_round(again.id, round_record(story.id, again.id, "second 2", number=2))
    assert store.story(story.id).rounds == 2
    assert [(record.number, record.narration) for record in store.rounds(story.id)] == [(1, "first 1"), (2, "second 2")]
    assert [entry.summary for entry in store.memories(story.id)] == ["s1"]  # the earlier version's memory went with it


def test_accepting_under_a_lease_held_by_another_writes_nothing(store: Store) -> None:
    story = store.create_story(Story(title="t", world_data={}, settings={}))
    assert store.take_lease(story.id, "theirs", 30)
    attempt = store.start_attempt(story.id, 1)
    with pytest.raises(LeaseLost):
        store.accept_round(attempt.id, round_record(story.id, attempt.id, "mine", clock=90), holder="mine")
    after = store.story(story.id)
    assert (after.rounds, after.clock, store.rounds(story.id)) == (0, None, [])


def test_opening_reads_the_story_and_the_rounds_earlier_rolls_and_abandons_a_dead_attempt(store: Store) -> None:
    story = store.create_story(Story(title="t", world_data={}, settings={}))
    for number in range(1, 6):
        attempt = store.start_attempt(story.id, number)
        store.accept_round(attempt.id, round_record(story.id, attempt.id, f"round {number}", number=number))
    dead = store.start_attempt(story.id, 6)
    store.record_roll(
        RollRecord(
            story_id=story.id, attempt_id=dead.id, round_number=6, kind="dice", notation="1d6", faces=[[4]], total=4
        )
    )
    opened = store.open_attempt(story.id, regenerate=False)
    assert (opened.number, opened.story.rounds) == (6, 5)
    assert [roll.total for roll in opened.retried] == [4]
    assert opened.unfinished == {dead.id}
    with store.session() as session:
        assert session.get(Attempt, dead.id).status == "abandoned"  # type: ignore[union-attr]
        assert session.get(Attempt, opened.attempt.id).status == "running"  # type: ignore[union-attr]


def test_a_refused_opening_writes_no_attempt(store: Store) -> None:
    """A story that has ended is refused as the attempt would open, and nothing is written."""
    story = store.create_story(Story(title="t", world_data={}, settings={}, ended_at=datetime.now(UTC)))
    with pytest.raises(StoryEnded, match="this story has ended"):
        store.open_attempt(story.id, regenerate=False)
    with store.session() as session:
        assert session.exec(select(Attempt)).all() == []


def round_record(
    story_id: str, attempt_id: str, narration: str, clock: int | None = None, number: int = 1
) -> RoundRecord:
    return RoundRecord(
        story_id=story_id,
        number=number,
        attempt_id=attempt_id,
        player_text="I wait.",
        narration=narration,
        outcomes=[],
        rolls=[],
        refusals=[],
        clock=clock,
    )


@contextmanager
def handed_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The work async code hands to the store's worker threads (gm.store._workers) while the block runs, by name."""
    handed: list[str] = []
    run = Workers.run

    async def counting(self: Workers, work: Any, *arguments: Any, **options: Any) -> Any:
        named = getattr(work, "func", work)  # a partial is named by its function
        handed.append(getattr(named, "__name__", repr(work)))
        return await run(self, work, *arguments, **options)

    monkeypatch.setattr(Workers, "run", counting)
    yield handed
    monkeypatch.setattr(Workers, "run", run)


def test_a_round_hands_its_work_to_the_database_thread_once_a_step(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening; each answer's tool calls that roll; the accept. A narrate alone runs on the loop (it needs no
    database), and so do its referee and judge: only its accept is a hand-off."""
    script = [roll_mara(), narrate_roll(), reply("The quay is quiet."), roll_mara(), narrate_roll()]

    async def play() -> dict[str, list[str]]:
        async with table(store, script, faces=[11, 12]) as t:
            unjudged = t.game.start_story(harbor, settings={"judge": "off"})
            judged = t.game.start_story(harbor)
            for story in (unjudged, judged):
                t.game.world(story)  # read once and kept (gm.engine.game), before counting
            seen = {}
            for name, story, text in [
                ("rolled", unjudged, "I pick."),
                ("plain", unjudged, "I look."),
                ("judged", judged, "I pick."),
            ]:
                with handed_off(monkeypatch) as handed:
                    await t.game.play(story, text)
                await t.game.settle()
                seen[name] = handed
            return seen

    seen = asyncio.run(play())
    assert seen == {
        "rolled": ["_open", "run_calls", "accept"],
        "plain": ["_open", "accept"],
        "judged": ["_open", "run_calls", "accept"],
    }


def test_a_refusal_in_the_answer_that_ends_the_round_is_told_and_counted(store: Store, harbor: Path) -> None:
    """An answer whose first call is refused and whose narrate ends the round (accepted in the same hand-off)."""
    bad_then_narrate = calls(
        [
            tool_call("roll_dice", {"notation": "2d", "reason": "x"}),
            tool_call("narrate", {"narration": "The quay is quiet.", "outcomes": []}),
        ]
    )
    told: list[tuple[str, dict[str, Any]]] = []

    async def play() -> Any:
        async with table(store, [bad_then_narrate]) as t:
            story = t.game.start_story(harbor, settings={"judge": "off"})
            return story, await t.game.play(story, "I look.", events=lambda kind, data: told.append((kind, data)))

    story, result = asyncio.run(play())
    assert result.narration == "The quay is quiet." and len(result.refusals) == 1
    assert [kind for kind, _ in told] == ["working", "refusal", "narration"]
    assert [(call.purpose, call.refusals) for call in store.model_calls(story)][:1] == [("game_master", 1)]
    assert store.rounds(story)[0].refusals == result.refusals
