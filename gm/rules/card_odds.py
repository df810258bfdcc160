"""The odds an opened dice card shows: each band's exact chance at the moment of a check roll.

The roll's own record says everything the odds depend on: the check (from the dice.json copied into
the story, so it is the one the roll was made under), its edge, its target, and the modifiers (for an
opposed check, the actor's minus the opponent's). Results are cached, as a transcript shows the same
check at the same target many times. Pure apart from that cache: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gm._lru import LRU
from gm.errors import CheckRollError
from gm.rules.chances import check_odds
from gm.rules.checks import EDGES, Check, Edge, Result, opposed_modifier


@dataclass(frozen=True, slots=True)
class BandChance:
    """One band's chance at the moment of a roll, as an exact fraction in text ("9/20"), or an estimate."""

    label: str
    result: Result
    critical: bool
    probability: str
    exact: bool


_CACHE: LRU[tuple[str, int | None, int, str | None], tuple[BandChance, ...]] = LRU(512)
# A check's text, by the Check object's identity: equal checks of different World objects (the same
# dice.json read twice) share their odds through it, and writing a check out (about a thousand
# characters) cost more than the cached odds saved. Each entry keeps its Check, so that identity
# cannot pass to another object while the entry lives; as many as gm.engine.game keeps built worlds.
_KEYS: LRU[int, tuple[Check, str]] = LRU(1024)


def roll_chances(check: Check, roll: Mapping[str, Any]) -> tuple[BandChance, ...] | None:
    """Each band's chance for a stored check roll (its record or a copy of it), or None when the
    roll cannot be read against this check any more (a target it does not take, an unknown edge)."""
    edge = roll.get("edge")
    if edge is not None and edge not in EDGES:
        return None
    modifier = int(roll.get("modifier") or 0)
    if check.opposed:
        modifier = opposed_modifier(modifier, int(roll.get("opponent_modifier") or 0))
    target = roll.get("target")
    key = (_text(check), target, modifier, edge)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    try:
        odds = check_odds(check, target, modifier, edge=_edge(edge))
    except CheckRollError:
        return None
    chances = tuple(
        BandChance(
            chance.band.label, chance.band.result, chance.band.critical, str(chance.probability), odds.dice.exact
        )
        for chance in odds.bands
    )
    _CACHE.put(key, chances)
    return chances


def _text(check: Check) -> str:
    """`repr(check)`, written once per Check object."""
    found = _KEYS.get(id(check))
    if found is not None and found[0] is check:
        return found[1]
    text = repr(check)
    _KEYS.put(id(check), (check, text))
    return text


def _edge(edge: str | None) -> Edge | None:
    return "advantage" if edge == "advantage" else "disadvantage" if edge == "disadvantage" else None
