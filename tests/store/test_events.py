"""A story's live events in the store (gm.store._events): numbered in commit order under concurrent writers,
kept up to a bound, and gone with their story."""

from __future__ import annotations

import threading

import pytest

from gm.store import Store
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
