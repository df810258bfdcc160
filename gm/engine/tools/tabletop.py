"""roll_check's table rules (edge dice, opposed checks): which arguments its schema offers, and reading `edge`
and `opponent`.

The schema offers `edge` only when some check declares edge dice and `opponent` only when some check
is opposed, each saying which checks take it, so a world without them shows the model nothing new.
A call that asks a check for an edge it does not declare, names an opponent for a check that is not
opposed, leaves one out of an opposed check, or sets a character against themselves gets one
sentence saying so (`CheckRollError`, which the tools turn into `ModelRetry`). Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from gm.errors import CheckRollError
from gm.rules.checks import Check, Edge
from gm.world.definition import World


def roll_check_properties(world: World, names: list[str], max_target: int, max_reason: int) -> dict[str, Any]:
    """roll_check's arguments: `edge` only when some check declares edge dice, and `opponent` only
    when some check is opposed, each saying which checks take it."""
    assert world.rules is not None
    checks = world.rules.checks
    properties: dict[str, Any] = {
        "check": {"type": "string", "enum": [check.key for check in checks]},
        "character": {"type": "string", "enum": names},
    }
    properties["target"] = {
        "type": "integer",
        "minimum": -max_target,
        "maximum": max_target,
        "description": "The difficulty or skill; only for over/under checks.",
    }
    edged = [check for check in checks if check.edges]
    if edged:
        takes = "; ".join(f"{check.key}: {' or '.join(check.edges)}" for check in edged)
        properties["edge"] = {
            "type": "string",
            "enum": sorted({edge for check in edged for edge in check.edges}),
            "description": f"Only for checks that declare it ({takes}): roll their dice with advantage or disadvantage"
            " when the fiction gives the character one.",
        }
    opposed = [check.key for check in checks if check.opposed]
    if opposed:
        properties["opponent"] = {
            "type": "string",
            "enum": names,
            "description": f"Only for opposed checks ({', '.join(opposed)}), and required there: the character who"
            " resists, rolling the same dice with their own modifier. The roll settles the actor's outcome only.",
        }
    hurting = [check.key for check in checks if not check.opposed and hits_opponent(check)]
    if hurting:
        properties["against"] = {
            "type": "string",
            "enum": names,
            "description": f"Only for checks whose bands change an opponent's sheet ({', '.join(hurting)}), and"
            " required there: the character the check is made against.",
        }
    properties["reason"] = {"type": "string", "maxLength": max_reason, "description": "What the character attempts."}
    return properties


def hits_opponent(check: Check) -> bool:
    """Whether some band of the check changes the opponent's sheet (gm.rules.effects)."""
    return any(effect.of == "opponent" for band in check.bands for effect in band.effects)


def against_of(world: World, check: Check, actor: str, named: Any) -> str | None:
    """The character a non-opposed check whose bands change an opponent's sheet is made against."""
    if check.opposed or not hits_opponent(check):
        if named is not None:
            raise CheckRollError(f"check '{check.key}' changes no opponent's sheet, so it takes no 'against'")
        return None
    if named is None:
        raise CheckRollError(f"check '{check.key}' can change its opponent's sheet: name them with 'against'")
    opponent = world.character(str(named))
    if opponent.name == actor:
        raise CheckRollError(f"{actor} cannot act against themselves; name another character as 'against'")
    return opponent.name


def edge_asked(check: Check, asked: Any) -> Edge | None:
    """The edge asked for, if the check declares dice for it; otherwise a sentence saying what it takes."""
    if asked is None:
        return None
    for edge in check.edges:
        if edge == asked:
            return edge
    takes = f"it takes {' or '.join(check.edges)}" if check.edges else "it takes none"
    raise CheckRollError(
        f"check '{check.key}' declares no {asked} dice ({takes}); leave edge out or roll another check"
    )


def opponent_of(
    world: World, check: Check, actor: str, named: Any, sheets: dict[str, Any] | None = None
) -> tuple[str | None, int]:
    """An opposed check's opponent and their modifier; an opponent is refused for any other check."""
    if not check.opposed:
        if named is not None:
            raise CheckRollError(f"check '{check.key}' is not opposed, so it takes no opponent; leave it out")
        return None, 0
    if named is None:
        raise CheckRollError(f"check '{check.key}' is opposed: name the opponent, the character who resists")
    opponent = world.character(str(named))
    if opponent.name == actor:
        raise CheckRollError(f"{actor} cannot oppose themselves; name another character as the opponent")
    return opponent.name, world.modifier_for(check, opponent, sheets)
