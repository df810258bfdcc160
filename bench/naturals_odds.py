"""Figures: exact odds of a d20 check with and without naturals (tier stepping), and with each edge,
each checked against a brute-force count over every face.

What it computes
----------------
The harbour-heist sample's `attempt` check (1d20 + nerve over a target; a natural 20 steps the band
up one, a natural 1 down one; advantage 2d20kh1, disadvantage 2d20kl1), for Odile (nerve 2) at the
targets given. For each target and edge it prints each band's exact chance from `gm.rules.chances.check_odds`
(which counts through `gm.dice.joint`) with the naturals and without them (the same check with its
naturals removed), and then checks both against a brute-force enumeration: every combination of
faces rolled with `gm.dice.roll`, its kept faces read, its band found and stepped by hand here
(a separate implementation of the rule in docs/dice-json.md). Any disagreement stops the script with exit 1.

How to run
----------
From the project root, with the virtualenv active::

    python bench/naturals_odds.py                 # targets 8, 14 and 20
    python bench/naturals_odds.py --targets 11 25

The output is Markdown, ready to paste into docs/performance.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from fractions import Fraction
from itertools import product
from pathlib import Path

from gm import dice
from gm.rules.chances import check_odds
from gm.rules.checks import Check, Edge
from gm.world.loading import load_world

HEIST = Path(__file__).parent.parent / "worlds" / "harbour-heist"
NOTATION: dict[Edge | None, str] = {None: "1d20", "advantage": "2d20kh1", "disadvantage": "2d20kl1"}


def brute_force(check: Check, notation: str, target: int, modifier: int, naturals: bool) -> dict[str, Fraction]:
    """Each band's chance by rolling every combination of faces and stepping by hand."""
    bands = list(check.bands)  # listed from the lowest values to the highest in this sample
    counts = [0] * len(bands)
    expression = dice.parse(notation)
    shapes = [range(1, term.sides + 1) for term in expression.dice for _ in range(term.count)]
    total = 0
    for faces in product(*shapes):
        rolled = dice.roll(expression, dice.GivenFaces(faces))
        kept = [
            f for part in rolled.parts if isinstance(part, dice.DiceRoll) for f, k in zip(part.faces, part.kept) if k
        ]
        value = rolled.total + modifier - target
        place = next(i for i, band in enumerate(bands) if band.holds(value))
        if naturals:
            place += (20 in kept) - (1 in kept)
            place = min(max(place, 0), len(bands) - 1)
        counts[place] += 1
        total += 1
    return {band.label: Fraction(count, total) for band, count in zip(bands, counts)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[8, 14, 20])
    arguments = parser.parse_args()
    world = load_world(HEIST)
    check = world.check("attempt")
    plain = dataclasses.replace(check, naturals=())
    modifier = world.modifier_for(check, world.character("Odile"))
    print(f"# {check.name} ({check.key}): {check.dice.text} + nerve {modifier:+d} over a target\n")
    print("| target | edge | band | without naturals | with naturals | brute force agrees |")
    print("| ---: | --- | --- | ---: | ---: | --- |")
    failed = False
    for target in arguments.targets:
        for edge, notation in NOTATION.items():
            stepped = {c.band.label: c.probability for c in check_odds(check, target, modifier, edge=edge).bands}
            unstepped = {c.band.label: c.probability for c in check_odds(plain, target, modifier, edge=edge).bands}
            agrees = stepped == brute_force(check, notation, target, modifier, True) and unstepped == brute_force(
                check, notation, target, modifier, False
            )
            failed |= not agrees
            for label in stepped:
                print(
                    f"| {target} | {edge or 'none'} ({notation}) | {label} | {unstepped[label]} "
                    f"({float(unstepped[label]):.2%}) | {stepped[label]} ({float(stepped[label]):.2%}) | "
                    f"{'yes' if agrees else 'NO'} |"
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
