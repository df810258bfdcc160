"""Rolls that outlive a failed attempt: a round's rolls belong to the round, not to the attempt.

When an attempt at round N starts, every roll already made for round N (by attempts that failed,
were cut short by a crash, or, for a regenerate, the telling being replaced) is offered to it here:

- a check roll is in play from the start (`RoundTools.bind_retried_checks`), given as a fact with its band:
  the new attempt must tell it, whichever check it asks for, so failing on purpose and asking for another
  check never buys fresh dice (the audit flags a round that leaves one untold);
- a check asked again for the same character is that earlier roll, whatever the player typed now;
- the player's `/roll` sent again with the same notation and purpose is the earlier roll, not rolled anew;
- plain dice asked again with the same notation are the earlier rolls of it, in the order they were made.

The game master is told each time that the roll is the earlier one. Only an accepted round closes
its rolls: round N+1 starts with none. Pure: the rolls come from the store, read when the attempt begins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from gm.store.records import RollRecord

EARLIER_NOTE = (
    "this was rolled in an earlier attempt at this round that did not finish; a round's rolls stand, "
    "so this is that roll"
)
EARLIER_FACT = " (rolled in an earlier attempt at this round that did not finish; the roll stands)"


INITIATIVE_REASON = "initiative"  # the reason an initiative roll is written with (gm.engine.table)


@dataclass
class EarlierRolls:
    """The rolls made for this round before this attempt began, in the order rolled, and which are taken."""

    rolls: Sequence[RollRecord] = ()
    _taken: set[int | None] = field(default_factory=set)

    def check(self, check_key: str, character: str) -> RollRecord | None:
        """The round's roll of this check for this character, if an earlier attempt made it."""
        wanted = (check_key, character)
        return self._first(lambda roll: roll.kind == "check" and (roll.check_key, roll.character) == wanted)

    def player(self, notation: str, purpose: str, character: str) -> RollRecord | None:
        """An earlier, still untaken roll of the same `/roll` (same notation and purpose) by the same player."""
        return self._first(
            lambda roll: (
                roll.kind == "player"
                and (roll.notation, roll.reason, roll.character) == (notation, purpose, character)
                and roll.id not in self._taken
            )
        )

    def initiative(self, character: str) -> RollRecord | None:
        """An earlier, still untaken initiative roll of this character (gm.engine.table)."""
        return self._first(
            lambda roll: roll.kind == "dice" and roll.reason == INITIATIVE_REASON and roll.character == character
        )

    def dice(self, notation: str) -> RollRecord | None:
        """The next earlier plain roll of this notation not yet given back in this attempt."""
        return self._first(
            lambda roll: roll.kind == "dice" and roll.notation == notation and roll.id not in self._taken
        )

    def taken(self, ids: Iterable[int | None]) -> None:
        """Mark rolls as given back already (a failed attempt's check rolls, bound from the start)."""
        self._taken.update(ids)

    def amount(self, notation: str, reason: str) -> RollRecord | None:
        """The next earlier, untaken roll of a sheet change's amount (gm.engine._sheets): same notation and reason."""
        return self._first(
            lambda roll: (
                roll.kind == "dice"
                and (roll.notation, roll.reason) == (notation, reason)
                and roll.id not in self._taken
            )
        )

    def _first(self, wanted: Callable[[RollRecord], bool]) -> RollRecord | None:
        for roll in self.rolls:
            if wanted(roll):
                self._taken.add(roll.id)
                return roll
        return None
