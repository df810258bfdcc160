"""The store's rounds: an attempt opened and a round accepted (one transaction each), memory and model calls.

A round is played as an *attempt*. Opening it takes the story's lease, reads the story, a paused round
and the round's earlier rolls, and writes the attempt, in one transaction (`open_attempt`); the round
(gm.engine._attempt) reads the past the game master is shown in the same transaction (gm.engine.memory's
`recall_queued`, in the batch that writes the attempt: `open_attempt`'s `read_with`). When the referee
accepts it, the round (its text, narration, outcomes, refusals, and its rolls as written) is written
with its model calls, its attempt marked accepted, the story counted and its lease let go, in one
transaction fenced on the lease (`accept_round`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import BigInteger, Select, bindparam, case, delete, func, insert, literal_column, update
from sqlalchemy import select as sql_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlmodel import col, select

from gm._text import unstorable
from gm.errors import Conflict, LeaseBusy, LeaseLost, NotFair, StoryNotFound
from gm.store._base import LEASE_LOST, Tables, row_of, table_of, values_of
from gm.store._batch import Batch
from gm.store._rolls import CALLS_INSERT, OF_ROUND, insert_calls, queue_attempt, rolls_by_id, unfinished_attempts
from gm.store._stories import LEASE_TAKE, Claim
from gm.store.records import Attempt, MemoryEntry, ModelCall, PausedRound, RollRecord, RoundRecord, SeedRecord, Story

ROUNDS = table_of(RoundRecord)
MEMORY = table_of(MemoryEntry)
NOTHING_TO_REGENERATE = "there is no round to play again yet"


@dataclass(frozen=True, slots=True)
class StoryState:
    """What a round reads of its story under the lease: everything but the world's definitions."""

    id: str
    rounds: int
    summary: str
    summary_through: int
    settings: dict[str, Any]
    fair: bool
    player_seed: str | None
    seed_epoch: int | None
    chain_length: int
    clock: int | None
    ended_at: datetime | None


@dataclass
class Opened:
    """An attempt just opened, and what its round was read to be, in the transaction that opened it.

    `number` is the round played; `player_text` the text of the round played again (None otherwise);
    `earlier` that round's rolls; `retried` every roll made for this round before this attempt, in
    order; `unfinished` the attempts at this round that were not accepted (their rolls came back);
    `clock_before` the time the round before ended; `seed` a fair story's current seed.
    """

    story: StoryState
    attempt: Attempt
    number: int
    player_text: str | None = None
    earlier: list[RollRecord] = field(default_factory=list)
    retried: list[RollRecord] = field(default_factory=list)
    unfinished: set[str] = field(default_factory=set)
    clock_before: int | None = None
    seed: SeedRecord | None = None
    read: Any = None  # what `open_attempt`'s `read_with` read beside the attempt


# Refuses a round before its attempt is written: the story's state and, if one waits, its paused round's question.
Admit = Callable[[StoryState, "dict[str, Any] | None"], None]
# Queues more reads of the story in the batch that opens an attempt; returns what reads their results once it is sent.
ReadWith = Callable[[Batch, StoryState, int], Callable[[], Any]]


class RoundTables(Tables):
    """Opening attempts, accepting rounds; rounds, memory and model calls."""

    def open_attempt(self, story_id: str, *, regenerate: bool, admit: Admit, lease: Claim | None = None) -> Opened:
        """Open an attempt at the story's next round (or its last again, `regenerate`), in one transaction
        (see `open_attempt`; a round opens its own and reads its past in the same transaction: gm.engine._attempt)."""
        with self.transaction() as connection:
            return open_attempt(connection, story_id, regenerate=regenerate, admit=admit, lease=lease, commit=True)

    def accept_round(
        self, attempt_id: str, record: RoundRecord, calls: Sequence[ModelCall] = (), *, holder: str | None = None
    ) -> RoundRecord:
        """Write an accepted round with its model calls, mark its attempt, and count it, in one transaction.

        A regenerated round replaces the earlier version of the same number. With `holder`, the write is
        fenced on the story's lease: it happens only if `holder` holds it still, else `LeaseLost` and
        nothing is written. The fence is the UPDATE that counts the round on the story row, so it locks
        that row (PostgreSQL) or the database (SQLite) until the round is written: no other round can take
        the lease between the check and the commit. The same UPDATE lets the lease go: the round is over
        once it is written, and another round may take the story as soon as it is committed.
        """
        story_id, number = record.story_id, record.number
        on_round = {"attempt": attempt_id, "story": story_id, "round_no": number}
        with self.transaction() as connection:
            batch = Batch(connection)  # one round trip on PostgreSQL (gm.store._batch), and the commit
            accepted = batch.add(_ACCEPT, on_round)
            # Counted before a regenerated round's earlier version goes: it adds none (`_COUNTED`).
            counted = {**on_round, "round_clock": record.clock, "holder": holder}
            count = batch.add(_COUNT if holder is None else _COUNT_AND_LET_GO, counted)
            # These two touch only a regenerated round's earlier version; SQLite, where the attempt has answered
            # already, runs them only for one.
            if not accepted.done or accepted.scalar():
                batch.add(_FORGET, on_round)
                batch.add(_REPLACE, on_round)
            # (story, number) is unique: a round of that number still there is not written, and refuses this one
            written = batch.add(_ROUND_UNLESS_PLAYED[connection.dialect.name], values_of(record))
            if calls:
                batch.add(CALLS_INSERT, [values_of(call) for call in calls])
            batch.send()
            if accepted.first() is None:
                raise StoryNotFound(story_id)
            if count.rowcount != 1:
                raise StoryNotFound(story_id) if holder is None else LeaseLost(LEASE_LOST)
            if (round_id := written.scalar()) is None:
                raise LeaseLost(f"round {number} was played meanwhile by another attempt; this one was not saved")
            record.id = round_id
        return record

    # Rounds, memory and model calls

    def rounds(self, story_id: str, after: int = 0, last: int | None = None) -> list[RoundRecord]:
        """Accepted rounds numbered above `after`, oldest first; `last` keeps only the newest few."""
        with self.reading() as connection:
            if last is not None:
                return [record for record in newest_rounds(connection, story_id, last) if record.number > after]
            rows = connection.execute(_ROUNDS_AFTER, {"story": story_id, "after": after}).mappings()
            return [row_of(RoundRecord, row) for row in rows]

    def round(self, story_id: str, number: int) -> RoundRecord | None:
        with self.reading() as connection:
            found = rounds_numbered(connection, story_id, [number])
            return found[0] if found else None

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
            return memories_between(connection, story_id, after)

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


def open_attempt(
    connection: Connection,
    story_id: str,
    *,
    regenerate: bool,
    admit: Admit,
    lease: Claim | None = None,
    read_with: ReadWith | None = None,
    commit: bool = False,
) -> Opened:
    """Open an attempt at the story's next round (or its last again, `regenerate`) in the caller's transaction.

    With `lease`, the story's lease is taken first, by the conditional UPDATE that also reads the story:
    if another holder has it, `LeaseBusy` and nothing else is done. What is read after it then stays as
    read until the round ends. `admit` sees the story and any paused round's question first, and refuses
    the round by raising (the caller's transaction is rolled back, so nothing is written, lease included).
    Any attempt of the story still running is marked abandoned (its process died).

    `read_with` queues the caller's own reads of the story beside the attempt's (gm.engine.memory's
    `recall_queued`), and what its finisher returns is `Opened.read`. The statements go in two batches
    (gm.store._batch): on PostgreSQL, two round trips before the commit. With `commit` (for a caller whose
    transaction ends with the opening) the second also commits: nothing after it refuses the round, and the
    reads that may follow (a round's rolls from other attempts, rounds standing in for missing memories) see
    what they would see in the transaction at PostgreSQL's default isolation (READ COMMITTED: each statement
    reads what is committed when it starts).
    """
    if unstorable(story_id):
        raise StoryNotFound(story_id)
    batch = Batch(connection)
    if lease is None:
        taken = batch.add(_OPEN, {"story": story_id})
    else:
        taken = batch.add(_TAKE_AND_OPEN, lease.values(story_id))
    batch.send()
    if (found := taken.first()) is None:
        if lease is not None and connection.execute(_OPEN, {"story": story_id}).first() is not None:
            raise LeaseBusy()
        raise StoryNotFound(story_id)
    story = StoryState(*found[:-1])
    admit(story, found[-1])
    number = story.rounds if regenerate else story.rounds + 1
    opened = Opened(story, Attempt(story_id=story_id, round_number=number, regenerating=regenerate), number)
    if regenerate:  # the round played again, and the one before it (the time it ended is where this starts)
        by_number = {record.number: record for record in newest_rounds(connection, story_id, 2)}
        last = by_number.get(number)
        if last is None:
            raise Conflict(NOTHING_TO_REGENERATE)
        opened.player_text = last.player_text
        opened.earlier = rolls_by_id(connection, [roll["id"] for roll in last.rolls])
        if (before := by_number.get(number - 1)) is not None:
            opened.clock_before = before.clock
    seed = batch.add(_SEED, {"story": story.id, "epoch": story.seed_epoch}) if story.fair else None
    queue_attempt(batch, opened.attempt)
    retried = batch.add(OF_ROUND, {"story": story_id, "number": number})
    finish = read_with(batch, story, number) if read_with is not None else None
    batch.send(commit=commit)
    if seed is not None:
        opened.seed = seed_of(story, next(seed.mappings(), None))
    opened.retried = [row_of(RollRecord, row) for row in retried.mappings()]
    if any(roll.attempt_id != opened.attempt.id for roll in [*opened.retried, *opened.earlier]):
        opened.unfinished = unfinished_attempts(connection, story_id, number) - {opened.attempt.id}
    if finish is not None:
        opened.read = finish()
    return opened


# Each statement is built once: building one costs several times more CPU than running it.
STORIES = table_of(Story)
ATTEMPTS = table_of(Attempt)
PAUSED = table_of(PausedRound)
SEEDS = table_of(SeedRecord)
_STORY = STORIES.c.id == bindparam("story")
_STATE = [STORIES.c[name] for name in StoryState.__slots__]
_OPEN = (
    sql_select(*_STATE, PAUSED.c.question)
    .select_from(STORIES.outerjoin(PAUSED, PAUSED.c.story_id == STORIES.c.id))
    .where(_STORY)
)
# The paused round's question, beside the story row an UPDATE returns. Spelled out: SQLite's RETURNING
# would name the columns unqualified, and `id` would then be any column of that name in paused_rounds.
_QUESTION = (
    sql_select(PAUSED.c.question)
    .where(literal_column("paused_rounds.story_id") == literal_column("stories.id"))
    .scalar_subquery()
)
_TAKE_AND_OPEN = LEASE_TAKE.returning(*_STATE, _QUESTION)
_ACCEPT = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.id == bindparam("attempt"), ATTEMPTS.c.story_id == bindparam("story"))
    .values(status="accepted")
    .returning(ATTEMPTS.c.regenerating)
)
# The attempt being accepted, if it plays its round again: the earlier version of that round and its memory go.
_REGENERATING = (
    sql_select(ATTEMPTS.c.id).where(ATTEMPTS.c.id == bindparam("attempt"), ATTEMPTS.c.regenerating.is_(True)).exists()
)
_OF_NUMBER = (MEMORY.c.story_id == bindparam("story"), MEMORY.c.round_number == bindparam("round_no"))
_FORGET = delete(MEMORY).where(*_OF_NUMBER, _REGENERATING)
_ROUND_NUMBER = (ROUNDS.c.story_id == bindparam("story"), ROUNDS.c.number == bindparam("round_no"))
_REPLACE = delete(ROUNDS).where(*_ROUND_NUMBER, _REGENERATING)
# The round counted, unless it replaces its earlier version (read before `_REPLACE` deletes it), and the story's
# time moved to its end, if it has one.
_COUNTED = case((sql_select(ROUNDS.c.id).where(*_ROUND_NUMBER).exists() & _REGENERATING, 0), else_=1)
_COUNT = (
    update(STORIES)
    .where(_STORY)
    .values(
        rounds=STORIES.c.rounds + _COUNTED,
        clock=func.coalesce(bindparam("round_clock", type_=BigInteger), STORIES.c.clock),
    )
)
# Counted only while `holder` holds the lease, which the same statement lets go.
_COUNT_AND_LET_GO = _COUNT.where(STORIES.c.lease_holder == bindparam("holder")).values(
    lease_holder=None, lease_expires=None
)
# A round written, returning its id; nothing written (and no id) where the story has a round of that number already.
_ROUND_UNLESS_PLAYED = {
    "postgresql": postgresql_insert(ROUNDS).on_conflict_do_nothing().returning(ROUNDS.c.id),
    "sqlite": sqlite_insert(ROUNDS).on_conflict_do_nothing().returning(ROUNDS.c.id),
}
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
_UNREMEMBERED = (
    sql_select(ROUNDS)
    .where(ROUNDS.c.story_id == bindparam("story"), ROUNDS.c.memory_written.is_(False))
    .order_by(ROUNDS.c.number)
)
_OF_STORY = ROUNDS.c.story_id == bindparam("story")
_ROUNDS_AFTER = sql_select(ROUNDS).where(_OF_STORY, ROUNDS.c.number > bindparam("after")).order_by(ROUNDS.c.number)
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
# The memories not folded into the story's running summary yet, oldest first.
_MEMORIES_AFTER_SUMMARY = (
    sql_select(MEMORY)
    .where(
        MEMORY.c.story_id == bindparam("story"),
        MEMORY.c.round_number > sql_select(STORIES.c.summary_through).where(_STORY).scalar_subquery(),
    )
    .order_by(MEMORY.c.round_number)
)
_SEED = sql_select(SEEDS).where(SEEDS.c.story_id == bindparam("story"), SEEDS.c.epoch == bindparam("epoch"))


def _marked(attempt_id: str, entry: MemoryEntry) -> dict[str, Any]:
    """`_MARK_REMEMBERED`'s values for the round `entry` summarises, as attempt `attempt_id` played it."""
    return {"story": entry.story_id, "round_no": entry.round_number, "attempt": attempt_id}


@lru_cache(maxsize=16)  # one statement per count asked for: the verbatim window and 2
def _newest(count: int) -> Select[Any]:
    return sql_select(ROUNDS).where(_OF_STORY).order_by(ROUNDS.c.number.desc()).limit(count)


def newest_rounds(connection: Connection, story_id: str, count: int) -> list[RoundRecord]:
    """The story's newest `count` rounds, oldest first."""
    if count <= 0:
        return []
    rows = connection.execute(_newest(count), {"story": story_id}).mappings()
    return [row_of(RoundRecord, row) for row in rows][::-1]


def newest_rounds_queued(batch: Batch, story_id: str, count: int) -> Callable[[], list[RoundRecord]]:
    """`newest_rounds` queued in a batch: what reads them once it is sent."""
    sent = batch.add(_newest(count), {"story": story_id})
    return lambda: [row_of(RoundRecord, row) for row in sent.mappings()][::-1]


def rounds_numbered(connection: Connection, story_id: str, numbers: Sequence[int]) -> list[RoundRecord]:
    """The story's rounds of these numbers (those there are), oldest first."""
    rows = connection.execute(_ROUNDS_NUMBERED, {"story": story_id, "numbers": list(numbers)}).mappings()
    return [row_of(RoundRecord, row) for row in rows]


def memories_between(connection: Connection, story_id: str, after: int, before: int | None = None) -> list[MemoryEntry]:
    """The story's memories of rounds after `after` (and before `before`), oldest first."""
    if before is None:
        rows = connection.execute(_MEMORIES, {"story": story_id, "after": after}).mappings()
    else:
        rows = connection.execute(_MEMORIES_BEFORE, {"story": story_id, "after": after, "before": before}).mappings()
    return [row_of(MemoryEntry, row) for row in rows]


def memories_between_queued(batch: Batch, story_id: str, after: int, before: int) -> Callable[[], list[MemoryEntry]]:
    """`memories_between` (with `before`) queued in a batch: what reads them once it is sent."""
    sent = batch.add(_MEMORIES_BEFORE, {"story": story_id, "after": after, "before": before})
    return lambda: [row_of(MemoryEntry, row) for row in sent.mappings()]


def read_story_state(connection: Connection, story_id: str) -> StoryState:
    """What a round reads of its story (see `StoryState`); `StoryNotFound` if there is none."""
    found = connection.execute(_OPEN, {"story": story_id}).first()
    if found is None:
        raise StoryNotFound(story_id)
    return StoryState(*found[:-1])


def read_seed(connection: Connection, story: StoryState) -> SeedRecord:
    """A fair story's current seed; `NotFair` if it has none."""
    return seed_of(story, connection.execute(_SEED, {"story": story.id, "epoch": story.seed_epoch}).mappings().first())


def seed_of(story: StoryState, found: Mapping[Any, Any] | None) -> SeedRecord:
    """The seed row read for a story as a record; `NotFair` if there was none."""
    if found is None:
        raise NotFair(f"story '{story.id}' does not use fair dice, so it has no seed to reveal")
    return row_of(SeedRecord, found)
