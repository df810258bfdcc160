"""`gm`: the command line, a thin layer over the library.

Exit codes: 0 success; 1 when `gm check` finds errors, when `gm model check` finds gm cannot play on
the endpoint, or when a round of `gm play` could not be played; 2 bad input, with one `error:` line on
stderr; 3 an internal failure, also one line. Never a traceback, and never a control character from a
model or a world file (`gm._text.visible`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from gm import __version__, dice
from gm._text import visible
from gm.errors import CheckRollError, GmError, UsageError
from gm.rules.chances import CheckOdds, check_odds, describe_targets, uncertain_targets
from gm.rules.checks import Check, Edge, opposed_modifier
from gm.world.definition import modifier_for
from gm.world.loading import load_rules, load_world


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; for `command` "roll" or "odds", those two alone, so that the dice
    commands do not import the engine, the store and the web server they never use (a second of start-up)."""
    parser = _Parser(prog="gm", description="A game master whose dice are rolled by code.")
    parser.add_argument("--version", action="version", version=f"gm {__version__}")
    subcommands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    roll = subcommands.add_parser("roll", help="roll dice notation such as 4d6kh3+2")
    roll.add_argument("notation", nargs="+", help="dice notation; spaces around + and - are fine")
    roll.add_argument("--seed", type=int, help="a seed for a reproducible roll (not for play)")
    roll.add_argument("--hit", type=int, help="read the roll as successes: count kept dice showing HIT or more")
    roll.add_argument("--json", action="store_true", help="print the itemised roll as JSON")
    roll.set_defaults(run=run_roll)

    odds = subcommands.add_parser(
        "odds",
        help="exact odds of notation, or of each band of a check",
        description="gm odds NOTATION [--hit H] [--modifier M] | "
        "gm odds DICE_JSON_OR_WORLD CHECK [--target T] [--character NAME [--opponent NAME] | --modifier M] "
        "[--edge advantage|disadvantage]",
    )
    odds.add_argument("subject", nargs="+", help="dice notation, or a dice.json file or world folder and a check key")
    odds.add_argument("--hit", type=int, help="odds of the number of successes: kept dice showing HIT or more")
    odds.add_argument("--target", type=int, help="the target of an over/under check")
    odds.add_argument("--modifier", type=int, help="a modifier added to the roll (default 0)")
    odds.add_argument("--character", help="a check rolled for this character of a world: its variable is the modifier")
    odds.add_argument("--opponent", help="an opposed check's opponent, a character of the world, with --character")
    odds.add_argument(
        "--edge",
        choices=["advantage", "disadvantage"],
        help="only this edge's odds (by default a check with edge dice shows no edge, then each edge)",
    )
    odds.add_argument(
        "--json",
        action="store_true",
        help="print min, max, mean and each value's probability as JSON (decimals; values under 1e-9 left out)",
    )
    odds.add_argument("--exact", action="store_true", help="with --json: every probability as an exact fraction")
    odds.set_defaults(run=run_odds)
    if command in ("roll", "odds"):
        return parser

    from gm.cli._audit import add_audit_subcommands
    from gm.cli._check import add_check_subcommand
    from gm.cli._edit import add_edit_subcommand
    from gm.cli._model import add_model_subcommands
    from gm.cli._serve import add_serve_subcommand
    from gm.cli._story import add_story_subcommands

    add_check_subcommand(subcommands)
    add_story_subcommands(subcommands)
    add_audit_subcommands(subcommands)
    add_serve_subcommand(subcommands)
    add_edit_subcommand(subcommands)
    add_model_subcommands(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code."""
    try:
        given = list(sys.argv[1:] if argv is None else argv)
        arguments = build_parser(given[0] if given else None).parse_args(given)
        code: int = arguments.run(arguments)
        return code
    except GmError as error:  # bad input, a broken world file, a model that is not configured...
        return _fail(str(error), 2)
    except KeyboardInterrupt:
        return _fail("interrupted", 2)
    except BrokenPipeError:
        return 0
    except Exception as error:  # the promise is one line, never a traceback, even for our own bugs
        return _fail(f"internal error ({type(error).__name__}: {error}); please report it", 3)


def _fail(message: str, code: int) -> int:
    # An error may quote what was typed or read (an id, a world file): never a control character raw.
    print(f"error: {visible(message)}", file=sys.stderr)
    return code


def run_roll(arguments: argparse.Namespace) -> int:
    result = dice.roll(" ".join(arguments.notation), seed=arguments.seed, hit=arguments.hit)
    print(json.dumps(result.to_json()) if arguments.json else str(result))
    return 0


def run_odds(arguments: argparse.Namespace) -> int:
    subject: list[str] = arguments.subject
    if arguments.exact and not arguments.json:
        raise UsageError("--exact chooses how --json prints probabilities: add --json")
    if len(subject) == 2 and _looks_like_path(subject[0]):
        if arguments.hit is not None:
            raise UsageError("--hit belongs to notation; a check takes its hit from dice.json")
        check, name, modifier = _check_for_odds(Path(subject[0]), subject[1], arguments)
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
