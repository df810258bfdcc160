"""The store's memory: the memory keeper's notes on each round, the running summary, the past a round is shown.

The memory keeper (gm.engine.memory) writes a note per accepted round, several in one transaction, and
folds old notes into the story's running summary. A round reads the past its game master is shown in
the transaction that opens it (`read_past`, queued in that batch by gm.store._rounds): the running
summary, the notes not folded yet, and the newest rounds verbatim. Each read is written once: most
as a queued read (it adds its statement to a batch and returns what reads its rows once the batch is
sent; `read_now` runs one on its own), `rounds_numbered` on its connection (its SQL depends on its values; only
where a note written meanwhile leaves older rounds wanted, `read_past`). So the past a round is shown is read in
the batch that opens the round: no round trip of its own on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from sqlalchemy import Integer, Select, bindparam, insert, update
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Connection
from sqlmodel import col, select

from gm.errors import StoryNotFound
from gm.store._base import Tables, row_of, table_of, values_of
from gm.store._batch import Batch
from gm.store._rolls import CALLS_INSERT, insert_calls
from gm.store.records import MemoryEntry, ModelCall, RoundRecord, Story

T = TypeVar("T")

ROUNDS = table_of(RoundRecord)
MEMORY = table_of(MemoryEntry)
STORIES = table_of(Story)


@dataclass(frozen=True, slots=True)
class Past:
    """What the game master is shown of the story so far: the running summary, the notes not folded
    into it yet, and the newest rounds as they were played."""

    summary: str
    memories: Sequence[MemoryEntry]
    recent: Sequence[RoundRecord]


@dataclass(frozen=True, slots=True)
class PastWindow:
    """How much of the past a round is shown verbatim: the newest `verbatim` rounds, and at most `late`
    older rounds whose notes are not written yet (shown verbatim in their place, so there is no gap)."""

    verbatim: int
    late: int


class StoryPast(Protocol):
    """What the past is read from: the story's id, its count of rounds, and its running summary with the
    last round folded into it (a `Story` row, or the `StoryState` a round reads)."""

    @property
    def id(self) -> str: ...

    @property
    def rounds(self) -> int: ...

    @property
    def summary(self) -> str: ...

    @property
    def summary_through(self) -> int: ...


class MemoryTables(Tables):
    """The memory keeper's notes, the running summary, and the model calls of every kind."""

    def add_memory(self, entry: MemoryEntry) -> None:
        """Store a round's memory and mark the round remembered, in one transaction."""
        with self.transaction() as connection:
            if connection.execute(_REMEMBERED, {"story": entry.story_id, "round_no": entry.round_number}).rowcount == 0:
                return  # the round was regenerated meanwhile; its new version gets its own memory
            entry.id = connection.execute(_MEMORY, values_of(entry)).scalar_one()

    def add_memories(self, remembered: Sequence[tuple[str, MemoryEntry]], calls: Sequence[ModelCall] = ()) -> None:
        """Store the memories of several rounds and the memory keeper's calls that wrote them, marking those
        rounds remembered, in one transaction (a batch, gm.engine.memory).

        Each entry comes with the attempt id of the round version it summarises: a round regenerated
        meanwhile comes from another attempt, so its stale memory is left out (its new version gets its
        own); the calls are kept regardless.
        """
        with self.transaction() as connection:
            # Two batches (gm.store._batch): the rounds of these attempts still in the story marked, one statement
            # each, with the transaction's BEGIN; then the memories of those marked, the calls, and the COMMIT. On
            # PostgreSQL two round trips, and the first sets the transaction's synchronous_commit where the
            # keeper's work need not wait for its sync (`Store.off_loop(durable=False)`).
            batch = Batch(connection)
            marks = [
                (attempt_id, batch.add(_MARK_REMEMBERED, _marked(attempt_id, entry)))
                for attempt_id, entry in remembered
            ]
            batch.send()
            current = {attempt_id for attempt_id, mark in marks if mark.scalar() == attempt_id}
            if entries := [values_of(entry) for attempt_id, entry in remembered if attempt_id in current]:
                batch.add(_MEMORIES_ADDED, entries)
            if calls:
                batch.add(CALLS_INSERT, [values_of(call) for call in calls])
            batch.send(commit=True)

    def keeper_rounds(self, story_id: str) -> tuple[list[RoundRecord], dict[str, Any] | None]:
        """What the memory keeper reads before it writes: the story's rounds not yet remembered, oldest first, and
        its world's calendar (None without one: the summaries are dated by it), in one read."""
        with self.reading() as connection:
            batch = Batch(connection)  # one round trip on PostgreSQL
            rows = batch.add(_UNREMEMBERED, {"story": story_id})
            found = batch.add(_CALENDAR, {"story": story_id})
            batch.send()
        calendar = found.scalar()
        return [row_of(RoundRecord, row) for row in rows.mappings()], calendar if isinstance(calendar, dict) else None

    def unfolded(self, story_id: str) -> tuple[str, list[MemoryEntry]]:
        """The story's running summary and the memories not folded into it yet, oldest first (one read)."""
        with self.reading() as connection:
            batch = Batch(connection)  # one round trip on PostgreSQL
            # The memories first, then the summary: a fold in between moves the summary on, and the memories it
            # took in are left out below; one written in between waits for the next read.
            memories = batch.add(_MEMORIES_AFTER_SUMMARY, {"story": story_id})
            found = batch.add(_SUMMARY, {"story": story_id})
            batch.send()
        if (read := found.first()) is None:
            raise StoryNotFound(story_id)
        summary, through = read
        return summary, [row_of(MemoryEntry, row) for row in memories.mappings() if row["round_number"] > through]

    def memories(self, story_id: str, after: int = 0) -> list[MemoryEntry]:
        with self.reading() as connection:
            return read_now(connection, memories_between, story_id, after)

    def unremembered(self, story_id: str) -> list[RoundRecord]:
        with self.reading() as connection:
            rows = connection.execute(_UNREMEMBERED, {"story": story_id}).mappings()
            return [row_of(RoundRecord, row) for row in rows]

    def fold_summary(self, story_id: str, summary: str, through: int, calls: Sequence[ModelCall] = ()) -> None:
        """Fold the memories through round `through` into the running summary, with the call that wrote it."""
        with self.transaction() as connection:
            batch = Batch(connection)  # with the BEGIN: on PostgreSQL one round trip before the commit
            folded = batch.add(_FOLD, {"story": story_id, "folded": summary, "through": through})
            if calls:
                batch.add(CALLS_INSERT, [values_of(call) for call in calls])
            batch.send()
            if folded.rowcount == 0:
                raise StoryNotFound(story_id)

    def add_model_calls(self, calls: Sequence[ModelCall]) -> None:
        with self.transaction() as connection:
            insert_calls(connection, calls)

    def model_calls(self, story_id: str) -> list[ModelCall]:
        with self.session() as session:
            query = select(ModelCall).where(ModelCall.story_id == story_id).order_by(col(ModelCall.id))
            return list(session.exec(query))


def read_now(connection: Connection, read: Callable[..., Callable[[], T]], *args: Any) -> T:
    """A queued read run on its own: its statement sent in a batch of one, its rows read."""
    batch = Batch(connection)
    rows = read(batch, *args)
    batch.send()
    return rows()


def newest_rounds(batch: Batch, story_id: str, count: int) -> Callable[[], list[RoundRecord]]:
    """The story's newest `count` rounds, oldest first."""
    if count <= 0:
        return list
    sent = batch.add(_newest(count), {"story": story_id})
    return lambda: [row_of(RoundRecord, row) for row in sent.mappings()][::-1]


def rounds_numbered(connection: Connection, story_id: str, numbers: Sequence[int]) -> list[RoundRecord]:
    """The story's rounds of these numbers (those there are), oldest first. Read on its own, never in a batch: an
    IN list's SQL depends on its values (gm.store._batch)."""
    rows = connection.execute(_ROUNDS_NUMBERED, {"story": story_id, "numbers": list(numbers)}).mappings()
    return [row_of(RoundRecord, row) for row in rows]


def memories_between(
    batch: Batch, story_id: str, after: int, before: int | None = None
) -> Callable[[], list[MemoryEntry]]:
    """The story's notes on rounds after `after` (and before `before`), oldest first."""
    if before is None:
        sent = batch.add(_MEMORIES, {"story": story_id, "after": after})
    else:
        sent = batch.add(_MEMORIES_BEFORE, {"story": story_id, "after": after, "before": before})
    return lambda: [row_of(MemoryEntry, row) for row in sent.mappings()]


def read_past(batch: Batch, story: StoryPast, before: int, window: PastWindow) -> Callable[[], Past]:
    """The past a round numbered `before` is shown, its reads queued in `batch`.

    A round older than the verbatim window whose note is not written yet (a batch not yet due, a failed
    memory call, a crash) is read verbatim in its place (the newest `window.late` of them), so the game
    master never meets a gap in the story.
    """
    newest = newest_rounds(batch, story.id, window.verbatim)
    # Rounds are numbered 1, 2, 3... with no holes, the newest `story.rounds`, so where the verbatim window
    # starts is known before the rounds are read, and the notes before it are read in the same batch.
    numbers = range(max(1, story.rounds - window.verbatim + 1), story.rounds + 1)
    expected = next((number for number in numbers if number < before), before)
    # The rounds that stand in for missing notes are read in the same batch too, before the notes (`late_rounds`):
    # the memory keeper writes every few rounds, so about every other round has one waiting.
    standing_in = late_rounds(batch, story.id, story.summary_through, expected, window.late)
    memories = memories_between(batch, story.id, story.summary_through, expected)

    def read() -> Past:
        recent = [record for record in newest() if record.number < before]
        first_verbatim = recent[0].number if recent else before
        if first_verbatim == expected:
            entries = memories()
        else:  # the rounds were not as counted: read the notes before the real window
            entries = read_now(batch.connection, memories_between, story.id, story.summary_through, first_verbatim)
        # A missing note shows without another query.
        missing = set(range(story.summary_through + 1, first_verbatim)) - {entry.round_number for entry in entries}
        if late := sorted(missing)[-window.late :] if window.late else []:
            read_before = {record.number: record for record in standing_in()} if first_verbatim == expected else {}
            if all(number in read_before for number in late):
                recent = [read_before[number] for number in late] + recent
            else:  # a note written in between left older rounds wanted than those read: read them now
                recent = rounds_numbered(batch.connection, story.id, late) + recent
        return Past(story.summary, entries, recent)

    return read


def late_rounds(batch: Batch, story_id: str, after: int, before: int, count: int) -> Callable[[], list[RoundRecord]]:
    """The story's newest `count` rounds numbered between `after` and `before` that have no note.

    Queued before the notes are read: a note written in between is then among the notes, and its round, read here
    without it, is left out by the caller (`read_past`), so a round is never shown both ways nor neither. The
    rounds wanted are the newest missing as the notes are read, all among these unless a note written in between
    left older ones wanted (the caller reads those on their own then)."""
    if count <= 0:
        return list
    values = {"story": story_id, "after": after, "before": before, "count": count}
    sent = batch.add(_LATE_ROUNDS, values)
    return lambda: [row_of(RoundRecord, row) for row in sent.mappings()]


def _marked(attempt_id: str, entry: MemoryEntry) -> dict[str, Any]:
    """`_MARK_REMEMBERED`'s values for the round `entry` summarises, as attempt `attempt_id` played it."""
    return {"story": entry.story_id, "round_no": entry.round_number, "attempt": attempt_id}


@lru_cache(maxsize=16)  # one statement per count asked for: the verbatim window and 2
def _newest(count: int) -> Select[Any]:
    return sql_select(ROUNDS).where(_OF_STORY).order_by(ROUNDS.c.number.desc()).limit(count)


# Each statement is built once: building one costs several times more CPU than running it.
_STORY = STORIES.c.id == bindparam("story")
_OF_STORY = ROUNDS.c.story_id == bindparam("story")
_ROUND_NUMBER = (ROUNDS.c.story_id == bindparam("story"), ROUNDS.c.number == bindparam("round_no"))
_REMEMBERED = update(ROUNDS).where(*_ROUND_NUMBER).values(memory_written=True)
_MEMORY = insert(MEMORY).returning(MEMORY.c.id)
_MEMORIES_ADDED = insert(MEMORY)
# A round of this attempt still in the story (a regenerated round's earlier version is gone) marked remembered;
# returns its attempt. Found by its number (the story's key), not by reading every round of the story. One round a
# statement, not an IN list: a statement whose SQL depends on its values cannot go in a batch (gm.store._batch).
_MARK_REMEMBERED = (
    update(ROUNDS)
    .where(*_ROUND_NUMBER, ROUNDS.c.attempt_id == bindparam("attempt"))
    .values(memory_written=True)
    .returning(ROUNDS.c.attempt_id)
)
_UNREMEMBERED = sql_select(ROUNDS).where(_OF_STORY, ROUNDS.c.memory_written.is_(False)).order_by(ROUNDS.c.number)
_LATE_ROUNDS = (
    sql_select(ROUNDS)
    .where(
        _OF_STORY,
        ROUNDS.c.number > bindparam("after"),
        ROUNDS.c.number < bindparam("before"),
        ~sql_select(MEMORY.c.id)
        .where(MEMORY.c.story_id == ROUNDS.c.story_id, MEMORY.c.round_number == ROUNDS.c.number)
        .exists(),
    )
    .order_by(ROUNDS.c.number.desc())
    .limit(bindparam("count", type_=Integer))
)
_ROUNDS_NUMBERED = (
    sql_select(ROUNDS)
    .where(_OF_STORY, ROUNDS.c.number.in_(bindparam("numbers", expanding=True)))
    .order_by(ROUNDS.c.number)
)
_SUMMARY = sql_select(STORIES.c.summary, STORIES.c.summary_through).where(_STORY)
# Only the world's calendar, not the whole world.json (the memory keeper dates its summaries by it).
_CALENDAR = sql_select(STORIES.c.world_data["calendar"]).where(_STORY)
_FOLD = update(STORIES).where(_STORY).values(summary=bindparam("folded"), summary_through=bindparam("through"))
_MEMORIES = (
    sql_select(MEMORY)
    .where(MEMORY.c.story_id == bindparam("story"), MEMORY.c.round_number > bindparam("after"))
    .order_by(MEMORY.c.round_number)
)
_MEMORIES_BEFORE = _MEMORIES.where(MEMORY.c.round_number < bindparam("before"))
# The notes not folded into the story's running summary yet, oldest first.
_MEMORIES_AFTER_SUMMARY = (
    sql_select(MEMORY)
    .where(
        MEMORY.c.story_id == bindparam("story"),
        MEMORY.c.round_number > sql_select(STORIES.c.summary_through).where(_STORY).scalar_subquery(),
    )
    .order_by(MEMORY.c.round_number)
)
