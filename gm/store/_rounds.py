"""The store's rounds: an attempt opened or taken up again, in one transaction; the rounds played.

A round is played as an *attempt*. Opening it takes the story's lease, reads the story, a paused round,
the round's earlier rolls and the past its game master is shown (gm.store._memory's `read_past`), and
writes the attempt, in one transaction (`open_attempt`). A story that has ended, or whose round waits
for the player's dice, is refused there, with nothing written. When the round is accepted, it (its
text, narration, outcomes, refusals, and its rolls as written) is written with its model calls, its
attempt marked accepted, the story counted and its lease let go, in one transaction fenced on the
lease (gm.store._accept's `accept_round`). The store decides nothing else: what the round does is the engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, bindparam, delete, literal_column, update
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Connection

from gm._text import unstorable
from gm.errors import Conflict, LeaseBusy, NotFair, RoundWaiting, StoryEnded, StoryNotFound
from gm.store._base import Tables, row_of, table_of
from gm.store._batch import Batch
from gm.store._events import Ride
from gm.store._memory import Past, PastWindow, newest_rounds, read_now, read_past, rounds_numbered
from gm.store._paused import ANSWERED_MEANWHILE, waiting_sentence
from gm.store._rolls import OF_ROUND, PLACE_NOW, PLACES, Place, queue_attempt, rolls_by_id, unfinished_attempts
from gm.store._sheets import SheetStart, sheet_start
from gm.store._stories import LEASE_TAKE, Claim
from gm.store.records import Attempt, MemoryEntry, PausedRound, RollRecord, RoundRecord, SeedRecord, Story
from gm.transcript.shapes import QuestionPublic

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
    sheet: dict[str, Any] | None
    sheet_length: int
    sheet_head: str | None


@dataclass
class Opened:
    """An attempt just opened, and what its round was read to be, in the transaction that opened it.

    `number` is the round played; `player_text` the text of the round played again (None otherwise);
    `earlier` that round's rolls; `retried` every roll made for this round before this attempt, in
    order; `unfinished` the attempts at this round that were not accepted (their rolls came back);
    `clock_before` the time the round before ended; `seed` a fair story's current seed; `past` what its game
    master is shown of the story so far, when asked for.
    """

    story: StoryState
    attempt: Attempt
    number: int
    player_text: str | None = None
    actions: list[dict[str, Any]] | None = None  # the seats' actions of the round played again, if seats played it
    earlier: list[RollRecord] = field(default_factory=list)
    retried: list[RollRecord] = field(default_factory=list)
    unfinished: set[str] = field(default_factory=set)
    clock_before: int | None = None
    seed: SeedRecord | None = None
    past: Past | None = None
    sheet: SheetStart | None = None  # the characters' sheets as the round begins (gm.store._sheets)


@dataclass
class TakenUp:
    """A paused round taken up again, with what its attempt is rebuilt from, read in the same transaction.

    `held` are the rolls the attempt holds, in order; `others` the round's rolls made by other attempts;
    `earlier` the rolls of the round it plays again; `unfinished` the other attempts at the round that were
    not accepted; `story` and `seed` what a fair story's dice are derived from.
    """

    paused: PausedRound
    story: StoryState
    held: list[RollRecord]
    others: list[RollRecord]
    earlier: list[RollRecord]
    unfinished: set[str]
    seed: SeedRecord | None


class RoundTables(Tables):
    """Opening attempts; the rounds played."""

    def open_attempt(
        self, story_id: str, *, regenerate: bool, lease: Claim | None = None, past: PastWindow | None = None
    ) -> Opened:
        """Open an attempt at the story's next round (or its last again, `regenerate`), in one transaction:
        see `open_attempt`. On PostgreSQL the round's action goes with it when the task playing the round has a
        rider (`gm.store._events.Ride`)."""
        rides: list[Ride] = []
        try:
            with self.transaction() as connection:
                return open_attempt(
                    connection, story_id, regenerate=regenerate, lease=lease, past=past, commit=True, rides=rides
                )
        finally:
            for ride in rides:
                ride.end(self)

    def take_paused(self, story_id: str, attempt_id: str, lease: Claim | None = None) -> TakenUp:
        """Take the story's paused round up again, in one transaction: see `take_paused`."""
        with self.transaction() as connection:
            return take_paused(connection, story_id, attempt_id, lease)

    def rounds(
        self, story_id: str, after: int = 0, last: int | None = None, *, limit: int | None = None
    ) -> list[RoundRecord]:
        """Accepted rounds numbered above `after`, oldest first; `last` keeps only the newest few, `limit` only the
        first few (a page of them: gm.engine.transcript)."""
        with self.reading() as connection:
            if last is not None:
                newest = read_now(connection, newest_rounds, story_id, last)
                return [record for record in newest if record.number > after]
            if limit is not None:
                values = {"story": story_id, "after": after, "limit": limit}
                return [row_of(RoundRecord, row) for row in connection.execute(_ROUNDS_PAGE, values).mappings()]
            rows = connection.execute(_ROUNDS_AFTER, {"story": story_id, "after": after}).mappings()
            return [row_of(RoundRecord, row) for row in rows]

    def round(self, story_id: str, number: int) -> RoundRecord | None:
        with self.reading() as connection:
            found = rounds_numbered(connection, story_id, [number])
            return found[0] if found else None


def open_attempt(
    connection: Connection,
    story_id: str,
    *,
    regenerate: bool,
    lease: Claim | None = None,
    past: PastWindow | None = None,
    commit: bool = False,
    rides: list[Ride] | None = None,
) -> Opened:
    """Open an attempt at the story's next round (or its last again, `regenerate`) in the caller's transaction.

    With `lease`, the story's lease is taken first, by the conditional UPDATE that also reads the story:
    if another holder has it, `LeaseBusy` and nothing else is done. What is read after it then stays as
    read until the round ends. A story that has ended (`StoryEnded`) or whose round waits for the player's
    dice (`RoundWaiting`) is refused next (the caller's transaction is rolled back, so nothing is written,
    lease included). Any attempt of the story still running is marked abandoned (its process died).

    With `past`, the past the round's game master is shown is read beside the attempt's own reads
    (`Opened.past`: gm.store._memory's `read_past`). The statements go in two batches
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
    if story.ended_at is not None:
        raise StoryEnded()
    if (waiting := found[-1]) is not None:
        raise RoundWaiting(waiting_sentence(QuestionPublic.model_validate(waiting)))
    number = story.rounds if regenerate else story.rounds + 1
    opened = Opened(story, Attempt(story_id=story_id, round_number=number, regenerating=regenerate), number)
    if regenerate:  # the round played again, and the one before it (the time it ended is where this starts)
        by_number = {record.number: record for record in read_now(connection, newest_rounds, story_id, 2)}
        last = by_number.get(number)
        if last is None:
            raise Conflict(NOTHING_TO_REGENERATE)
        opened.player_text = last.player_text
        opened.actions = last.actions
        opened.earlier = rolls_by_id(connection, [roll["id"] for roll in last.rolls])
        if (before := by_number.get(number - 1)) is not None:
            opened.clock_before = before.clock
    opened.sheet = sheet_start(connection, story, number, regenerate)
    seed = batch.add(_SEED, {"story": story.id, "epoch": story.seed_epoch}) if story.fair else None
    queue_attempt(batch, opened.attempt)
    retried = batch.add(OF_ROUND, {"story": story_id, "number": number})
    # Where its first roll goes, so that roll is one round trip (gm.store._rolls's `PLACES`); an id left unused if
    # the round rolls nothing.
    place = batch.add(PLACE_NOW, {"story": story_id}) if batch.pipelined else None
    past_read = read_past(batch, story, number, past) if past is not None else None
    ride = Ride.board(batch, story_id, "opening") if commit and rides is not None else None  # its action (PostgreSQL)
    if ride is not None and rides is not None:
        rides.append(ride)
    batch.send(commit=commit)
    if ride is not None:
        ride.landed = True
    if place is not None and (found := place.first()) is not None:
        PLACES.put(opened.attempt.id, Place(*found))
    if seed is not None:
        opened.seed = seed_of(story, next(seed.mappings(), None))
    opened.retried = [row_of(RollRecord, row) for row in retried.mappings()]
    if any(roll.attempt_id != opened.attempt.id for roll in [*opened.retried, *opened.earlier]):
        opened.unfinished = unfinished_attempts(connection, story_id, number) - {opened.attempt.id}
    if past_read is not None:
        opened.past = past_read()
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
_OF_STORY = ROUNDS.c.story_id == bindparam("story")
_ROUNDS_AFTER = sql_select(ROUNDS).where(_OF_STORY, ROUNDS.c.number > bindparam("after")).order_by(ROUNDS.c.number)
_ROUNDS_PAGE = _ROUNDS_AFTER.limit(bindparam("limit", type_=Integer))
_PAUSED = sql_select(PAUSED).where(PAUSED.c.story_id == bindparam("story"))
_RUNNING = update(ATTEMPTS).where(ATTEMPTS.c.id == bindparam("attempt")).values(status="running")
_TAKEN = delete(PAUSED).where(PAUSED.c.story_id == bindparam("story"))
_SEED = sql_select(SEEDS).where(SEEDS.c.story_id == bindparam("story"), SEEDS.c.epoch == bindparam("epoch"))


def take_paused(connection: Connection, story_id: str, attempt_id: str, lease: Claim | None = None) -> TakenUp:
    """Take the paused round up again in the caller's transaction: its row deleted and its attempt running,
    with everything its attempt is rebuilt from read in the same transaction.

    With `lease`, the story's lease is taken first (`LeaseBusy`, and nothing done, if another round holds
    it); without, the caller holds it. `attempt_id` is the attempt the faces were checked against; if another
    process answered or abandoned it meanwhile, `Conflict` and nothing changes.
    """
    if lease is not None and connection.execute(LEASE_TAKE, lease.values(story_id)).rowcount != 1:
        raise LeaseBusy()
    found = connection.execute(_PAUSED, {"story": story_id}).mappings().first()
    if found is None or found["attempt_id"] != attempt_id:
        raise Conflict(ANSWERED_MEANWHILE)
    if connection.execute(_RUNNING, {"attempt": attempt_id}).rowcount != 1:
        raise Conflict(ANSWERED_MEANWHILE)
    connection.execute(_TAKEN, {"story": story_id})
    paused = row_of(PausedRound, found)
    story = read_story_state(connection, story_id)
    held = rolls_by_id(connection, paused.rolls)
    of_round = connection.execute(OF_ROUND, {"story": story_id, "number": paused.round_number}).mappings()
    others = [roll for roll in (row_of(RollRecord, row) for row in of_round) if roll.attempt_id != attempt_id]
    earlier = rolls_by_id(connection, paused.earlier) if paused.earlier else []
    unfinished = unfinished_attempts(connection, story_id, paused.round_number) - {attempt_id} if others else set()
    seed = read_seed(connection, story) if story.fair else None
    return TakenUp(paused, story, held, others, earlier, unfinished, seed)


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
