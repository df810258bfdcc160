"""The past a round's game master is shown, read as the round opens (gm.store._memory's `read_past`), on SQLite and
PostgreSQL: the rounds whose notes are not written yet stand in for them, read in the opening's own round trips."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.sql.expression import Executable

from gm.store import Opened, Store
from gm.store._base import table_of, values_of
from gm.store._batch import Batch, Sent
from gm.store._memory import _LATE_ROUNDS, PastWindow, read_past
from gm.store.records import MemoryEntry
from tests.support.databases import a_story_with_rounds, round_trips

NOTE = insert(table_of(MemoryEntry))


def note(story_id: str, number: int) -> dict[str, Any]:
    """A memory keeper's note on round `number`, as the memory table holds it."""
    entry = MemoryEntry(story_id=story_id, round_number=number, summary=f"Round {number}, remembered.")
    return values_of(entry)


def a_story_with_notes(store: Store, rounds: int, noted: list[int]) -> str:
    story_id = a_story_with_rounds(store, rounds)
    with store.transaction() as connection:
        connection.execute(NOTE, [note(story_id, number) for number in noted])
    return story_id


def opened_with_two_late(store: Store, story_id: str) -> Opened:
    """The story's next round opened with three rounds verbatim and two standing in for missing notes; on
    PostgreSQL the opening must take two round trips (the lease with the story, then the rest)."""
    if store.engine.dialect.name != "postgresql":
        return store.open_attempt(story_id, regenerate=False, past=PastWindow(verbatim=3, late=2))
    with round_trips(store.engine) as count:
        opened = store.open_attempt(story_id, regenerate=False, past=PastWindow(verbatim=3, late=2))
        assert count() == 2
    return opened


def test_rounds_without_notes_stand_in_for_them_read_with_the_opening(store: Store) -> None:
    """Nine rounds, notes on 1, 2, 3 and 5, the newest three shown verbatim: rounds 4 and 6 stand in for their
    notes, and on PostgreSQL the opening is still two round trips (the lease with the story, then the rest)."""
    story_id = a_story_with_notes(store, 9, [1, 2, 3, 5])
    opened = opened_with_two_late(store, story_id)
    assert opened.past is not None
    assert [entry.round_number for entry in opened.past.memories] == [1, 2, 3, 5]
    assert [record.number for record in opened.past.recent] == [4, 6, 7, 8, 9]
    assert [record.player_text for record in opened.past.recent[:2]] == ["I wait, 4.", "I wait, 6."]


def test_only_the_newest_rounds_without_notes_stand_in(store: Store) -> None:
    """Rounds 1, 3, 4, 5 and 6 have no note and two stand in: 5 and 6, read with the opening (on PostgreSQL still
    two round trips: the read in the batch found the newest, not the oldest, so nothing is read again)."""
    story_id = a_story_with_notes(store, 9, [2])
    opened = opened_with_two_late(store, story_id)
    assert opened.past is not None
    assert [record.number for record in opened.past.recent] == [5, 6, 7, 8, 9]  # 1, 3 and 4 are left out


class NoteWrittenBetween(Batch):
    """A batch in which the memory keeper writes a note on round `number` right after the rounds without notes
    are read and before the notes are: what another connection's commit does at that moment."""

    def __init__(self, connection: Any, story_id: str, number: int) -> None:
        super().__init__(connection)
        self.written = note(story_id, number)
        self.after_late_rounds = False

    def add(self, statement: Executable, parameters: Any) -> Sent:
        if self.after_late_rounds:
            self.after_late_rounds = False
            super().add(NOTE, self.written)
        sent = super().add(statement, parameters)
        self.after_late_rounds = statement is _LATE_ROUNDS
        return sent


def test_a_note_written_between_the_reads_leaves_neither_a_gap_nor_a_round_shown_twice(store: Store) -> None:
    """Rounds 4 and 6 have no note and one stands in (`late=1`): round 6, as the rounds are read. Round 6's note
    is written before the notes are read, so round 4 is the one wanted, read on its own; 6 shows as its note."""
    story_id = a_story_with_notes(store, 9, [1, 2, 3, 5])
    story = store.story(story_id)
    with store.transaction() as connection:
        batch = NoteWrittenBetween(connection, story_id, 6)
        read = read_past(batch, story, 10, PastWindow(verbatim=3, late=1))
        batch.send()
        past = read()
    assert [entry.round_number for entry in past.memories] == [1, 2, 3, 5, 6]
    assert [record.number for record in past.recent] == [4, 7, 8, 9]
