"""dice.json read and checked: every problem at once, then the `Rules` built from it.

Errors: anything the schema refuses, duplicate keys, bad notation, a successes check without `hit`
or with constants or subtracted dice, `min` above `max`, repeated band labels (compared trimmed,
case-folded and in Unicode's composed form), and an `absolute` check with a reachable value in no
band. Warnings: bands no value can reach, stretches of values in no band of an `over`/`under` check
(a roll landing there is void), and a check whose bands all give one result (no roll of it can ever
be made: the game master is refused every time). The table rules' own
problems are `gm.rules.tabletop`'s; band coverage is `gm.rules.coverage`'s. No I/O beyond reading
the schema shipped in the package.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gm import dice
from gm.errors import ProblemsError
from gm.problems import Problem, SchemaCheck, document_order, shipped_schema, text_problems
from gm.rules._labels import label_key
from gm.rules.checks import Band, Check, Rules
from gm.rules.coverage import coverage_problems
from gm.rules.effects import effect_problems, parse_effects
from gm.rules.tabletop import build_table, table_problems


@cache
def dice_schema() -> dict[str, Any]:
    """The JSON Schema of dice.json, shipped in the package (the editor uses it too)."""
    return shipped_schema("dice.schema.json")


@cache
def _schema() -> SchemaCheck:
    return SchemaCheck(dice_schema())


def parse_rules(data: Any, source: str = "dice.json") -> Rules:
    """Validate parsed dice.json data and build `Rules`, or raise `ProblemsError` listing every error."""
    problems = validate(data)
    if any(problem.severity == "error" for problem in problems):
        raise ProblemsError(source, problems)
    return _build(data)


def validate(data: Any) -> list[Problem]:
    """Every problem in parsed dice.json data: schema errors first, then what a schema cannot say."""
    problems = _schema().problems(data) + text_problems(data)
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
        problems.extend(effect_problems(band, band_path))
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
        Band(
            band["label"],
            band["result"],
            band.get("critical", False),
            band.get("min"),
            band.get("max"),
            parse_effects(band.get("effects")),
        )
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
