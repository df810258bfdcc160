"""dice.json: what a world's checks are, how they are validated, and how a rolled value finds its band.

A check rolls its `dice` for one character. The dice are read as a `total` (kept dice added up) or
as `successes` (kept dice showing `hit` or more). The character's `modifier` variable, if the check
names one, is added. Then `compare` makes the value the bands read: `absolute` reads it as it is,
`over` reads `value - target` and `under` reads `target - value`, with `target` given by the game
master when it asks for the roll. Bands are tried in order; the first that holds the value wins.

Validation returns every problem at once. Errors: anything the schema refuses, duplicate keys, bad
notation, a successes check without `hit` or with constants or subtracted dice, `min` above `max`,
repeated band labels, and an `absolute` check with a reachable value in no band. Warnings: bands
no value can reach, and stretches of values in no band of an `over`/`under` check (a roll landing
there is void). This module does no I/O; `gm.world` reads dice.json from disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from jsonschema import Draft202012Validator

from gm import dice
from gm.errors import UsageError
from gm.problems import Problem, ProblemsError, document_order, schema_problems, text_problems

Result = Literal["succeeded", "partial", "failed"]
Reading = Literal["total", "successes"]
Compare = Literal["absolute", "over", "under"]


@dataclass(frozen=True, slots=True)
class Band:
    """A named stretch of values and the result it gives; an end left out is open."""

    label: str
    result: Result
    critical: bool = False
    min: int | None = None
    max: int | None = None

    def holds(self, value: int) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


@dataclass(frozen=True, slots=True)
class Check:
    """One check of dice.json, validated, with its notation parsed."""

    key: str
    name: str
    use: str
    dice: dice.Expression
    bands: tuple[Band, ...]
    reading: Reading = "total"
    hit: int | None = None
    compare: Compare = "absolute"
    modifier: str | None = None
    secret: bool = False  # rolled in secret: no card for the player until revealed (gm.secret)

    @property
    def needs_target(self) -> bool:
        return self.compare != "absolute"

    @property
    def reachable(self) -> tuple[int, int]:
        """The lowest and highest values the dice can give under this reading, before any modifier.

        Every value between them can occur (see `gm.dice.bounds`)."""
        return dice.bounds(self.dice, self.hit if self.reading == "successes" else None)


@dataclass(frozen=True, slots=True)
class Rules:
    """A whole dice.json: its checks in order, found by key."""

    checks: tuple[Check, ...]

    def __getitem__(self, key: str) -> Check:
        for check in self.checks:
            if check.key == key:
                return check
        known = ", ".join(check.key for check in self.checks) or "none"
        raise KeyError(f"there is no check '{key}'; the checks are: {known}")

    def __contains__(self, key: object) -> bool:
        return any(check.key == key for check in self.checks)


class CheckRollError(UsageError, ValueError):
    """A check that cannot be settled as asked: the target is missing or not wanted, or the value is in a gap."""


class BandGapError(CheckRollError):
    """The value a roll gave falls in no band of the check; such a roll is void."""

    def __init__(self, check: Check, value: int) -> None:
        self.check_key = check.key
        self.value = value
        super().__init__(f"check '{check.key}' has no band for the value {value}, so the roll is void")


def read_value(check: Check, rolled: int, target: int | None = None, modifier: int = 0) -> int:
    """The value the bands read: `rolled` (total or successes) plus `modifier`, compared with `target`."""
    if check.needs_target and target is None:
        raise CheckRollError(f"check '{check.key}' compares {check.compare} a target, so it needs a target")
    if not check.needs_target and target is not None:
        raise CheckRollError(f"check '{check.key}' reads its value as it is, so it takes no target")
    value = rolled + modifier
    if check.compare == "over":
        return value - (target or 0)
    if check.compare == "under":
        return (target or 0) - value
    return value


def band_for(check: Check, value: int) -> Band | None:
    """The first band holding `value`, or None when it falls in a gap."""
    for band in check.bands:
        if band.holds(value):
            return band
    return None


def resolve(check: Check, total: int, target: int | None = None, modifier: int = 0) -> Band:
    """The band a rolled `total` (or count of successes) falls in, or `BandGapError` naming check and value."""
    value = read_value(check, total, target, modifier)
    band = band_for(check, value)
    if band is None:
        raise BandGapError(check, value)
    return band


@cache
def dice_schema() -> dict[str, Any]:
    """The JSON Schema of dice.json, shipped in the package (the editor uses it too)."""
    text = resources.files("gm").joinpath("schemas/dice.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(dice_schema())


def parse_rules(data: Any, source: str = "dice.json") -> Rules:
    """Validate parsed dice.json data and build `Rules`, or raise `ProblemsError` listing every error."""
    problems = validate(data)
    if any(problem.severity == "error" for problem in problems):
        raise ProblemsError(source, problems)
    return _build(data)


def validate(data: Any) -> list[Problem]:
    """Every problem in parsed dice.json data: schema errors first, then what a schema cannot say."""
    problems = schema_problems(_validator(), data) + text_problems(data)
    if not isinstance(data, dict) or not isinstance(data.get("checks"), list):
        return sorted(problems, key=document_order)
    broken = {problem.path.split("]")[0] + "]" for problem in problems if problem.path.startswith("$.checks[")}
    seen: dict[str, int] = {}
    for index, raw in enumerate(data["checks"]):
        path = f"$.checks[{index}]"
        if isinstance(raw, dict) and isinstance(raw.get("key"), str):
            if raw["key"] in seen:
                problems.append(
                    Problem(f"{path}.key", f"the key '{raw['key']}' is already used by checks[{seen[raw['key']]}]")
                )
            seen.setdefault(raw["key"], index)
        problems.extend(_check_problems(raw, path, schema_ok=path not in broken))
    return sorted(problems, key=document_order)


def _check_problems(raw: Any, path: str, schema_ok: bool) -> list[Problem]:
    """What the schema cannot see in one check; parts the schema refused are left to its messages."""
    problems: list[Problem] = []
    expression = None
    if isinstance(raw, dict) and isinstance(raw.get("dice"), str) and raw["dice"].strip():
        try:
            expression = dice.parse(raw["dice"])
        except dice.DiceError as error:
            problems.append(Problem(f"{path}.dice", str(error)))
    if not schema_ok:
        return problems
    reading_ok = _reading_problems(raw, path, expression, problems)
    labels: dict[str, int] = {}
    for number, band in enumerate(raw["bands"]):
        band_path = f"{path}.bands[{number}]"
        if "min" in band and "max" in band and band["min"] > band["max"]:
            problems.append(Problem(band_path, f"min {band['min']} is above max {band['max']}"))
        folded = band["label"].strip().casefold()
        if folded in labels:
            message = f"the label '{band['label']}' is already used by bands[{labels[folded]}]"
            problems.append(Problem(f"{band_path}.label", message))
        labels.setdefault(folded, number)
    if expression is not None and reading_ok:
        problems.extend(coverage_problems(_build_check(raw, expression), path))
    return problems


def _reading_problems(raw: dict[str, Any], path: str, expression: dice.Expression | None, found: list[Problem]) -> bool:
    """Add problems with `reading` and `hit` to `found`; True when the reachable values are known."""
    if raw.get("reading", "total") != "successes":
        if "hit" in raw:
            found.append(Problem(f"{path}.hit", "'hit' belongs to a successes check; this check reads the total"))
        return True
    if "hit" not in raw:
        found.append(Problem(path, "a successes check needs 'hit', the lowest face that counts as a success"))
        return False
    if expression is None:
        return False
    try:
        dice.check_successes(expression, raw["hit"])
    except dice.DiceError as error:
        where = f"{path}.hit" if error.problem.startswith("hit") else f"{path}.dice"
        found.append(Problem(where, error.problem))
        return False
    return True


def coverage_problems(check: Check, path: str, modifier: int = 0, who: str = "") -> list[Problem]:
    """Gaps and unreachable bands of one check; `who` names the character whose `modifier` applies."""
    problems: list[Problem] = []
    low, high = check.reachable
    for number, band in enumerate(check.bands):
        earlier = check.bands[:number]
        if band.min is not None and band.max is not None and band.min > band.max:
            continue
        if _covered(band.min, band.max, earlier):
            problems.append(
                Problem(
                    f"{path}.bands[{number}]",
                    f"the band '{band.label}' is covered by earlier bands and can never be reached",
                    "warning",
                )
            )
        elif check.compare == "absolute" and not _overlaps(band, low + modifier, high + modifier):
            problems.append(
                Problem(
                    f"{path}.bands[{number}]",
                    f"the band '{band.label}' lies outside the values {low + modifier} to {high + modifier}"
                    f" the dice can give{who}",
                    "warning",
                )
            )
    if check.compare == "absolute":
        gaps = list(_gaps(check.bands, low + modifier, high + modifier))
        for first, last in gaps:
            values = f"the value {first}" if first == last else f"the values {first} to {last}"
            problems.append(
                Problem(f"{path}.bands", f"check '{check.key}' can roll {values}{who}, which no band holds")
            )
    else:
        for first, last in _gaps(check.bands, None, None):
            values = _stretch(first, last)
            problems.append(
                Problem(
                    f"{path}.bands",
                    f"check '{check.key}' has no band for {values}; a roll landing there is void",
                    "warning",
                )
            )
    return problems


def _build(data: dict[str, Any]) -> Rules:
    return Rules(tuple(_build_check(raw, dice.parse(raw["dice"])) for raw in data["checks"]))


def _build_check(raw: dict[str, Any], expression: dice.Expression) -> Check:
    bands = tuple(
        Band(band["label"], band["result"], band.get("critical", False), band.get("min"), band.get("max"))
        for band in raw["bands"]
    )
    return Check(
        raw["key"],
        raw["name"],
        raw["use"],
        expression,
        bands,
        raw.get("reading", "total"),
        raw.get("hit"),
        raw.get("compare", "absolute"),
        raw.get("modifier"),
        secret=bool(raw.get("secret", False)),
    )


def _overlaps(band: Band, low: int, high: int) -> bool:
    return (band.min is None or band.min <= high) and (band.max is None or band.max >= low)


def _covered(low: int | None, high: int | None, bands: Iterable[Band]) -> bool:
    """Whether every value from `low` to `high` (None: unbounded) is held by one of `bands`."""
    return not any(True for _ in _gaps(tuple(bands), low, high))


def _gaps(bands: tuple[Band, ...], low: int | None, high: int | None) -> Iterable[tuple[int | None, int | None]]:
    """Stretches from `low` to `high` (None: unbounded) that no band holds, lowest first."""
    spans = sorted(
        ((band.min, band.max) for band in bands if band.min is None or band.max is None or band.min <= band.max),
        key=lambda span: -(10**12) if span[0] is None else span[0],
    )
    cursor = low  # the lowest value not yet known to be held; None is minus infinity
    for start, end in spans:
        if high is not None and cursor is not None and cursor > high:
            return
        if start is not None and (cursor is None or start > cursor):
            gap_end = start - 1 if high is None else min(start - 1, high)
            if cursor is None or gap_end >= cursor:
                yield cursor, gap_end
        if end is None:
            return
        if cursor is None or end + 1 > cursor:
            cursor = end + 1
    if high is None or cursor is None or cursor <= high:
        yield cursor, high


def _stretch(first: int | None, last: int | None) -> str:
    if first is None and last is None:
        return "any value"
    if first is None:
        return f"values of {last} or less"
    if last is None:
        return f"values of {first} or more"
    return f"the value {first}" if first == last else f"the values {first} to {last}"
