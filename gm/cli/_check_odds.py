"""`gm odds WORLD CHECK`: the exact chance of each band of a world's check, for a character and a target."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gm._text import visible
from gm.errors import CheckRollError, UsageError
from gm.rules._targets import describe_targets
from gm.rules.chances import CheckOdds, check_odds, uncertain_targets
from gm.rules.checks import Check, Edge, opposed_modifier
from gm.world.definition import modifier_for
from gm.world.loading import load_rules, load_world


def run_check_odds(path: Path, key: str, arguments: argparse.Namespace) -> int:
    """Print (or with --json, write as JSON) each band's chance of check `key` of the world or dice.json at `path`."""
    if arguments.hit is not None:
        raise UsageError("--hit belongs to notation; a check takes its hit from dice.json")
    check, name, modifier = _check_for_odds(path, key, arguments)
    edges: list[Edge | None] = [arguments.edge] if arguments.edge else [None, *check.edges]
    try:
        results = [check_odds(check, arguments.target, modifier, edge=edge) for edge in edges]
    except CheckRollError as error:
        raise UsageError(str(error)) from None
    opponent = {"opponent": arguments.opponent} if check.opposed else {}
    if arguments.json:
        data = {**results[0].to_json(arguments.exact), "character": name, **opponent}
        if len(results) > 1:
            data["edges"] = {str(result.edge): result.to_json(arguments.exact) for result in results[1:]}
        print(json.dumps(data, indent=2))
    else:
        # names and labels from dice.json
        print(visible("\n".join(render_check_odds(result, name, arguments.opponent) for result in results)))
    return 0


def _check_for_odds(path: Path, key: str, arguments: argparse.Namespace) -> tuple[Check, str | None, int]:
    """The check `key`, the character named by --character (None without it) and the modifier to add."""
    try:
        if arguments.character is None:
            if arguments.opponent is not None:
                raise UsageError("--opponent goes with --character: gm odds WORLD CHECK --character A --opponent B")
            return load_rules(path)[key], None, arguments.modifier or 0
        if arguments.modifier is not None:
            raise UsageError("give --character (its variable is the modifier) or --modifier, not both")
        world = load_world(path)
        check, character = world.check(key), world.character(arguments.character)
        modifier = modifier_for(check, character)
        if not check.opposed:
            if arguments.opponent is not None:
                raise UsageError(f"check '{check.key}' is not opposed, so it takes no --opponent")
            return check, character.name, modifier
        if arguments.opponent is None:
            raise UsageError(f"check '{check.key}' is opposed: name the character who resists with --opponent NAME")
        opponent = world.character(arguments.opponent)
        arguments.opponent = opponent.name
    except KeyError as error:
        raise UsageError(str(error.args[0])) from None
    return check, character.name, opposed_modifier(modifier, modifier_for(check, opponent))


def render_check_odds(result: CheckOdds, character: str | None = None, opponent: str | None = None) -> str:
    check = result.check
    who = f" for {character}" if character else ""
    if opponent:
        who += f" against {opponent}"
    reading = f" successes (hit {check.hit}+)" if check.reading == "successes" else ""
    modifier = f" {result.modifier:+d}" if result.modifier else ""
    against = f", {check.compare} target {result.target}" if result.target is not None else ""
    edge = f" with {result.edge}" if result.edge else ""
    naturals = ", naturals applied" if check.naturals else ""
    how = "exact" if result.dice.exact else f"estimated from {result.dice.samples:,} rolls"
    notation = check.rolled(result.edge).text
    lines = [f"{check.name} ({check.key}){who}{edge}: {notation}{reading}{modifier}{against} ({how}{naturals})"]
    width = max(len(chance.band.label) for chance in result.bands)
    for chance in result.bands:
        critical = ", critical" if chance.band.critical else ""
        lines.append(
            f"  {chance.band.label:<{width}}  {float(chance.probability) * 100:6.2f}%  "
            f"{chance.band.result}{critical}  ({chance.probability})"
        )
    if result.void:
        lines.append(f"  {'(void: no band)':<{width}}  {float(result.void) * 100:6.2f}%  ({result.void})")
    if result.certain is not None:
        # Exact odds show it too, but an estimate may miss a rare band: this comes from the dice's bounds.
        every = result.certain.every_roll(named=False)
        lines.append(f"  certain: {every}; the game master cannot roll it{_either_way(result)}")
    return "\n".join(lines)


def _either_way(result: CheckOdds) -> str:
    """Where a certain over/under check could go either way for the same modifier, in words."""
    if not result.check.needs_target:
        return ""
    targets = uncertain_targets(result.check, result.modifier, result.edge)
    return f" (targets {describe_targets(targets)} can go either way)" if targets else " at any target"
