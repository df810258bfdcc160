"""Which rolls of the sample worlds' checks are certain, and what finding out costs.

What it measures
----------------
For every sample world in `worlds/`, every check and every character who can be rolled for it (has
its modifier variable, when it names one):

- an `absolute` check is one combination (it takes no target);
- an `over` or `under` check is tried at every whole target from the lowest value its dice read
  minus 20 to the highest plus 20 (1d20: -19 to 40; d%: -19 to 120; 5d10 successes: -20 to 25).

Each combination is certain when `gm.rules.chances.certain` says every roll gives one result (what
`roll_check` refuses); every answer is also checked against the exact odds of each band
(`gm.rules.chances.check_odds`: certain exactly when one result has all the chance), and the script
fails if any disagrees. The table gives, per world, the combinations tried and how many are
certain, and per check and character the targets at which a roll becomes certain, with the result
every roll would give there.

Then the cost: the median time of one `certain()` call against one `check_odds()` call (exact odds
of every band) for the same check and target, measured side by side in one run, 1d20 to 100d1000.

How to run
----------
From the project root, with the virtualenv active::

    python bench/certain_targets.py
    python bench/certain_targets.py --repeats 5     # fewer timing rounds (100d1000's odds take a second)

The output is Markdown.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gm.errors import CharacterCannotRoll
from gm.rules.chances import Certain, certain, check_odds
from gm.rules.checks import Check
from gm.rules.validation import parse_rules
from gm.world.loading import load_world

WORLDS = Path(__file__).resolve().parent.parent / "worlds"
MARGIN = 20  # targets tried beyond what the dice can read, on each side

VERBS = {"succeeded": "succeeds", "partial": "partial", "failed": "fails", None: "void"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="timing rounds per check (default 15)")
    arguments = parser.parse_args()
    print(f"# Certain rolls in the sample worlds\n\nPython {sys.version.split()[0]}\n")
    summary, details = [], []
    for folder in sorted(path for path in WORLDS.iterdir() if (path / "world.json").exists()):
        tried, settled, rows = world_figures(folder)
        summary.append(f"| {folder.name} | {tried} | {settled} | {tried - settled} |")
        details += rows
    print("| world | combinations tried | certain | can go either way |")
    print("|---|---:|---:|---:|")
    print("\n".join(summary))
    print("\n| world | check | compare | character | modifier | targets tried | certain | certain at targets |")
    print("|---|---|---|---|---:|---|---:|---|")
    print("\n".join(details))
    print()
    timing(arguments.repeats)
    return 0


def world_figures(folder: Path) -> tuple[int, int, list[str]]:
    """Combinations tried and certain in one world, and a table row per check and character."""
    world = load_world(folder)
    if world.rules is None:
        return 0, 0, [f"| {folder.name} | (no dice.json: no checks) | | | | | | |"]
    tried = settled = 0
    rows = []
    for check in world.rules.checks:
        for character in world.characters:
            try:
                modifier = world.modifier_for(check, character)
            except CharacterCannotRoll:
                continue
            targets = targets_tried(check)
            found = [(target, certain(check, target, modifier)) for target in targets]
            for target, answer in found:
                agree_with_odds(check, target, modifier, answer)
            count = sum(1 for _, answer in found if answer is not None)
            tried, settled = tried + len(found), settled + count
            span = "none (absolute)" if targets == [None] else f"{targets[0]} to {targets[-1]} ({len(targets)})"
            rows.append(
                f"| {folder.name} | {check.key} | {check.compare} | {character.name} | {modifier:+d} | {span} "
                f"| {count} | {where_certain(found)} |"
            )
    return tried, settled, rows


def targets_tried(check: Check) -> list[int | None]:
    if not check.needs_target:
        return [None]
    low, high = check.reachable
    return list(range(low - MARGIN, high + MARGIN + 1))


def where_certain(found: list[tuple[int | None, Certain | None]]) -> str:
    """Runs of certain targets with the result every roll gives, such as "≤ 1 succeeds; ≥ 26 fails"."""
    if found == [(None, None)]:
        return "never"
    if len(found) == 1:
        answer = found[0][1]
        return f"always: {VERBS[answer.result]}" if answer is not None else "never"
    runs: list[tuple[int, int, str]] = []
    for target, answer in found:
        assert target is not None
        if answer is None:
            continue
        verb = VERBS[answer.result]
        if runs and runs[-1][1] == target - 1 and runs[-1][2] == verb:
            runs[-1] = (runs[-1][0], target, verb)
        else:
            runs.append((target, target, verb))
    first, last = found[0][0], found[-1][0]
    parts = []
    for start, end, verb in runs:
        if start == first:
            parts.append(f"≤ {end}: {verb}")
        elif end == last:
            parts.append(f"≥ {start}: {verb}")
        else:
            parts.append(f"{start} to {end}: {verb}")
    return "; ".join(parts) or "never"


def agree_with_odds(check: Check, target: int | None, modifier: int, answer: Certain | None) -> None:
    """Fail loudly unless `certain` agrees with the exact odds of every band."""
    odds = check_odds(check, target, modifier)
    results = {chance.band.result for chance in odds.bands if chance.probability > 0}
    outcomes: set[str | None] = set(results) | ({None} if odds.void > 0 else set())
    expected = next(iter(outcomes)) if len(outcomes) == 1 else "either way"
    got = "either way" if answer is None else answer.result
    if expected != got:
        raise SystemExit(f"{check.key} at target {target}, modifier {modifier}: odds say {expected}, certain {got}")


def timing(repeats: int) -> None:
    print("| check | target | `certain()` median | `check_odds()` median | odds / certain |")
    print("|---|---:|---:|---:|---:|")
    cases = [
        ("1d20", "over", None, 12),
        ("5d10", "over", 7, 12),
        ("d%", "under", None, 45),
        ("100d1000", "over", None, 200_000),
    ]
    for notation, compare, hit, target in cases:
        check = one_check(notation, compare, hit)
        fast = median_seconds(lambda check=check, target=target: certain(check, target, 0), 20_000, repeats)
        slow = median_seconds(lambda check=check, target=target: check_odds(check, target, 0), 1, repeats)
        what = f"{notation} successes" if hit else notation
        print(f"| {what} {compare} | {target:,} | {fast * 1e6:.1f} µs | {show(slow)} | {slow / fast:,.0f}x |")


def one_check(notation: str, compare: str, hit: int | None) -> Check:
    raw = {
        "key": "c",
        "name": "C",
        "use": "x",
        "dice": notation,
        "compare": compare,
        "bands": [
            {"label": "Failure", "max": -1, "result": "failed"},
            {"label": "Partial", "min": 0, "max": 3, "result": "partial"},
            {"label": "Success", "min": 4, "result": "succeeded"},
        ],
    }
    if hit is not None:
        raw.update(reading="successes", hit=hit)
    return parse_rules({"checks": [raw]})["c"]


def median_seconds(work: Callable[[], object], calls: int, repeats: int) -> float:
    """The median over `repeats` rounds of the time per call, each round making `calls` calls."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            work()
        times.append((time.perf_counter() - started) / calls)
    return statistics.median(times)


def show(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} µs"


if __name__ == "__main__":
    sys.exit(main())
