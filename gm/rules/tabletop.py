"""dice.json's table rules: advantage and disadvantage dice, natural-face triggers, opposed checks.

`table_problems` finds what the schema cannot see in them: edge dice that do not parse or cannot be
read as the check reads its dice, a natural face no die of the check can show, a natural naming a
band the check does not have (a warning: such a trigger does nothing), and an opposed check read as
successes or too big to roll twice. `build_table` turns the validated fields into `Check` fields.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from gm import dice
from gm.problems import Problem
from gm.rules._labels import label_key
from gm.rules.checks import Natural, opposed_expression


def table_problems(raw: dict[str, Any], path: str, expression: dice.Expression | None) -> list[Problem]:
    """Problems with the table-rule fields of one schema-valid check; `expression` is its parsed dice."""
    problems: list[Problem] = []
    successes = raw.get("reading", "total") == "successes"
    opposed = raw.get("compare", "absolute") == "opposed"
    if opposed and successes:
        problems.append(Problem(f"{path}.compare", "an opposed check subtracts totals, so it reads the total"))
    variants = [expression] if expression is not None else []
    for edge in ("advantage", "disadvantage"):
        if edge not in raw:
            continue
        try:
            parsed = dice.parse(raw[edge])
            if successes and isinstance(raw.get("hit"), int):
                dice.check_successes(parsed, raw["hit"])
        except dice.DiceError as error:
            problems.append(Problem(f"{path}.{edge}", str(error)))
            continue
        variants.append(parsed)
    if opposed and expression is not None:
        for parsed in variants:
            try:
                _opposed(parsed, expression)
            except dice.DiceError as error:
                problems.append(
                    Problem(f"{path}.dice", f"an opposed check rolls {parsed.text} against {expression.text}: {error}")
                )
    labels = {label_key(band["label"]) for band in raw.get("bands", [])}
    for number, natural in enumerate(raw.get("naturals", [])):
        where = f"{path}.naturals[{number}]"
        shows = [term for parsed in variants for term in parsed.dice if _can_show(term, natural)]
        if variants and not shows:
            die = f"d{natural['sides']}" if "sides" in natural else "die"
            problems.append(
                Problem(
                    f"{where}.face", f"no kept {die} of this check can show {natural['face']}, so it never triggers"
                )
            )
        if "band" in natural and label_key(natural["band"]) not in labels:
            known = ", ".join(f"'{band['label']}'" for band in raw.get("bands", []))
            problems.append(
                Problem(
                    f"{where}.band",
                    f"the check has no band '{natural['band']}', so this natural does nothing; the bands are {known}",
                    "warning",
                )
            )
    return problems


def _can_show(term: dice.Dice, natural: dict[str, Any]) -> bool:
    """Whether a die of `term` can show the natural's face: a natural reads a die's first roll as it
    stands (after rerolls), and Fudge dice have no numbered faces to watch."""
    if term.fudge or ("sides" in natural and natural["sides"] != term.sides):
        return False
    return natural["face"] in term.settled_faces()


def _opposed(actor: dice.Expression, opponent: dice.Expression) -> dice.Expression:
    return opposed_expression(actor, opponent)


def build_table(raw: dict[str, Any]) -> dict[str, Any]:
    """The `Check` fields of a validated check's table rules."""
    return {
        "advantage": dice.parse(raw["advantage"]) if "advantage" in raw else None,
        "disadvantage": dice.parse(raw["disadvantage"]) if "disadvantage" in raw else None,
        "naturals": tuple(
            Natural(item["face"], item.get("sides"), item.get("step", 0), item.get("band"))
            for item in raw.get("naturals", [])
        ),
    }
