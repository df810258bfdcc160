"""Rounds paused for the player's dice, in the database: kept, taken up again, or dropped (see gm.engine.typed_dice).

A paused round is one `PausedRound` row per story. It is written under the story's lease (fenced as
an accepted round is), which the same transaction lets go: the player may take minutes to roll. While
the row is there, no other round of the story starts (`waiting_sentence`). Taking it up again takes
the lease, deletes the row and sets its attempt running, in one transaction of the process that goes
on with it, which need not be the one that paused it. Abandoning it marks its attempt failed; its
rolls stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import bindparam, delete, update
from sqlalchemy import select as sql_select
from sqlmodel import col

from gm.errors import Conflict, LeaseBusy, LeaseLost
from gm.store import LEASE_LOST, Store, StoryState
from gm.store._base import row_of, table_of
from gm.store._rolls import rolls_by_id, rolls_of_round, unfinished_attempts
from gm.store._rounds import read_seed, read_story_state
from gm.store._stories import LEASE_TAKE, Claim
from gm.store.records import Attempt, ModelCall, PausedRound, RollRecord, SeedRecord, Story
from gm.transcript.shapes import QuestionPublic

PAUSED = table_of(PausedRound)
ATTEMPTS = table_of(Attempt)
_PAUSED = sql_select(PAUSED).where(PAUSED.c.story_id == bindparam("story"))
_RUNNING = update(ATTEMPTS).where(ATTEMPTS.c.id == bindparam("attempt")).values(status="running")
_TAKEN = delete(PAUSED).where(PAUSED.c.story_id == bindparam("story"))

NOTHING_WAITING = "no round of this story is waiting for dice"
ABANDONED_BY_PLAYER = "abandoned by the player while it waited for the dice"
ANSWERED_MEANWHILE = "the round waiting for dice was answered or abandoned meanwhile; nothing was changed"


def waiting_sentence(question: QuestionPublic) -> str:
    """Why no other round can start while one waits, and what the player can do."""
    return (
        f"round {question.round} is waiting for the dice ({question.text}); "
        "answer with the faces, or abandon that round first"
    )


def paused_round(store: Store, story_id: str) -> PausedRound | None:
    """The story's round waiting for dice, if any."""
    with store.session() as session:
        return session.get(PausedRound, story_id)


def question_of(store: Store, story_id: str) -> QuestionPublic | None:
    """The question the story's paused round asks, if one waits."""
    paused = paused_round(store, story_id)
    return None if paused is None else QuestionPublic.model_validate(paused.question)


def refuse_if_waiting(store: Store, story_id: str) -> None:
    """`Conflict` if a round of the story waits for dice: no other round may start until it is done."""
    question = question_of(store, story_id)
    if question is not None:
        raise Conflict(waiting_sentence(question))


def keep_paused(store: Store, paused: PausedRound, calls: Sequence[ModelCall], holder: str) -> None:
    """Write the paused round, its attempt marked paused, with the model calls so far, if `holder` holds the lease,
    and let the lease go (one transaction)."""
    with store.session() as session:
        fence = (
            update(Story)
            .where(col(Story.id) == paused.story_id)
            .where(col(Story.lease_holder) == holder)
            .values(lease_holder=None, lease_expires=None)
        )
        if session.execute(fence).rowcount != 1:  # type: ignore[attr-defined]
            raise LeaseLost(LEASE_LOST)
        attempt = session.get(Attempt, paused.attempt_id)
        if attempt is None:
            raise Conflict(ANSWERED_MEANWHILE)
        attempt.status = "paused"
        session.add_all([paused, attempt, *calls])
        session.commit()


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


def take_paused(store: Store, story_id: str, attempt_id: str, lease: Claim | None = None) -> TakenUp:
    """Take the paused round up again: its row deleted and its attempt running, at once, with everything its
    attempt is rebuilt from read in the same transaction.

    With `lease`, the story's lease is taken first in that transaction (`LeaseBusy`, and nothing done, if
    another round holds it); without, the caller holds it. `attempt_id` is the attempt the faces were
    checked against; if another process answered or abandoned it meanwhile, `Conflict` and nothing changes.
    """
    with store.transaction() as connection:
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
        others = [
            roll for roll in rolls_of_round(connection, story_id, paused.round_number) if roll.attempt_id != attempt_id
        ]
        earlier = rolls_by_id(connection, paused.earlier) if paused.earlier else []
        unfinished = unfinished_attempts(connection, story_id, paused.round_number) - {attempt_id} if others else set()
        seed = read_seed(connection, story) if story.fair else None
        return TakenUp(paused, story, held, others, earlier, unfinished, seed)


def drop_paused(store: Store, story_id: str) -> int:
    """Abandon the story's paused round (under the lease): its attempt failed, its rolls kept; the round's number."""
    with store.session() as session:
        paused = session.get(PausedRound, story_id)
        if paused is None:
            raise Conflict(NOTHING_WAITING)
        attempt = session.get(Attempt, paused.attempt_id)
        if attempt is not None:
            attempt.status, attempt.error = "failed", ABANDONED_BY_PLAYER
            session.add(attempt)
        number = paused.round_number
        session.delete(paused)
        session.commit()
        return number
