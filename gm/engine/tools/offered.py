"""The tools offered to the game master in a world: their JSON schemas, and a check of each one's arguments.

Both are a pure function of the world, so they are built once per World object and shared by
every round of it (gm.world._cache); `gm.engine.tools.running` runs the calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from gm.dice.parser import MAX_CONSTANT, MAX_LENGTH
from gm.engine._sheets import MAX_CHANGES as MAX_SHEET_CHANGES
from gm.engine.referee import MAX_NARRATION
from gm.engine.tools._argcheck import Check, compile_schema
from gm.engine.tools.tabletop import roll_check_properties
from gm.errors import ModelRetry
from gm.problems import describe, json_depth, text_problems
from gm.world._cache import PerWorld
from gm.world.calendar import advance_time_schema
from gm.world.definition import World

# Bounds on what the model sends, so nothing it writes can overflow a column or fill a round with junk:
# a target as large as a notation's constants, a reason of a short sentence, a roll id an integer column holds.
MAX_TARGET = MAX_CONSTANT
MAX_REASON = 300
MAX_ROLL_ID = 2**31 - 1
MAX_SHEET_AMOUNT = 1_000_000  # as a bounded number's own bound (gm.world.sheet)
MAX_DEPTH = 8  # nesting of a call's arguments: as deep as narrate's, with room


def _bounded_reason(parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters with its `reason` held to the bound every tool's reason has."""
    return {**parameters, "reason": {**parameters["reason"], "maxLength": MAX_REASON}}


@dataclass(frozen=True, slots=True)
class ArgumentCheck:
    """What a tool's arguments must be: jsonschema's validator of its schema, and the same schema compiled
    into a quick yes for valid arguments (`gm.engine.tools._argcheck`; None where the schema is beyond it, or lets
    arguments nest more than MAX_DEPTH deep, so a yes also says the arguments are not too deep)."""

    validator: Draft202012Validator
    accepts: Check | None


@dataclass(frozen=True, slots=True)
class _Offered:
    """The tools offered in a world, and a check of each one's arguments, built once per World."""

    tools: tuple[dict[str, Any], ...]
    checks: dict[str, ArgumentCheck]


def _offer(world: World) -> _Offered:
    tools = tuple(_tool_schemas(world))
    checks = {}
    for tool in tools:
        parameters = tool["function"]["parameters"]
        accepts = compile_schema(parameters, deepest=MAX_DEPTH)
        checks[tool["function"]["name"]] = ArgumentCheck(Draft202012Validator(parameters), accepts)
    return _Offered(tools, checks)


_offered = PerWorld(_offer)


def argument_checks(world: World) -> dict[str, ArgumentCheck]:
    """A check of each offered tool's arguments, by tool name (shared, like the schemas)."""
    return _offered(world).checks


def tool_schemas(world: World) -> list[dict[str, Any]]:
    """The function tools offered for this world; roll_check only where the world has checks.

    Built once per World object and shared by every round of it: read them, never change them.
    """
    return list(_offered(world).tools)


def _tool_schemas(world: World) -> list[dict[str, Any]]:
    names = [character.name for character in world.characters]
    tools = []
    if world.rules is not None and world.rules.checks:
        tools.append(
            _function(
                "roll_check",
                "Roll one of the world's checks for a character when an attempt's outcome is uncertain "
                "(a roll that could only end one way at the target given is refused, and nothing is rolled). "
                "Returns the roll id and its band (label, result, critical), never the number. "
                "Rolling the same check for the same character again this round returns the first roll.",
                roll_check_properties(world, names, MAX_TARGET, MAX_REASON),
                ["check", "character", "reason"],
            )
        )
    tools.append(
        _function(
            "roll_dice",
            "Roll plain dice (such as damage or a random table) in dice notation like 2d6+1. Returns the total.",
            {
                "notation": {
                    "type": "string",
                    "maxLength": MAX_LENGTH,
                    "description": "Dice notation: NdM, dM, d%, kh/kl/dh/dl, + and -.",
                },
                "reason": {"type": "string", "maxLength": MAX_REASON},
            },
            ["notation", "reason"],
        )
    )
    if world.rules is not None and any(check.secret for check in world.rules.checks):
        tools.append(_reveal_roll_schema())
    if world.calendar is not None:
        tools.append(
            _function(
                "advance_time",
                "Move the story's clock on when time passes in the story (a wait, a journey, a night's sleep); "
                "not for the moments an action takes. Time never goes backwards. Returns the new date and time.",
                _bounded_reason(advance_time_schema()),
                ["amount", "unit", "reason"],
            )
        )
    if world.sheet_changes:
        tools.append(change_sheet_schema(world))
    tools.append(
        _function(
            "narrate",
            "End the round: the narration the player reads, and one outcome per character whose fate was at stake. "
            "A character rolled for with roll_check must have an outcome naming that roll, with the roll's result.",
            {
                "narration": {"type": "string", "maxLength": MAX_NARRATION},
                "outcomes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "character": {"type": "string", "enum": names},
                            "result": {"type": "string", "enum": ["succeeded", "partial", "failed"]},
                            "roll": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": MAX_ROLL_ID,
                                "description": "The roll id that settled this outcome.",
                            },
                        },
                        "required": ["character", "result"],
                        "additionalProperties": False,
                    },
                },
            },
            ["narration", "outcomes"],
        )
    )
    return tools


def change_sheet_schema(world: World) -> dict[str, Any]:
    """change_sheet, offered only in a world where some character's sheet can change (gm.world.sheet)."""
    names = [character.name for character in world.characters]
    change = {
        "type": "object",
        "properties": {
            "character": {"type": "string", "enum": names},
            "variable": {"type": "string", "maxLength": 40, "description": "The sheet's variable, such as hp or kit."},
            "action": {
                "type": "string",
                "enum": ["set", "adjust", "add", "remove", "on", "off"],
                "description": "A number: set or adjust. Items: add or remove. Conditions: on or off.",
            },
            "amount": {
                "type": "integer",
                "minimum": -MAX_SHEET_AMOUNT,
                "maximum": MAX_SHEET_AMOUNT,
                "description": "A chosen amount (a price, a gift): the value to set, the amount to adjust by "
                "(negative takes away), or how many items (default 1). Refused if it takes a number past its bounds.",
            },
            "roll": {
                "type": "string",
                "maxLength": MAX_LENGTH,
                "description": "For adjust, instead of amount: dice notation rolled by the engine for a random "
                "amount, such as -1d6 (damage) or 2d4 (healing); clamped at the bounds.",
            },
            "item": {"type": "string", "maxLength": 60, "description": "The item added or removed."},
            "condition": {"type": "string", "maxLength": 40, "description": "The condition turned on or off."},
            "reason": {"type": "string", "maxLength": MAX_REASON, "description": "Why, in a few words."},
        },
        "required": ["character", "variable", "action", "reason"],
        "additionalProperties": False,
    }
    return _function(
        "change_sheet",
        "Change the characters' sheets when the story changes them (damage, a price paid, an item found or "
        "lost, a condition taken or shaken off). Every change is checked; all the call's changes are made or "
        "none. Returns each change made and the sheets now. Tell every change in the narration, and narrate "
        "no change to a sheet that you did not make here.",
        {"changes": {"type": "array", "items": change, "description": f"At most {MAX_SHEET_CHANGES} changes."}},
        ["changes"],
    )


def _reveal_roll_schema() -> dict[str, Any]:
    """reveal_roll, offered only in a world with a secret check (gm.integrity.secret)."""
    return _function(
        "reveal_roll",
        "Show the player a secret check's roll, which they cannot see until you reveal it or the story ends "
        "(when the truth comes out in the story). Returns the roll's band.",
        {
            "roll": {"type": "integer", "minimum": 1, "maximum": MAX_ROLL_ID, "description": "The secret roll's id."},
            "reason": {"type": "string", "maxLength": MAX_REASON, "description": "Why it comes to light now."},
        },
        ["roll", "reason"],
    )


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def read_arguments(name: str, raw: Any, check: ArgumentCheck) -> dict[str, Any]:
    """A tool call's arguments as a dict, checked against its schema; `ModelRetry` says what is wrong with them."""
    too_deep = ModelRetry(f"the arguments of {name} are nested more than {MAX_DEPTH} deep; send a flat JSON object")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw, parse_constant=_no_constant) if raw.strip() else {}
        except json.JSONDecodeError as error:
            raise ModelRetry(
                f"the arguments of {name} are not valid JSON ({error.msg} at column {error.colno}); send a JSON object"
            ) from None
        except RecursionError:
            raise too_deep from None
    if not isinstance(raw, dict):
        raise ModelRetry(f"the arguments of {name} must be a JSON object")
    # Valid, every text storable, and so no deeper than MAX_DEPTH: nothing to say. (The quick check
    # descends no deeper than its schema, so it may look before the depth is known.)
    if check.accepts is not None and check.accepts(raw):
        return raw
    if json_depth(raw) > MAX_DEPTH:  # before anything walks it recursively (validation, messages)
        raise too_deep
    problems = sorted(check.validator.iter_errors(raw), key=lambda error: list(error.absolute_path))
    if problems:
        first = problems[0]
        where = ".".join(str(part) for part in first.absolute_path) or "arguments"
        raise ModelRetry(f"{name}: {where}: {describe(first)}")
    for problem in text_problems(raw):  # a NUL, which PostgreSQL cannot store: refused the same on SQLite
        raise ModelRetry(f"{name}: {problem.path.removeprefix('$.')}: {problem.message}")
    return raw


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON, though Python's parser takes them."""
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)
