"""A story's live events in the store (gm.store._events): numbered in commit order under concurrent writers,
kept up to a bound, and gone with their story."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from gm.errors import LeaseLost
from gm.store import RollRecord, RoundRecord, Store
from gm.store import _events as events
from gm.store.records import Story


def a_story(store: Store) -> str:
    return store.create_story(Story(title="t", world_data={}, settings={}, token_hash="h")).id


def test_writers_at_once_take_every_number_once_in_order(store: Store) -> None:
    story = a_story(store)

    def write(writer: int) -> None:
        for number in range(15):
            store.publish_event(story, "roll", {"writer": writer, "number": number})

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    read = store.events_after(story, 0)
    assert [event.seq for event in read.events] == list(range(1, 61))
    for writer in range(4):  # each writer's events in the order it wrote them
        mine = [event.data["number"] for event in read.events if event.data["writer"] == writer]
        assert mine == list(range(15))
    assert store.events_after(story, 58).events[0].seq == 59


def test_old_events_are_pruned_and_a_reader_behind_them_is_told(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "KEEP_EVENTS", 10)
    monkeypatch.setattr(events, "PRUNE_EVERY", 5)
    story = a_story(store)
    for number in range(20):
        store.publish_event(story, "roll", {"number": number}, ["seat-a"])
    read = store.events_after(story, 2)
    assert read.missed and read.newest == 20
    kept = store.events_after(story, 10)
    assert not kept.missed and [event.seq for event in kept.events] == list(range(11, 21))
    assert kept.events[0].seen_by("seat-a") and not kept.events[0].seen_by("seat-b")


def test_events_go_with_their_story(store: Store) -> None:
    story = a_story(store)
    store.publish_event(story, "action", {})
    store.delete_story(story)
    assert not store.events_after(story, 0).exists
    assert store.publish_event(story, "action", {}) == 0  # nobody left to tell


def test_events_written_together_take_the_next_numbers_in_order(store: Store) -> None:
    """A round's events that queued while the one before was written go in one transaction (gm.web._live.Relay)."""
    story = a_story(store)
    store.publish_event(story, "action", {})
    together = [("roll", {"n": 1}, None), ("roll", {"n": 2}, ["seat-a"]), ("round", {"n": 3}, None)]
    assert store.publish_events(story, together) == 4
    read = store.events_after(story, 0)
    assert [(e.seq, e.kind, e.data, e.audience) for e in read.events[1:]] == [
        (2, "roll", {"n": 1}, None),
        (3, "roll", {"n": 2}, ["seat-a"]),
        (4, "round", {"n": 3}, None),
    ]
    assert store.publish_event(story, "action", {}) == 5


@contextmanager
def counted(store: Store) -> Iterator[dict[str, int]]:
    """The commits on the store's engine while the block runs."""
    counts = {"commits": 0}

    def commit(*_: Any) -> None:
        counts["commits"] += 1

    event.listen(store.engine, "commit", commit)
    try:
        yield counts
    finally:
        event.remove(store.engine, "commit", commit)


def round_record(story_id: str, attempt_id: str) -> RoundRecord:
    return RoundRecord(story_id=story_id, number=1, attempt_id=attempt_id, player_text="I wait.", narration="n")


class Rider:
    """A round's rider as gm.web._live.Relay is one: its queued events, and what the acceptance told it."""

    def __init__(self, story_id: str, queued: list[events.Event], busy: bool = False) -> None:
        self.story_id, self.queued, self.busy = story_id, queued, busy
        self.action: events.Event | None = None
        self.ends: list[tuple[list[events.Event], bool]] = []
        self.lasts: list[events.Event | None] = []

    def take(self, stage: events.Stage) -> list[events.Event] | None:
        opening = stage == "opening"
        if self.busy or (opening and self.action is None):
            return None
        if opening and self.action is not None:
            taken, self.action = [self.action], None
            return taken
        taken, self.queued = self.queued, []
        return taken

    def ridden(self, taken: list[events.Event], written: bool, last: events.Event | None = None) -> None:
        self.ends.append((taken, written))
        self.lasts.append(last)


def accepted_with(store: Store, story: str, rider: Rider, *, holder: str | None = None) -> dict[str, int]:
    """Round 1 of `story` accepted with `rider` set, as the web layer sets it; the acceptance's commits."""
    attempt = store.start_attempt(story, 1)
    token = events.RIDER.set(weakref.ref(rider))
    try:
        with counted(store) as counts:
            store.accept_round(attempt.id, round_record(story, attempt.id), holder=holder)
    finally:
        events.RIDER.reset(token)
    return counts


def kinds(store: Store, story: str) -> list[tuple[int, str, dict[str, Any]]]:
    return [(event.seq, event.kind, event.data) for event in store.events_after(story, 0).events]


def test_a_round_s_events_go_in_the_transaction_that_accepts_it_on_postgresql(store: Store) -> None:
    """The queued events and the `round` event after the ones written before, in the acceptance's one commit."""
    story = a_story(store)
    store.publish_event(story, "action", {})
    rider = Rider(story, [("roll", {"n": 1}, None)])
    counts = accepted_with(store, story, rider)
    if store.engine.dialect.name != "postgresql":  # SQLite: the relay writes them itself, as before
        assert rider.ends == [] and rider.queued and kinds(store, story) == [(1, "action", {})]
        return
    assert counts["commits"] == 1  # no transaction of their own
    assert kinds(store, story) == [
        (1, "action", {}),
        (2, "roll", {"n": 1}),
        (3, "round", {"number": 1, "regenerated": False}),
    ]
    assert rider.ends == [([("roll", {"n": 1}, None)], True)]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_round_refused_at_its_acceptance_writes_none_of_its_events_and_gives_them_back(store: Store) -> None:
    story = a_story(store)
    rider = Rider(story, [("roll", {"n": 1}, None)])
    with pytest.raises(LeaseLost):
        accepted_with(store, story, rider, holder="not-the-holder")
    assert kinds(store, story) == []  # never announced: the transaction was rolled back
    assert rider.ends == [([("roll", {"n": 1}, None)], False)]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_nothing_rides_while_the_rider_is_writing_or_for_another_story(store: Store) -> None:
    story = a_story(store)
    busy = Rider(story, [("roll", {"n": 1}, None)], busy=True)  # an event on its way: the round's must follow it
    accepted_with(store, story, busy)
    other = a_story(store)
    elsewhere = Rider(story, [("roll", {"n": 2}, None)])  # another story's round accepted in its task
    accepted_with(store, other, elsewhere)
    assert kinds(store, story) == kinds(store, other) == []
    assert busy.ends == elsewhere.ends == [] and elsewhere.queued


def test_a_round_s_action_goes_in_the_transaction_that_opens_it_on_postgresql(store: Store) -> None:
    story = a_story(store)
    rider = Rider(story, [])
    rider.action = ("action", {"player_text": "I wait."}, None)
    token = events.RIDER.set(weakref.ref(rider))
    try:
        with counted(store) as counts:
            store.open_attempt(story, regenerate=False)
    finally:
        events.RIDER.reset(token)
    if store.engine.dialect.name != "postgresql":
        assert rider.ends == [] and rider.action is not None and kinds(store, story) == []
        return
    assert counts["commits"] == 1
    assert kinds(store, story) == [(1, "action", {"player_text": "I wait."})]
    assert rider.ends == [([("action", {"player_text": "I wait."}, None)], True)]


def rolled_with(store: Store, story: str, rider: Rider) -> tuple[dict[str, int], list[int]]:
    """A roll of `story` written with `rider` set, its card counting each call; the roll's commits, and the ids
    of the rolls whose cards were made."""
    attempt = store.start_attempt(story, 1)
    roll = RollRecord(
        story_id=story, attempt_id=attempt.id, round_number=1, kind="dice", notation="1d6", faces=[[4]], total=4
    )
    made: list[int] = []

    def card(stored: RollRecord) -> dict[str, Any]:
        assert stored.id is not None
        made.append(stored.id)
        return {"id": stored.id, "seq": stored.seq}

    token = events.RIDER.set(weakref.ref(rider))
    try:
        with counted(store) as counts:
            store.record_roll(roll, card)
    finally:
        events.RIDER.reset(token)
    return counts, made


def test_a_roll_s_event_goes_in_the_roll_s_own_transaction_on_postgresql(store: Store) -> None:
    """After the events the round queued before it; its card is made only then (else its caller tells it)."""
    story = a_story(store)
    rider = Rider(story, [("action", {"player_text": "I roll."}, None)])
    counts, made = rolled_with(store, story, rider)
    if store.engine.dialect.name != "postgresql":
        assert made == [] and rider.ends == [] and kinds(store, story) == []
        return
    assert counts["commits"] == 1  # no transaction of its own
    [roll_id] = made
    assert kinds(store, story) == [(1, "action", {"player_text": "I roll."}), (2, "roll", {"id": roll_id, "seq": 1})]
    assert rider.ends == [([("action", {"player_text": "I roll."}, None)], True)]
    assert rider.lasts == [("roll", {"id": roll_id, "seq": 1}, None)]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_roll_s_card_is_not_made_while_the_rider_is_writing(store: Store) -> None:
    story = a_story(store)
    busy = Rider(story, [("action", {}, None)], busy=True)
    _, made = rolled_with(store, story, busy)
    assert made == [] and busy.ends == [] and kinds(store, story) == []
    assert [roll.seq for roll in store.story_rolls(story)] == [1]  # the roll itself is written as ever
