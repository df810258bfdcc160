"""dice.json: what a world's checks are, how they are validated, and how a rolled value finds its band.

A check rolls its `dice` for one character. The dice are read as a `total` (kept dice added up) or
as `successes` (kept dice showing `hit` or more). The character's `modifier` variable, if the check
names one, is added. Then `compare` makes the value the bands read: `absolute` reads it as it is,
`over` reads `value - target` and `under` reads `target - value`, with `target` given by the game
master when it asks for the roll; `opposed` reads the actor's value minus an opponent's (both roll
the dice, each with their own modifier: `Check.rolled`). Bands are tried in order; the first that
holds the value wins. A check may also declare `advantage` and `disadvantage` dice (rolled instead of
`dice` with that edge) and `naturals`, triggers on natural faces that move the band afterwards
(`gm.rules.naturals`). The table rules' own validation is `gm.rules.tabletop`; band coverage is
`gm.rules.coverage`.

Validation returns every problem at once. Errors: anything the schema refuses, duplicate keys, bad
notation, a successes check without `hit` or with constants or subtracted dice, `min` above `max`,
repeated band labels (compared trimmed, case-folded and in Unicode's composed form), and an `absolute`
check with a reachable value in no band. Warnings: bands no value can reach, stretches of values in no
band of an `over`/`under` check (a roll landing there is void), and a check whose bands all give one
result (no roll of it can ever be made). This module does no I/O; `gm.world.loading` reads dice.json from disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Literal

from jsonschema import Draft202012Validator

from gm import dice
from gm.dice.tree import Expression as Notation
from gm.errors import UsageError
from gm.problems import Problem, ProblemsError, document_order, schema_problems, text_problems
from gm.rules._labels import label_key
from gm.rules.coverage import coverage_problems
from gm.rules.tabletop import build_table, table_problems

Result = Literal["succeeded", "partial", "failed"]
Reading = Literal["total", "successes"]
Compare = Literal["absolute", "over", "under", "opposed"]
Edge = Literal["advantage", "disadvantage"]
EDGES: tuple[Edge, ...] = ("advantage", "disadvantage")


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
class Natural:
    """A trigger on a natural face: when a kept die of the actor (with `sides` sides, or any die that
    can show it) shows `face`, the band steps `step` places (up is toward higher values), or, with
    `band`, the roll goes to that band. See `gm.rules.naturals` for how triggers combine."""

    face: int
    sides: int | None = None
    step: int = 0
    band: str | None = None

    @property
    def watch(self) -> tuple[int, int | None]:
        return self.face, self.sides

    @property
    def text(self) -> str:
        """How the card names it: "natural 20", or "natural 6 on a d6" when the die is named."""
        return f"natural {self.face}" if self.sides is None else f"natural {self.face} on a d{self.sides}"


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
    advantage: Notation | None = None
    disadvantage: Notation | None = None
    naturals: tuple[Natural, ...] = ()
    secret: bool = False  # rolled in secret: no card for the player until revealed (gm.integrity.secret)

    @property
    def needs_target(self) -> bool:
        return self.compare in ("over", "under")

    @property
    def opposed(self) -> bool:
        return self.compare == "opposed"

    @property
    def hit_read(self) -> int | None:
        """`hit` when the dice are read as successes, else None (the total is read)."""
        return self.hit if self.reading == "successes" else None

    @property
    def edges(self) -> tuple[Edge, ...]:
        """The edges this check declares dice for, in the order advantage, disadvantage."""
        return tuple(edge for edge in EDGES if self.dice_for(edge) is not None)

    def dice_for(self, edge: Edge | None) -> Notation | None:
        """The actor's dice with `edge` (None: the check's own dice), or None if the check declares none."""
        if edge is None:
            return self.dice
        return self.advantage if edge == "advantage" else self.disadvantage

    def rolled(self, edge: Edge | None = None) -> Notation:
        """What one roll of this check rolls: the actor's dice with `edge`; for an opposed check,
        followed by the opponent's own dice subtracted (`1d20-1d20`), so one roll holds both."""
        actor = self.dice_for(edge)
        if actor is None:
            raise CheckRollError(f"check '{self.key}' declares no {edge} dice, so it takes no edge '{edge}'")
        return opposed_expression(actor, self.dice) if self.opposed else actor

    def reachable_for(self, edge: Edge | None = None) -> tuple[int, int]:
        """The lowest and highest values `rolled(edge)` can give under this reading, before any modifier.

        Every value between them can occur (see `gm.dice.bounds`)."""
        return dice.bounds(self.rolled(edge), self.hit_read)

    def spans_for(self, edge: Edge | None = None) -> tuple[tuple[int, int], ...]:
        """Every value `rolled(edge)` can give under this reading, before any modifier, as disjoint stretches
        (rerolled and exploding dice can skip values; see `gm.dice.spans`)."""
        return _spans(self.rolled(edge).text, self.hit_read)

    @property
    def reachable(self) -> tuple[int, int]:
        """`reachable_for` with no edge."""
        return self.reachable_for(None)


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
    """The value the bands read: `rolled` (total or successes) plus `modifier`, compared with `target`.

    For an opposed check `rolled` is the actor's total minus the opponent's (see `Check.rolled`) and
    `modifier` the actor's modifier minus the opponent's (`opposed_modifier`)."""
    if check.needs_target and target is None:
        raise CheckRollError(f"check '{check.key}' compares {check.compare} a target, so it needs a target")
    if not check.needs_target and target is not None:
        said = "reads the actor's value minus the opponent's" if check.opposed else "reads its value as it is"
        raise CheckRollError(f"check '{check.key}' {said}, so it takes no target")
    value = rolled + modifier
    if check.compare == "over":
        return value - (target or 0)
    if check.compare == "under":
        return (target or 0) - value
    return value


def opposed_modifier(actor: int, opponent: int) -> int:
    """The modifier an opposed check's bands read: the actor's minus the opponent's."""
    return actor - opponent


def opposed_expression(actor: dice.Expression, opponent: dice.Expression) -> dice.Expression:
    """One notation for both sides of an opposed roll: the actor's dice, then the opponent's
    subtracted term by term (`2d20kh1` against `1d20` is `2d20kh1-1d20`). Raises `dice.DiceError`
    when the two together pass the notation's limits."""
    return _opposed_text(actor.text, opponent.text)


@lru_cache(maxsize=1024)  # by text: a parsed expression is not hashable, and a check is rolled every round
def _opposed_text(actor: str, opponent: str) -> dice.Expression:
    parsed = dice.parse(opponent)
    flipped = "".join(("+" if term.negative else "-") + _term_text(term) for term in parsed.terms)
    return dice.parse(actor + flipped)


def _term_text(term: dice.Dice | dice.Constant) -> str:
    return str(term.value) if isinstance(term, dice.Constant) else term.text


@lru_cache(maxsize=1024)  # by text: a check's values are asked for every roll and every gm check
def _spans(notation: str, hit: int | None) -> tuple[tuple[int, int], ...]:
    return dice.spans(notation, hit)


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
    # Read defensively: these are found even in a check the schema refuses in part, so one run lists them all.
    problems.extend(_band_problems(raw.get("bands") if isinstance(raw, dict) else None, path))
    if not schema_ok:
        return problems
    reading_ok = _reading_problems(raw, path, expression, problems)
    table = table_problems(raw, path, expression)
    problems.extend(table)
    if expression is not None and reading_ok and not any(problem.severity == "error" for problem in table):
        problems.extend(coverage_problems(_build_check(raw, expression), path))
    problems.extend(_one_result_problems(raw, path))
    return problems


def _one_result_problems(raw: dict[str, Any], path: str) -> list[Problem]:
    """A check whose bands all give one result: every roll of it is certain, so the game master is refused
    each time (`gm.rules.chances.certain`), and the check can never be rolled."""
    bands = raw.get("bands")
    results = {band.get("result") for band in bands if isinstance(band, dict)} if isinstance(bands, list) else set()
    if len(results) != 1 or not isinstance(raw.get("key"), str):
        return []
    (result,) = results
    return [
        Problem(
            f"{path}.bands",
            f"every band of check '{raw['key']}' gives the result '{result}', so no roll can change the outcome "
            "and the game master is refused every roll of it; give some band another result",
            "warning",
        )
    ]


def _band_problems(bands: Any, path: str) -> list[Problem]:
    """A band whose min is above its max, and a label used twice (ignoring case), wherever they can be read."""
    problems: list[Problem] = []
    if not isinstance(bands, list):
        return problems
    labels: dict[str, int] = {}
    for number, band in enumerate(bands):
        if not isinstance(band, dict):
            continue
        band_path = f"{path}.bands[{number}]"
        low, high = band.get("min"), band.get("max")
        if isinstance(low, int) and isinstance(high, int) and low > high:  # true and false are refused as ints
            problems.append(Problem(band_path, f"min {low} is above max {high}"))
        label = band.get("label")
        if not isinstance(label, str) or not label.strip():
            continue
        folded = label_key(label)
        if folded in labels:
            message = f"the label '{label}' is already used by bands[{labels[folded]}]"
            problems.append(Problem(f"{band_path}.label", message))
        labels.setdefault(folded, number)
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
        **build_table(raw),
        secret=bool(raw.get("secret", False)),
    )
