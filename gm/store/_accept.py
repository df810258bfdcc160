"""A round accepted: written with its model calls, its attempt marked accepted, its story counted and its lease let
go, in one transaction fenced on the lease; on PostgreSQL in one round trip, its commit included.

The acceptance refuses a round in three cases: its attempt is not the story's (`StoryNotFound`), the story's row
was not counted (the story is gone, or, fenced, the lease is another's: `LeaseLost`), or a round of that number
was written meanwhile (`LeaseLost`). Each is read from a statement's result, so on
PostgreSQL the COMMIT had to wait for Python to read them, in a round trip of its own. Here each of those three
statements is guarded (gm.store._guards): the transaction, its COMMIT included, is one round trip, and a guard
that fires has the round accepted again the plain way (the checks read in Python, as on SQLite), which says why
it is refused in the same words as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, bindparam, case, delete, func, update
from sqlalchemy import select as sql_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError

from gm.errors import LeaseLost, StoryNotFound
from gm.store._base import LEASE_LOST, Tables, table_of, values_of
from gm.store._batch import Batch
from gm.store._events import Event, Ride
from gm.store._guards import fired, guarded
from gm.store._rolls import CALLS_INSERT, PLACES
from gm.store._seats import SETTLE
from gm.store._sheets import CHANGES_INSERT, DROP_REPLACED, SHEET_VALUES, SheetWrite
from gm.store.records import Attempt, MemoryEntry, ModelCall, RoundRecord, Story


class AcceptTables(Tables):
    """Rounds accepted."""

    def accept_round(
        self,
        attempt_id: str,
        record: RoundRecord,
        calls: Sequence[ModelCall] = (),
        *,
        holder: str | None = None,
        sheet: SheetWrite | None = None,
        regenerated: bool = False,
    ) -> RoundRecord:
        """Write an accepted round with its model calls, mark its attempt, and count it, in one transaction.

        A regenerated round replaces the earlier version of the same number. With `holder`, the write is
        fenced on the story's lease: it happens only if `holder` holds it still, else `LeaseLost` and
        nothing is written. The fence is the UPDATE that counts the round on the story row, so it locks
        that row (PostgreSQL) or the database (SQLite) until the round is written: no other round can take
        the lease between the check and the commit. The same UPDATE lets the lease go: the round is over
        once it is written, and another round may take the story as soon as it is committed.

        With `sheet`, the round's sheet changes are written with it and the story's sheets set to what they
        left (a round played again replaces its earlier version's changes).

        On PostgreSQL the whole transaction is one round trip (see the module's docstring), and, when the task
        playing the round has a rider (the web layer's), the round's live events not yet written and its `round`
        event go in it, after its data (`gm.store._events.Ride`).
        """
        arguments = (attempt_id, record, calls, holder, sheet, regenerated)
        PLACES.pop(attempt_id)  # the attempt rolls no more: where its next roll would go is forgotten
        if self.engine.dialect.name == "postgresql":
            try:
                return self._accept(*arguments, guarded=True)
            except DBAPIError as error:
                if not fired(error):
                    raise
            # A guard refused the round and nothing was written (its events went back to its rider): the plain way,
            # with nothing riding, says why, as it always did.
        return self._accept(*arguments, guarded=False)

    def _accept(
        self,
        attempt_id: str,
        record: RoundRecord,
        calls: Sequence[ModelCall],
        holder: str | None,
        sheet: SheetWrite | None,
        regenerated: bool,
        *,
        guarded: bool,
    ) -> RoundRecord:
        story_id, number = record.story_id, record.number
        on_round = {"attempt": attempt_id, "story": story_id, "round_no": number}
        statements = _GUARDED if guarded else _PLAIN[self.engine.dialect.name]
        ride: Ride | None = None
        try:
            with self.transaction() as connection:
                batch = Batch(connection)  # one round trip on PostgreSQL (gm.store._batch), and the commit
                accepted = batch.add(statements.accept, on_round)
                # Counted before a regenerated round's earlier version goes: it adds none (`_COUNTED`).
                counted = {**on_round, "round_clock": record.clock, "holder": holder}
                if sheet is not None:  # the story's sheets set by the same UPDATE: one new version of its row, not two
                    counted |= {"sheet": sheet.sheets, "sheet_length": sheet.length, "sheet_head": sheet.head}
                count = batch.add(statements.counting[holder is not None, sheet is not None], counted)
                # These two touch only a regenerated round's earlier version; SQLite, where the attempt has answered
                # already, runs them only for one.
                if not accepted.done or accepted.scalar():
                    batch.add(_FORGET, on_round)
                    batch.add(_REPLACE, on_round)
                    if sheet is not None:
                        batch.add(DROP_REPLACED, on_round)
                # (story, number) is unique: a round of that number still there is not written, and refuses this one
                written = batch.add(statements.round, values_of(record))
                if calls:
                    batch.add(CALLS_INSERT, [values_of(call) for call in calls])
                if sheet is not None and sheet.changes:
                    batch.add(CHANGES_INSERT, [values_of(change) for change in sheet.changes])
                if record.actions:  # the table's messages this round settled (gm.store._seats)
                    settled = [{"story": story_id, "message": a["message"], "round_no": number} for a in record.actions]
                    batch.add(SETTLE, settled)
                last: Event = ("round", {"number": number, "regenerated": regenerated}, None)
                if guarded:  # the round's events, after its data (only PostgreSQL's acceptance is guarded)
                    ride = Ride.board(batch, story_id, "acceptance", last)
                batch.send(commit=guarded)  # guarded: nothing after this can refuse the round
                if accepted.first() is None:
                    raise StoryNotFound(story_id)
                if (count.first() is None) if guarded else count.rowcount != 1:  # a guard's SELECT: its one row
                    raise StoryNotFound(story_id) if holder is None else LeaseLost(LEASE_LOST)
                if (round_id := written.scalar()) is None:
                    raise LeaseLost(f"round {number} was played meanwhile by another attempt; this one was not saved")
                record.id = round_id
            if ride is not None:
                ride.landed = True
        finally:
            if ride is not None:
                ride.end(self)
        return record


# Each statement is built once: building one costs several times more CPU than running it.
STORIES = table_of(Story)
ATTEMPTS = table_of(Attempt)
ROUNDS = table_of(RoundRecord)
MEMORY = table_of(MemoryEntry)
_STORY = STORIES.c.id == bindparam("story")
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
    lease_holder=None, lease_expires=None, lease_process=None
)
# By (fenced on the lease, sheets written): the round's one UPDATE of its story row as it is accepted.
_COUNTING = {
    (False, False): _COUNT,
    (True, False): _COUNT_AND_LET_GO,
    (False, True): _COUNT.values(SHEET_VALUES),
    (True, True): _COUNT_AND_LET_GO.values(SHEET_VALUES),
}


class _Statements:
    """The acceptance's three statements that may refuse a round, and each UPDATE that counts it."""

    def __init__(self, accept: Any, counting: dict[tuple[bool, bool], Any], round: Any) -> None:
        self.accept, self.counting, self.round = accept, counting, round


_ROUND_UNLESS_PLAYED = {  # a round written, returning its id; none where the story has a round of that number
    "postgresql": postgresql_insert(ROUNDS).on_conflict_do_nothing().returning(ROUNDS.c.id),
    "sqlite": sqlite_insert(ROUNDS).on_conflict_do_nothing().returning(ROUNDS.c.id),
}
# In a CTE SQLAlchemy names an INSERT's values anew (param_1, ...): here each is named by its column, as usual.
_EVERY_COLUMN = {column.key: bindparam(column.key, type_=column.type) for column in ROUNDS.c if column.key != "id"}
_PLAIN = {dialect: _Statements(_ACCEPT, _COUNTING, written) for dialect, written in _ROUND_UNLESS_PLAYED.items()}
_GUARDED = _Statements(
    guarded(_ACCEPT),
    {key: guarded(counting.returning(STORIES.c.id)) for key, counting in _COUNTING.items()},
    guarded(postgresql_insert(ROUNDS).values(_EVERY_COLUMN).on_conflict_do_nothing().returning(ROUNDS.c.id), "id"),
)
