"""What a round takes and gives back: a player's own roll, the listener of its events, and its result
or its pause for the player's dice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from gm import dice
from gm.transcript.shapes import QuestionPublic, RoundPublic

# A listener told of the round as it happens: ("working", {"call": n}), ("roll", a RollPublic as JSON),
# ("refusal", {"reason": ...}) and ("narration", {"text": ...}); a web front end streams these.
RoundEvents = Callable[[str, dict[str, Any]], None]


def ignore(kind: str, data: dict[str, Any]) -> None:
    """The listener when nobody listens."""


@dataclass(frozen=True, slots=True)
class PlayerRoll:
    """Dice a player rolled with `/roll`: rolled at the start of the round and given to the game master as a fact."""

    expression: dice.Expression
    purpose: str = ""


class RoundResult(RoundPublic):
    """What a front end shows after a round: the round in its public shape, and how it was played."""

    story_id: str
    model_calls: int
    regenerated: bool = False
    sheet: dict[str, Any] | None = (
        None  # the characters' sheets after the round (gm.world.sheet); null where none change
    )


class RoundPaused(BaseModel):
    """A round paused for the player's dice (gm.engine.typed_dice): what to ask; `Game.answer` goes on with it."""

    story_id: str
    asking: QuestionPublic
