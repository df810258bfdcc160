"""The store's paused rounds: a round waiting for the player's dice, kept, looked up, or dropped.

A paused round is one `PausedRound` row per story (see gm.engine.typed_dice). It is written under the
story's lease (fenced as an accepted round is), which the same transaction lets go: the player may take
minutes to roll. While the row is there, no other round of the story starts (`waiting_sentence`).
Taking it up again is gm.store._rounds's `take_paused` (it opens the attempt again, as `open_attempt`
opens one). Dropping it marks its attempt failed; its rolls stay.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import update
from sqlmodel import col

from gm.errors import Conflict, LeaseLost
from gm.store._base import LEASE_LOST, Tables
from gm.store._rolls import PLACES
from gm.store.records import Attempt, ModelCall, PausedRound, Story
from gm.transcript.shapes import QuestionPublic

NOTHING_WAITING = "no round of this story is waiting for dice"
ABANDONED_BY_PLAYER = "abandoned by the player while it waited for the dice"
ANSWERED_MEANWHILE = "the round waiting for dice was answered or abandoned meanwhile; nothing was changed"


def waiting_sentence(question: QuestionPublic) -> str:
    """Why no other round can start while one waits, and what the player can do."""
    return (
        f"round {question.round} is waiting for the dice ({question.text}); "
        "answer with the faces, or abandon that round first"
    )


class PausedTables(Tables):
    """Rounds paused for the player's dice."""

    def paused_round(self, story_id: str) -> PausedRound | None:
        """The story's round waiting for dice, if any."""
        with self.session() as session:
            return session.get(PausedRound, story_id)

    def question(self, story_id: str) -> QuestionPublic | None:
        """The question the story's paused round asks, if one waits."""
        paused = self.paused_round(story_id)
        return None if paused is None else QuestionPublic.model_validate(paused.question)

    def keep_paused(self, paused: PausedRound, calls: Sequence[ModelCall], holder: str) -> None:
        """Write the paused round, its attempt marked paused, with the model calls so far, if `holder` holds the
        lease, and let the lease go (one transaction)."""
        with self.session() as session:
            fence = (
                update(Story)
                .where(col(Story.id) == paused.story_id)
                .where(col(Story.lease_holder) == holder)
                .values(lease_holder=None, lease_expires=None, lease_process=None)
            )
            if session.execute(fence).rowcount != 1:  # type: ignore[attr-defined]
                raise LeaseLost(LEASE_LOST)
            attempt = session.get(Attempt, paused.attempt_id)
            if attempt is None:
                raise Conflict(ANSWERED_MEANWHILE)
            attempt.status = "paused"
            session.add_all([paused, attempt, *calls])
            session.commit()

    def drop_paused(self, story_id: str) -> int:
        """Abandon the story's paused round (under the lease): its attempt failed, its rolls kept; the round's
        number. `Conflict` if no round waits."""
        with self.session() as session:
            paused = session.get(PausedRound, story_id)
            if paused is None:
                raise Conflict(NOTHING_WAITING)
            attempt = session.get(Attempt, paused.attempt_id)
            PLACES.pop(paused.attempt_id)  # it rolls no more
            if attempt is not None:
                attempt.status, attempt.error = "failed", ABANDONED_BY_PLAYER
                session.add(attempt)
            number = paused.round_number
            session.delete(paused)
            session.commit()
            return number
