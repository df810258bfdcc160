"""`gm roll` and `gm odds`: dice notation rolled, and exact odds of notation or of a check's bands.

This module imports the dice engine and the rules' odds, nothing more: the commands a player or a
world author runs in a loop answer at once. `gm odds WORLD CHECK` reads the world from disk, and only
then imports the world's loading (with its JSON Schema validator).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gm import dice
from gm.errors import UsageError


def run_roll(arguments: argparse.Namespace) -> int:
    result = dice.roll(" ".join(arguments.notation), seed=arguments.seed, hit=arguments.hit)
    print(json.dumps(result.to_json()) if arguments.json else str(result))
    return 0


def run_odds(arguments: argparse.Namespace) -> int:
    subject: list[str] = arguments.subject
    if arguments.exact and not arguments.json:
        raise UsageError("--exact chooses how --json prints probabilities: add --json")
    if len(subject) == 2 and _looks_like_path(subject[0]):
        from gm.cli._check_odds import run_check_odds  # a check's odds read a world: its loading is imported then

        return run_check_odds(Path(subject[0]), subject[1], arguments)
    if arguments.target is not None:
        raise UsageError("--target belongs to a check: gm odds DICE_JSON_OR_WORLD CHECK --target T")
    if arguments.character is not None:
        raise UsageError("--character belongs to a check: gm odds WORLD CHECK --character NAME")
    distribution = dice.odds(" ".join(subject), hit=arguments.hit).shifted(arguments.modifier or 0)
    print(
        json.dumps(distribution.to_json(arguments.exact), indent=2)
        if arguments.json
        else render_odds(" ".join(subject), distribution)
    )
    return 0


def _looks_like_path(text: str) -> bool:
    return text.endswith(".json") or "/" in text or Path(text).exists()


BAR_WIDTH = 40
MAX_ROWS = 24


def render_odds(notation: str, distribution: dice.Odds) -> str:
    """A small histogram; wide ranges are grouped so it stays about 24 rows tall."""
    what = "successes" if distribution.hit is not None else "total"
    how = (
        "exact"
        if distribution.exact
        else f"estimated from {distribution.samples:,} rolls, exact odds would take too long"
    )
    lines = [
        f"{notation}: {what} {distribution.lowest} to {distribution.highest}, "
        f"mean {float(distribution.mean):.2f} ({how})"
    ]
    low, high = _shown_range(distribution)
    if (low, high) != (distribution.lowest, distribution.highest):
        lines.append(f"  (showing {low} to {high}; the rest together is under 0.01%)")
    step = -(-(high - low + 1) // MAX_ROWS)
    rows = []
    for start in range(low, high + 1, step):
        end = min(start + step - 1, high)
        rows.append((start, end, distribution.chance(start, end)))
    tallest = max(chance for _, _, chance in rows)
    width = max(len(str(distribution.lowest)), len(str(distribution.highest)))
    for start, end, chance in rows:
        label = f"{start:>{width}}" if step == 1 else f"{start:>{width}}..{end:<{width}}"
        bar = "\u2588" * round(BAR_WIDTH * chance / tallest) if tallest else ""
        lines.append(f"  {label}  {float(chance) * 100:6.2f}%  {bar}")
    return "\n".join(lines)


def _shown_range(distribution: dice.Odds) -> tuple[int, int]:
    """The values worth a row: wide ranges lose tails holding under 0.005% each."""
    if len(distribution.counts) <= MAX_ROWS:
        return distribution.lowest, distribution.highest
    tail = distribution.denominator // 20_000
    running, low = 0, 0
    while running + distribution.counts[low] <= tail:
        running += distribution.counts[low]
        low += 1
    running, high = 0, len(distribution.counts) - 1
    while running + distribution.counts[high] <= tail:
        running += distribution.counts[high]
        high -= 1
    return distribution.lowest + low, distribution.lowest + high
