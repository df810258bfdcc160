"""A band's effects: the random amounts a check's band changes on a character's sheet (dice.json). Pure, no I/O.

A band may carry `"effects": [{"variable": "hp", "of": "opponent", "by": "-1d6"}]`: when a roll falls in that
band, the engine rolls `by` (dice notation, a leading `-` to take away) and changes the bounded number
`variable` of the character rolled for (`of: self`) or of the opponent the game master named in roll_check
(`of: opponent`). The amount is a real roll, recorded in the story's chain like any other, and the change is
one of the round's (gm.world.sheet, docs/sheets.md). Whether a character holds `variable` as a bounded number
is the world's to say (gm.world.definition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gm import dice
from gm.problems import Problem

Of = Literal["self", "opponent"]


@dataclass(frozen=True, slots=True)
class Effect:
    """One change a band makes: `variable` of `of` changes by the roll of `notation`, negated when `sign` is -1."""

    variable: str
    of: Of
    notation: str
    sign: int = 1

    @property
    def by(self) -> str:
        return ("-" if self.sign < 0 else "") + self.notation


def split_amount(text: str) -> tuple[int, str]:
    """A signed amount's sign and notation: "-1d6" is (-1, "1d6"), "2d4+1" is (1, "2d4+1")."""
    stripped = text.strip()
    if stripped.startswith("-"):
        return -1, stripped[1:].strip()
    return 1, stripped.removeprefix("+").strip()


def parse_effects(raw: Any) -> tuple[Effect, ...]:
    """The effects of a band as dice.json writes them; one `effect_problems` refuses is left out (a check is
    built while dice.json is checked, to try its bands' coverage, before its errors are reported)."""
    effects = []
    for item in raw if isinstance(raw, list) else []:
        sign, notation = split_amount(str(item.get("by", "")))
        try:
            text = dice.parse(notation).text
        except dice.DiceError:
            continue
        effects.append(
            Effect(str(item.get("variable")), "opponent" if item.get("of") == "opponent" else "self", text, sign)
        )
    return tuple(effects)


def effect_problems(band: Any, band_path: str) -> list[Problem]:
    """What the schema cannot say of a band's effects: an amount that is not dice notation, or rolls no dice."""
    effects = band.get("effects") if isinstance(band, dict) else None
    problems: list[Problem] = []
    for number, item in enumerate(effects if isinstance(effects, list) else []):
        if not isinstance(item, dict) or not isinstance(item.get("by"), str):
            continue
        _, notation = split_amount(item["by"])
        try:
            dice.require_dice(dice.parse(notation))
        except dice.DiceError as error:
            message = f"'by' must be dice notation with a leading '-' to take away, such as -1d6: {error}"
            problems.append(Problem(f"{band_path}.effects[{number}].by", message))
    return problems
