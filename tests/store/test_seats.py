"""Seats and the table's message chain, on SQLite and PostgreSQL: one live seat per character, a revoked seat
opens nothing, one gathered action per seat, and the chain links each message to the one before."""

from __future__ import annotations

import pytest

from gm.errors import Conflict, NotFound
from gm.store import Store, Story
from gm.transcript.chain import message_genesis, message_hash


def new_story(store: Store) -> Story:
    return store.create_story(Story(title="T", world_data={"title": "T"}, dice_data=None, settings={"dice": "shown"}))


def test_a_character_has_one_live_seat_and_a_revoked_one_opens_nothing(store: Store) -> None:
    story = new_story(store)
    seat = store.create_seat(story.id, "Mara", "a" * 64, name="Ann")
    found = store.seat_by_token("a" * 64, story.id)
    assert found is not None and (found.id, found.character, found.name) == (seat.id, "Mara", "Ann")
    with pytest.raises(Conflict, match="Mara already has a seat"):
        store.create_seat(story.id, "Mara", "b" * 64)
    store.revoke_seat(story.id, seat.id)
    assert store.seat_by_token("a" * 64) is None
    again = store.create_seat(story.id, "Mara", "b" * 64)  # a revoked seat frees its character
    assert [s.id for s in store.seats(story.id, live=True)] == [again.id]
    assert len(store.seats(story.id)) == 2
    other = new_story(store)
    assert store.seat_by_token("b" * 64, other.id) is None  # a seat opens its own story only
    with pytest.raises(NotFound):
        store.revoke_seat(other.id, again.id)


def test_messages_are_chained_and_one_action_per_seat_waits(store: Store) -> None:
    story = new_story(store)
    mara = store.create_seat(story.id, "Mara", "a" * 64)
    odile = store.create_seat(story.id, "Odile", "c" * 64)
    first = store.add_message(story.id, mara, "Mara", "I pick the lock.", gathered=True)
    with pytest.raises(Conflict, match="already acted"):
        store.add_message(story.id, mara, "Mara", "And again.", gathered=True)
    second = store.add_message(story.id, odile, "Odile", "I keep watch.", gathered=True)
    free = store.add_message(story.id, odile, "Odile", "A free message.")
    assert [m.seq for m in store.gathered(story.id)] == [1, 2]
    chain = store.table_messages(story.id)
    assert [m.seq for m in chain] == [1, 2, 3]
    assert first.prev_hash == message_genesis(story.id)
    for before, message in zip([None, *chain], chain):
        assert message.prev_hash == (before.hash if before else message_genesis(story.id))
        linked = {"seq": message.seq, "seat": message.seat_id, "character": message.character, "text": message.text}
        assert message.hash == message_hash({**linked, "prev_hash": message.prev_hash})
    head = store.story(story.id)
    assert (head.messages, head.messages_head) == (3, free.hash)
    store.revoke_seat(story.id, odile.id)  # its waiting action is dropped with it
    assert [m.seq for m in store.gathered(story.id)] == [first.seq]
    assert second.seq == 2


def test_deleting_a_story_removes_its_seats_and_messages(store: Store) -> None:
    story = new_story(store)
    seat = store.create_seat(story.id, "Mara", "a" * 64)
    store.add_message(story.id, seat, "Mara", "Hello.")
    store.delete_story(story.id)
    assert store.seat_by_token("a" * 64) is None
    assert store.table_messages(story.id) == []
