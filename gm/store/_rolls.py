"""The store's attempts and rolls, each roll a link of its story's hash chain, and a fair story's seeds.

Rolls are append-only: each is written, in its own transaction, the moment it is rolled, and never
changed; each is the next link of its story's hash chain (gm.transcript.chain). A failed attempt writes no
round; its rolls stay, and the attempt says it failed (a later attempt at the same round gets them
back: gm.engine._earlier_rolls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnClause, bindparam, func, insert, literal_column, update
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlmodel import col, select

from gm._lru import LRU
from gm._text import storable
from gm.errors import ChainMoved, NotFair, StoryNotFound
from gm.store._base import ABANDONED, Tables, row_of, table_of, values_of
from gm.store._batch import Batch
from gm.store._events import Ride
from gm.store._guards import fired, guarded
from gm.store.records import Attempt, ModelCall, RollRecord, SeedRecord, Story
from gm.transcript.chain import genesis, roll_hash
from gm.transcript.shapes import RollPublic


class RollTables(Tables):
    """Attempts, rolls and seeds."""

    def start_attempt(self, story_id: str, round_number: int, regenerating: bool = False) -> Attempt:
        """Open an attempt at a round (under the story's lease), marking any other still running as abandoned.

        Only the lease holder plays a round, so an attempt of this story still `running` belongs to a
        process that died (or lost the lease) before it could end it.
        """
        attempt = Attempt(story_id=story_id, round_number=round_number, regenerating=regenerating)
        with self.transaction() as connection:
            insert_attempt(connection, attempt)
        return attempt

    def record_roll(self, roll: RollRecord, card: Callable[[RollRecord], dict[str, Any]] | None = None) -> RollRecord:
        """Write a roll now, in its own transaction, so no later failure can lose or change it.

        The roll becomes the next link of its story's chain: the story's row is claimed first (on PostgreSQL
        locked by `SELECT ... FOR UPDATE`, on SQLite by an UPDATE that takes the database's write lock, so two
        writers queue instead of forking the chain), then the roll gets the next place and the hash of the
        roll before, and the story its new length and head in one UPDATE: on PostgreSQL one new version of the
        story's row a roll (two before, docs/performance.md). A fair roll comes with the place and
        seed epoch it was derived for (see gm.integrity.fair.FairDice) and is refused, `ChainMoved`, anywhere else.
        On PostgreSQL, where this process knows where the attempt's next roll goes (`PLACES`), the roll is written
        there without the claim, in one round trip, guarded on the chain not having moved (gm.store._guards).

        `card` (the engine's, for a roll the story's viewers may see) makes the roll's live event from the roll as
        written. On PostgreSQL, when the task playing the round has a rider (`gm.store._events.Ride`), the event
        goes in the roll's transaction, after the events the round queued before it, and `card` is called for it;
        where it cannot ride, `card` is not called, and the caller tells the roll itself.
        """
        known = PLACES.pop(roll.attempt_id) if self.engine.dialect.name == "postgresql" else None
        if known is not None and (roll.seq is None or (roll.seq, roll.seed_epoch) == (known.place, known.epoch)):
            asked = {name: roll.__dict__.get(name) for name in _PLACED}
            try:
                return self._write_roll(roll, card, known)
            except DBAPIError as error:
                if not fired(error):
                    raise
            # The chain moved since (its guard fired, nothing was written): claimed where it is now, below, for the
            # roll as it was asked for.
            _put(roll, **asked)
        return self._write_roll(roll, card, None)

    def _write_roll(
        self, roll: RollRecord, card: Callable[[RollRecord], dict[str, Any]] | None, known: Place | None
    ) -> RollRecord:
        """`record_roll`'s transaction: the roll's place claimed and then written (two round trips on PostgreSQL), or,
        with its place `known` (PostgreSQL), written there in one, guarded on the chain being where it was known."""
        ride: Ride | None = None
        try:
            with self.transaction() as connection:
                batch = Batch(connection)  # one or two round trips on PostgreSQL, the last with the commit
                if known is None:
                    claim = batch.add(_CLAIM[connection.dialect.name], {"story": roll.story_id})
                    batch.send()
                    if (claimed := claim.first()) is None:
                        raise StoryNotFound(roll.story_id)
                    known = Place(*claimed)
                    if roll.seq is not None and (roll.seq != known.place or roll.seed_epoch != known.epoch):
                        raise ChainMoved(  # leaving the block rolls the claim back
                            "this story's dice moved on while the round was played (its lease ran out, and another "
                            "round or a reveal went ahead); the roll was not written, try again"
                        )
                    head: Any = _HEAD
                    checked: dict[str, Any] = {}
                else:
                    head, checked = _HEAD_WHERE_KNOWN, {"before": known.head, "epoch": known.epoch}
                # The roll's id is taken before it is written: its hash covers its id too.
                _put(roll, id=known.roll_id, seq=known.place, prev_hash=known.head or genesis(roll.story_id))
                link = roll_hash(RollPublic.from_stored(roll).model_dump(mode="json"))
                moved = {"story": roll.story_id, "head": link, "place": known.place, **checked}
                batch.add(head, moved)  # first: the story's row locked (and, guarded, where its chain is checked)
                batch.add(_ROLL, values_of(roll))
                following = batch.add(_NEXT_ID, {}) if connection.dialect.name == "postgresql" else None
                if card is not None:  # the roll's event, made only if it rides (`card`'s caller tells it otherwise)
                    ride = Ride.board(batch, roll.story_id, "roll", lambda: ("roll", card(roll), None))
                batch.send(commit=True)  # nothing after it can refuse the roll
            if ride is not None:
                ride.landed = True
        finally:
            if ride is not None:
                ride.end(self)
        if following is not None:  # the attempt's next roll, if it rolls again, goes after this one in one round trip
            PLACES.put(roll.attempt_id, Place(known.place + 1, link, known.epoch, int(following.scalar())))
        return roll

    def unfinished_attempts(self, story_id: str, round_number: int | None = None) -> set[str]:
        """The ids of a story's attempts (at one round, if given) that were not accepted: failed, or never finished."""
        with self.reading() as connection:
            return unfinished_attempts(connection, story_id, round_number)

    def rolls_of_round(self, story_id: str, number: int) -> list[RollRecord]:
        """Every roll made for round `number` of a story, by any attempt, in the order rolled."""
        with self.reading() as connection:
            return rolls_of_round(connection, story_id, number)

    def story_rolls(self, story_id: str) -> list[RollRecord]:
        """Every roll of a story, in chain order."""
        with self.session() as session:
            query = select(RollRecord).where(RollRecord.story_id == story_id).order_by(col(RollRecord.seq))
            return list(session.exec(query))

    # A fair story's seeds

    def seeds(self, story_id: str) -> list[SeedRecord]:
        with self.session() as session:
            query = select(SeedRecord).where(SeedRecord.story_id == story_id).order_by(col(SeedRecord.epoch))
            return list(session.exec(query))

    def current_seed(self, story_id: str) -> SeedRecord:
        """The seed a fair story's next rolls are derived from; `NotFair` for any other story."""
        with self.session() as session:
            story = session.get(Story, story_id)
            if story is None:
                raise StoryNotFound(story_id)
            seed = session.exec(
                select(SeedRecord).where(SeedRecord.story_id == story_id, SeedRecord.epoch == story.seed_epoch)
            ).first()
            if not story.fair or seed is None:
                raise NotFair(f"story '{story_id}' does not use fair dice, so it has no seed to reveal")
            return seed

    def reveal_seed(self, story_id: str, fresh: SeedRecord) -> tuple[SeedRecord, SeedRecord]:
        """Reveal the current seed (through the rolls made so far) and make `fresh` the next, in one transaction.

        Returns the revealed seed and the fresh one (its epoch and first roll set here).
        """
        with self.session() as session:
            story = session.get(Story, story_id)
            current = self.current_seed(story_id)  # NotFair for a story without seeds
            assert story is not None
            current.last_roll, current.revealed_at = story.chain_length, datetime.now(UTC)
            fresh.story_id, fresh.epoch, fresh.first_roll = story_id, current.epoch + 1, story.chain_length + 1
            # Only from the epoch it read: a reveal that raced another is refused rather than skipping one.
            moved = session.execute(
                update(Story)
                .where(col(Story.id) == story_id, col(Story.seed_epoch) == current.epoch)
                .where(col(Story.chain_length) == story.chain_length)
                .values(seed_epoch=fresh.epoch)
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                session.rollback()
                raise ChainMoved("the story's dice moved on while its seed was being revealed; try again")
            session.add_all([current, fresh])
            session.commit()
            return current, fresh

    def fail_attempt(self, attempt_id: str, error: str, calls: Sequence[ModelCall] = ()) -> None:
        """Mark an unfinished attempt failed, with the model calls it made; its rolls stay as they are.

        An attempt already accepted stays accepted (its calls were written with it).
        """
        PLACES.pop(attempt_id)  # it rolls no more
        with self.transaction() as connection:
            marked = connection.execute(_FAIL, {"attempt": attempt_id, "failure": storable(error)}).rowcount
            if not marked and connection.execute(_ACCEPTED, {"attempt": attempt_id}).first():
                return
            insert_calls(connection, calls)

    def rolls_of_attempt(self, attempt_id: str) -> list[RollRecord]:
        with self.session() as session:
            query = select(RollRecord).where(RollRecord.attempt_id == attempt_id).order_by(col(RollRecord.id))
            return list(session.exec(query))

    def rolls_by_id(self, ids: Sequence[int]) -> list[RollRecord]:
        """The rolls with these ids, in the order given."""
        if not ids:
            return []
        with self.reading() as connection:
            return rolls_by_id(connection, ids)


# The same work on a transaction's connection, for the store's parts that do several things in one.
# Each statement is built once: building one costs several times more CPU than running it.

ROLLS = table_of(RollRecord)
ATTEMPTS = table_of(Attempt)
STORIES = table_of(Story)
CALLS = table_of(ModelCall)
# The story's next place in its chain claimed, returning it with the chain's head, the seed epoch and the id the
# roll will get, taken before it is written (its hash covers its id): PostgreSQL's sequence for the column, the
# story's row locked till the commit (a lock, not a new version of the row); on SQLite the id it would give itself
# (its largest rowid + 1: the table has no AUTOINCREMENT), the UPDATE (which changes nothing) taking the database's
# write lock until the roll is written.
_STORY_ID = STORIES.c.id == bindparam("story")
_NEXT_PLACE = STORIES.c.chain_length + 1
_CHAIN = (_NEXT_PLACE, STORIES.c.chain_head, STORIES.c.seed_epoch)
_NEW_ID: ColumnClause[Any] = literal_column(
    "nextval(pg_get_serial_sequence('rolls', 'id'))"
)  # PostgreSQL's sequence for the column
# The next roll's place as the opening reads it (PostgreSQL): no lock, the roll's guard checks it (`PLACES`).
PLACE_NOW = sql_select(*_CHAIN, _NEW_ID).where(_STORY_ID)
_CLAIM = {
    "postgresql": PLACE_NOW.with_for_update(),
    "sqlite": update(STORIES)
    .where(_STORY_ID)
    .values(chain_length=STORIES.c.chain_length)
    .returning(*_CHAIN, sql_select(func.coalesce(func.max(ROLLS.c.id), 0) + 1).scalar_subquery()),
}
_ROLL = insert(ROLLS)
_NEXT_ID = sql_select(_NEW_ID)
CALLS_INSERT = insert(CALLS)
_HEAD = update(STORIES).where(_STORY_ID).values(chain_length=bindparam("place"), chain_head=bindparam("head"))
# The chain moved on from where this process knew it (`Place`), or not at all: the roll's place is still free.
_HEAD_WHERE_KNOWN = guarded(
    _HEAD.where(
        STORIES.c.chain_length == bindparam("place") - 1,
        STORIES.c.chain_head.is_not_distinct_from(bindparam("before")),
        STORIES.c.seed_epoch.is_not_distinct_from(bindparam("epoch")),
    ).returning(STORIES.c.id)
)
_ABANDON = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.story_id == bindparam("story"), ATTEMPTS.c.status == "running")
    .values(status="abandoned", error=ABANDONED)
)
_ATTEMPT = insert(ATTEMPTS)
_FAIL = (
    update(ATTEMPTS)
    .where(ATTEMPTS.c.id == bindparam("attempt"), ATTEMPTS.c.status != "accepted")
    .values(status="failed", error=bindparam("failure"))
)
_ACCEPTED = sql_select(ATTEMPTS.c.id).where(ATTEMPTS.c.id == bindparam("attempt"), ATTEMPTS.c.status == "accepted")
_UNFINISHED = sql_select(ATTEMPTS.c.id).where(
    ATTEMPTS.c.story_id == bindparam("story"), ATTEMPTS.c.status != "accepted"
)
_UNFINISHED_AT = _UNFINISHED.where(ATTEMPTS.c.round_number == bindparam("number"))
OF_ROUND = (
    sql_select(ROLLS)
    .where(ROLLS.c.story_id == bindparam("story"), ROLLS.c.round_number == bindparam("number"))
    .order_by(ROLLS.c.seq)
)
_BY_ID = sql_select(ROLLS).where(ROLLS.c.id.in_(bindparam("ids", expanding=True)))


@dataclass(frozen=True, slots=True)
class Place:
    """Where a roll goes in its story's chain: its place, the head it follows, the seed epoch it is derived in, and
    the id it will have (taken from the sequence before it is written: its hash covers it)."""

    place: int
    head: str | None
    epoch: int | None
    roll_id: int


# Each attempt's next roll's place, as this process last read or wrote its story's chain (PostgreSQL): its opening
# (gm.store._rounds) or its roll before. The attempt holds its story's lease, so the chain is where it was unless
# the lease ran out or a seed was revealed meanwhile, which the roll's guard finds (`_HEAD_WHERE_KNOWN`). Bounded:
# an attempt that never rolls leaves its entry to be pushed out.
PLACES: LRU[str, Place] = LRU(4096)


_PLACED = ("id", "seq", "prev_hash")  # what placing a roll sets on it


def _put(record: RollRecord, **values: object) -> None:
    """Set a roll's fields as the store writes them: straight into its `__dict__`, as `gm.store.records.Built` builds
    it (the roll belongs to no ORM session, so it has no history to keep; sqlmodel's setattr cost 3x as much)."""
    record.__dict__.update(values)
    record.model_fields_set.update(values)  # as pydantic's setattr marks them


def insert_attempt(connection: Connection, attempt: Attempt) -> None:
    """Write a new attempt, marking any other of its story still running as abandoned (see `start_attempt`)."""
    batch = Batch(connection)
    queue_attempt(batch, attempt)
    batch.send()


def queue_attempt(batch: Batch, attempt: Attempt) -> None:
    """`insert_attempt`'s statements, queued in a batch."""
    batch.add(_ABANDON, {"story": attempt.story_id})
    batch.add(_ATTEMPT, values_of(attempt))


def insert_calls(connection: Connection, calls: Sequence[ModelCall]) -> None:
    """Write model calls in one statement."""
    if calls:
        connection.execute(CALLS_INSERT, [values_of(call) for call in calls])


def unfinished_attempts(connection: Connection, story_id: str, round_number: int | None = None) -> set[str]:
    if round_number is None:
        return set(connection.execute(_UNFINISHED, {"story": story_id}).scalars())
    return set(connection.execute(_UNFINISHED_AT, {"story": story_id, "number": round_number}).scalars())


def rolls_of_round(connection: Connection, story_id: str, number: int) -> list[RollRecord]:
    rows = connection.execute(OF_ROUND, {"story": story_id, "number": number}).mappings()
    return [row_of(RollRecord, row) for row in rows]


def rolls_by_id(connection: Connection, ids: Sequence[int]) -> list[RollRecord]:
    found = {row["id"]: row for row in connection.execute(_BY_ID, {"ids": list(ids)}).mappings()}
    return [row_of(RollRecord, found[roll_id]) for roll_id in ids if roll_id in found]
