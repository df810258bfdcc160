"""The audit of one check roll against dice.json: edge, opponent, modifiers, value, band and naturals.

`gm.integrity.audit` has already checked the faces against the notation and recomputed the dice; this reads
the roll as `roll_check` did (`gm.rules.naturals.read_roll`, the one reading both share) and says what
does not agree. Pure: no I/O.
"""

from __future__ import annotations

from gm import dice
from gm.errors import CheckRollError
from gm.rules.checks import EDGES, Check, Edge, opposed_modifier
from gm.rules.naturals import read_roll
from gm.transcript.shapes import RollPublic


def expected_notation(roll: RollPublic, check: Check) -> tuple[Edge | None, str | None]:
    """The edge the roll names and the notation the check rolls with it, or a mismatch saying why not."""
    edge: Edge | None = None
    if roll.edge is not None:
        if roll.edge not in EDGES or roll.edge not in check.edges:
            return None, f"it names the edge {roll.edge!r}, for which check {check.key!r} declares no dice"
        edge = "advantage" if roll.edge == "advantage" else "disadvantage"
    wanted = check.rolled(edge).text
    if wanted != roll.notation:
        with_edge = f" with {edge}" if edge else ""
        return edge, f"check {check.key!r} rolls {wanted}{with_edge}, but this roll is {roll.notation}"
    return edge, None


def check_mismatches(
    roll: RollPublic, check: Check, edge: Edge | None, again: dice.Roll, modifiers: dict[str, dict[str, int]]
) -> list[str]:
    """What in a check roll does not follow from its recomputed dice (`again`) and dice.json."""
    found: list[str] = []
    if again.hit is not None and again.successes != roll.successes:
        found.append(f"its faces show {again.successes} successes, but it says {roll.successes}")
    wanted = _modifier(check, roll.character, modifiers)
    if roll.modifier != wanted:
        found.append(f"its modifier is {roll.modifier}, but {roll.character}'s {check.modifier} is {wanted}")
    net = roll.modifier
    if check.opposed:
        if roll.opponent is None or roll.opponent == roll.character:
            return [*found, f"check {check.key!r} is opposed, but the roll names no other character as opponent"]
        against = _modifier(check, roll.opponent, modifiers)
        if roll.opponent_modifier != against:
            found.append(
                f"its opponent's modifier is {roll.opponent_modifier}, "
                f"but {roll.opponent}'s {check.modifier} is {against}"
            )
        net = opposed_modifier(roll.modifier, against)
    elif roll.opponent is not None or roll.opponent_modifier is not None:
        found.append(f"it names an opponent, but check {check.key!r} is not opposed")
    try:
        value, settled = read_roll(check, again, edge, roll.target, net)
    except CheckRollError as error:
        return [*found, str(error)]
    band = settled.band
    expected = (value, band.label if band else None, band.result if band else None, bool(band and band.critical))
    if (roll.value, roll.band, roll.result, roll.critical) != expected or roll.void != (band is None):
        told = f"band {band.label!r} ({band.result})" if band else "no band (void)"
        found.append(
            f"its dice read the value {value}, {told} by dice.json, but it says value {roll.value}, "
            f"band {roll.band!r} ({roll.result})"
        )
    elif (roll.natural, roll.stepped_from) != (settled.natural, settled.stepped_from):
        found.append(
            f"its naturals read {settled.natural or 'nothing'!r} by dice.json, "
            f"but it says {roll.natural or 'nothing'!r}"
        )
    return found


def _modifier(check: Check, character: str | None, modifiers: dict[str, dict[str, int]]) -> int:
    return modifiers.get(character or "", {}).get(check.modifier, 0) if check.modifier else 0
