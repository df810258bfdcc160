"""A world's definition: world.json (setting and characters) checked together with its dice.json, with no I/O.

The definitions are plain parsed JSON, so a story can keep copies of them (in the database, say) and
rebuild its `World` later without the folder it came from; `gm.world.loading` reads them from disk.

Validation returns every problem at once, each with its file and JSON path. Errors in world.json:
anything the schema refuses, a character name with spaces at either end or a line break, two
characters with one name (ignoring case), a number variable that is not finite, no character with
the role `player`, and what `gm.world.calendar.calendar_problems` finds in a calendar. Across the two
files: a check's modifier variable that a character has but that is not a whole number from
-1,000,000 to 1,000,000 (an error at that character's variable), and an `absolute` check that, with
some character's modifier added, can roll a value no band holds (an error naming check, characters
and values). A check whose modifier variable no character has is a warning: it can never be rolled.
A world without dice.json has no checks, which is fine.

A variable may be part of the character's sheet, which a story changes (gm.world.sheet: a bounded number,
items, conditions); `gm.world.sheet.sheet_problems` finds what the schema cannot say of them. A check's
modifier may name a bounded number: its start value, its least and its greatest are each tried for gaps,
and a roll reads the value the sheet holds at that moment (`modifier_for` with the story's sheets).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from types import MappingProxyType
from typing import Any, Literal

from gm.errors import CharacterCannotRoll, ProblemsError, UnknownCharacter, UnknownCheck
from gm.problems import Problem, SchemaCheck, document_order, member_path, shipped_schema, text_problems
from gm.rules.checks import Check, Rules
from gm.rules.coverage import coverage_problems
from gm.rules.validation import parse_rules
from gm.rules.validation import validate as validate_dice
from gm.world.calendar import Calendar, calendar_from_data, calendar_problems
from gm.world.sheet import Sheets, kind_of, sheet_problems, start_sheets, start_value

MAX_MODIFIER = 1_000_000  # as for a notation's constants and a target, so a roll's value always fits its column
WORLD_FILE = "world.json"
DICE_FILE = "dice.json"

Role = Literal["player", "npc"]
Value = int | float | str | dict[str, Any]  # a dict: a sheet entry (gm.world.sheet)


@dataclass(frozen=True, slots=True)
class Character:
    """One character of a world: who plays them, what the game master knows of them, and their variables."""

    name: str
    role: Role
    description: str = ""
    variables: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def is_player(self) -> bool:
        return self.role == "player"


@dataclass(frozen=True, slots=True)
class World:
    """A validated world: its setting, the game master's instructions, its characters and its dice rules.

    `rules` is None for a world without dice.json. `world_data` and `dice_data` are copies of the
    definitions it was built from, for a story to store and rebuild it from.
    """

    title: str
    premise: str
    instructions: str
    characters: tuple[Character, ...]
    rules: Rules | None
    world_data: dict[str, Any]
    dice_data: dict[str, Any] | None
    calendar: Calendar | None = None  # world.json's calendar; None for a world without one (and no time tool)

    @property
    def players(self) -> tuple[Character, ...]:
        """The characters people play, in the order world.json lists them (never empty)."""
        return tuple(character for character in self.characters if character.is_player)

    @property
    def npcs(self) -> tuple[Character, ...]:
        """The characters the game master plays."""
        return tuple(character for character in self.characters if not character.is_player)

    def character(self, name: str) -> Character:
        """The character called `name`, ignoring case and spaces around it, or `UnknownCharacter`."""
        wanted = name.strip().casefold()
        for character in self.characters:
            if character.name.casefold() == wanted:
                return character
        known = ", ".join(character.name for character in self.characters)
        raise UnknownCharacter(f"there is no character '{name}'; the characters are: {known}")

    def modifier_for(self, check: Check, character: Character, sheets: Sheets | None = None) -> int:
        """What `character` adds to a roll of `check`; see the module's `modifier_for`."""
        return modifier_for(check, character, sheets)

    @property
    def start_sheets(self) -> Sheets:
        """The sheets a story in this world starts with (gm.world.sheet); empty when nothing can change."""
        return start_sheets(self.world_data["characters"])

    @property
    def sheet_changes(self) -> bool:
        """Whether some character's sheet can change in a story (then change_sheet is offered)."""
        return any(kind_of(value) is not None for c in self.characters for value in c.variables.values())

    def check(self, key: str) -> Check:
        """The check `key` of dice.json, or `UnknownCheck` listing the checks there are."""
        if self.rules is None:
            raise UnknownCheck(f"there is no check '{key}'; this world has no dice.json, so it has no checks")
        return self.rules[key]


def modifier_for(check: Check, character: Character, sheets: Sheets | None = None) -> int:
    """What `character` adds to a roll of `check`: its modifier variable (0 when the check has none).

    A bounded number adds the value `sheets` (a story's sheets now) hold for it, else its start value.
    Raises `CharacterCannotRoll` when the character lacks that variable or it is not a whole number.
    """
    if check.modifier is None:
        return 0
    given = character.variables.get(check.modifier)
    if kind_of(given) == "number":
        entry = (sheets or {}).get(character.name, {}).get(check.modifier)
        given = start_value(given) if entry is None else entry.get("value")
    value = whole_number(given)
    if value is None:
        raise CharacterCannotRoll(check.key, character.name, check.modifier, given)
    return value


@cache
def world_schema() -> dict[str, Any]:
    """The JSON Schema of world.json, shipped in the package (the editor uses it too)."""
    return shipped_schema("world.schema.json")


@cache
def _schema() -> SchemaCheck:
    return SchemaCheck(world_schema())


def world_from_data(world_data: Any, dice_data: Any | None = None, source: str = "world") -> World:
    """Validate parsed world.json (and dice.json, None if the world has none) and build the `World`.

    Raises `ProblemsError` naming `source` and listing every error in both.
    """
    problems = validate_world(world_data, dice_data)
    if any(problem.severity == "error" for problem in problems):
        raise ProblemsError(source, problems)
    world_data = copy.deepcopy(world_data)
    dice_data = copy.deepcopy(dice_data)
    characters = tuple(
        Character(
            raw["name"],
            raw["role"],
            raw.get("description", ""),
            MappingProxyType(dict(raw.get("variables", {}))),
        )
        for raw in world_data["characters"]
    )
    return World(
        world_data["title"],
        world_data["premise"],
        world_data.get("instructions", ""),
        characters,
        None if dice_data is None else parse_rules(dice_data, DICE_FILE),
        world_data,
        dice_data,
        calendar_from_data(world_data["calendar"]) if "calendar" in world_data else None,
    )


def validate_world(world_data: Any, dice_data: Any | None = None) -> list[Problem]:
    """Every problem in parsed world.json and dice.json (None: the world has none), world.json's first."""
    world_problems = _schema().problems(world_data) + text_problems(world_data)
    characters = _raw_characters(world_data)
    world_problems.extend(_character_problems(characters))
    world_problems.extend(sheet_problems(characters))
    if isinstance(world_data, dict):
        world_problems.extend(calendar_problems(world_data.get("calendar")))
    dice_problems: list[Problem] = []
    if dice_data is not None:
        dice_problems = validate_dice(dice_data)
        world_problems.extend(_modifier_type_problems(characters, dice_data))
        usable = _usable_checks(dice_data, dice_problems)
        dice_problems.extend(_modifier_problems(characters, usable))
        dice_problems.extend(_effect_problems(characters, usable))
    return [replace(problem, file=WORLD_FILE) for problem in sorted(world_problems, key=document_order)] + [
        replace(problem, file=DICE_FILE) for problem in sorted(dice_problems, key=document_order)
    ]


def _raw_characters(world_data: Any) -> list[tuple[int, dict[str, Any]]]:
    """The characters of world.json that are objects, with their index; the schema reports the rest."""
    if not isinstance(world_data, dict) or not isinstance(world_data.get("characters"), list):
        return []
    return [(index, raw) for index, raw in enumerate(world_data["characters"]) if isinstance(raw, dict)]


def _variables(raw: dict[str, Any]) -> dict[str, Any]:
    variables = raw.get("variables")
    return variables if isinstance(variables, dict) else {}


def _shown_name(index: int, raw: dict[str, Any]) -> str:
    name = raw.get("name")
    return name if isinstance(name, str) and name.strip() else f"characters[{index}]"


def _character_problems(characters: list[tuple[int, dict[str, Any]]]) -> list[Problem]:
    """Names, numbers and the player: what the schema cannot say about the characters."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, raw in characters:
        path = f"$.characters[{index}]"
        name = raw.get("name")
        if isinstance(name, str) and name:
            if name != name.strip() or not name.isprintable():
                message = f"the name {name!r} must not start or end with spaces or hold line breaks or tabs"
                problems.append(Problem(f"{path}.name", message))
            folded = name.strip().casefold()
            if folded in seen:
                message = f"the name '{name}' is already used by characters[{seen[folded]}] (names ignore case)"
                problems.append(Problem(f"{path}.name", message))
            seen.setdefault(folded, index)
        for variable, value in _variables(raw).items():
            if isinstance(value, float) and not math.isfinite(value):
                problems.append(Problem(member_path(f"{path}.variables", variable), f"{value} is not a number"))
    if characters and not any(raw.get("role") == "player" for _, raw in characters):
        message = "no character has the role 'player'; a story needs someone to play"
        problems.append(Problem("$.characters", message))
    return problems


def _usable_checks(dice_data: Any, problems: list[Problem]) -> list[tuple[int, Check]]:
    """The checks of dice.json that have no error of their own, built, with their index."""
    if not isinstance(dice_data, dict) or not isinstance(dice_data.get("checks"), list):
        return []
    if any(problem.severity == "error" and not problem.path.startswith("$.checks[") for problem in problems):
        return []
    broken = {
        problem.path.removeprefix("$.checks[").split("]")[0] for problem in problems if problem.severity == "error"
    }
    usable = []
    for index, raw in enumerate(dice_data["checks"]):
        if str(index) not in broken:
            usable.append((index, parse_rules({"checks": [raw]}).checks[0]))
    return usable


def _modifier_type_problems(characters: list[tuple[int, dict[str, Any]]], dice_data: Any) -> list[Problem]:
    """World.json errors: a variable some check adds to a roll, held by a character as something not whole.

    Read from the raw checks, so that a check with mistakes elsewhere still has its modifier looked at.
    """
    raw_checks = dice_data.get("checks") if isinstance(dice_data, dict) else None
    users: dict[str, list[str]] = {}
    for raw in raw_checks if isinstance(raw_checks, list) else []:
        if isinstance(raw, dict) and isinstance(raw.get("key"), str) and isinstance(raw.get("modifier"), str):
            users.setdefault(raw["modifier"], []).append(f"'{raw['key']}'")
    problems: list[Problem] = []
    for index, raw in characters:
        for variable, value in _variables(raw).items():
            finite = not isinstance(value, float) or math.isfinite(value)  # else already "not a number"
            whole = whole_number(start_value(value))
            if variable in users and finite and (whole is None or abs(whole) > MAX_MODIFIER):
                named = _and(users[variable])
                wanted = "a whole number" if whole is None else f"from {-MAX_MODIFIER:,} to {MAX_MODIFIER:,}"
                message = (
                    f"'{variable}' is the modifier of check{'s' if len(users[variable]) > 1 else ''} {named},"
                    f" so it must be {wanted}, not {value!r}"
                )
                problems.append(Problem(member_path(f"$.characters[{index}].variables", variable), message))
    return problems


def _modifier_problems(characters: list[tuple[int, dict[str, Any]]], checks: list[tuple[int, Check]]) -> list[Problem]:
    """Dice.json findings per check: no character to roll it for, or gaps some character's modifier opens."""
    problems: list[Problem] = []
    for index, check in checks:
        if check.modifier is None:
            continue
        path = f"$.checks[{index}]"
        holders = [(number, raw) for number, raw in characters if check.modifier in _variables(raw)]
        if not holders:
            message = f"no character has the variable '{check.modifier}', so check '{check.key}' can never be rolled"
            problems.append(Problem(f"{path}.modifier", message, "warning"))
        by_modifier: dict[int, list[str]] = {}
        for number, raw in holders:
            for modifier in _modifiers_held(_variables(raw)[check.modifier]):
                if modifier:  # modifier 0 was tried by dice.json's own check; not whole is reported above
                    by_modifier.setdefault(modifier, []).append(_shown_name(number, raw))
        for modifier, names in by_modifier.items():
            who = f" for {_and(names)} ({check.modifier} {modifier:+d})"
            found = coverage_problems(check, path, modifier, who)
            # Only gaps of absolute checks are errors. Warnings are dropped: a band out of one character's
            # reach is no mistake, and an over/under check's gaps depend on the target (a roll there is void).
            problems.extend(problem for problem in found if problem.severity == "error")
    return problems


def _effect_problems(characters: list[tuple[int, dict[str, Any]]], checks: list[tuple[int, Check]]) -> list[Problem]:
    """A band effect on a variable no character holds as a bounded number: it can never change anything (a warning)."""
    numbers = {name for _, raw in characters for name, value in _variables(raw).items() if kind_of(value) == "number"}
    problems = []
    for index, check in checks:
        for number, band in enumerate(check.bands):
            for place, effect in enumerate(band.effects):
                if effect.variable not in numbers:
                    message = (
                        f"no character has '{effect.variable}' as a bounded number, so this effect changes nothing"
                    )
                    path = f"$.checks[{index}].bands[{number}].effects[{place}].variable"
                    problems.append(Problem(path, message, "warning"))
    return problems


def _modifiers_held(value: Any) -> list[int]:
    """The modifiers a variable can add: a fixed number's one; a bounded number's start, least and greatest."""
    if kind_of(value) != "number":
        whole = whole_number(value)
        return [] if whole is None else [whole]
    held = [value.get(key) for key in ("value", "min", "max")]
    return sorted({number for number in map(whole_number, held) if number is not None and abs(number) <= MAX_MODIFIER})


def whole_number(value: object) -> int | None:
    """`value` as a whole number, if it is one (3.0 counts, as JSON Schema's integer does; true does not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
