"""The world section's form: world.json (setting and characters) as fields, and back.

As with the Dice form, a draft keeps what the author typed. A character's variables are rows of
name, kind and value: the kind says what the value is meant to be, so that "3" meant as text stays
text and "three" meant as a number is an error at that field rather than silently becoming text.
The kinds a story changes (bounded numbers, items, conditions) have fields of their own, described in
`editor.sheet_form`. Blank rows are dropped. Fields are named like `characters-0-variables-2-value`;
buttons send `action` values such as `add-variable:0` or `down-character:1`. The calendar's fields
are `editor.calendar_form`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.exceptions import HTTPException

from gm.problems import Problem

from .calendar_form import CalendarDraft, apply_calendar_action, calendar_data, calendar_from_data, calendar_from_form
from .fields import change, field_text, index_in, one_line, positions, text_area
from .sheet_form import (
    SHEET_KINDS,
    EntryDraft,
    bounded_data,
    bounded_parts,
    conditions_data,
    conditions_from_data,
    entries_from_form,
    items_data,
    items_from_data,
    sheet_kind,
)

ROLES = ("player", "npc")
KINDS = ("number", "text", *SHEET_KINDS)
NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_CHARACTER_NAME = re.compile(r"^characters-(\d{1,4})-")
_VARIABLE_NAME = re.compile(r"^characters-(\d{1,4})-variables-(\d{1,4})-")


@dataclass
class VariableDraft:
    """One variable row as typed."""

    name: str = ""
    kind: str = "number"
    value: str = ""
    minimum: str = ""
    maximum: str = ""
    items: list[EntryDraft] = field(default_factory=list)
    conditions: list[EntryDraft] = field(default_factory=list)


@dataclass
class CharacterDraft:
    """One character as typed."""

    name: str = ""
    role: str = "npc"
    description: str = ""
    variables: list[VariableDraft] = field(default_factory=list)


@dataclass
class WorldDraft:
    """A whole world.json as typed; `schema` keeps a `$schema` member the file had."""

    title: str = ""
    premise: str = ""
    instructions: str = ""
    characters: list[CharacterDraft] = field(default_factory=lambda: [CharacterDraft(role="player")])
    schema: str = ""
    calendar: CalendarDraft = field(default_factory=CalendarDraft)


def draft_from_data(data: Any) -> WorldDraft:
    """A draft showing parsed world.json `data`; what the form cannot hold is left out."""
    if not isinstance(data, dict):
        return WorldDraft()
    schema = data.get("$schema")
    draft = WorldDraft(
        title=field_text(data.get("title")),
        premise=field_text(data.get("premise")),
        instructions=field_text(data.get("instructions")),
        characters=[],
        schema=schema if isinstance(schema, str) else "",
        calendar=calendar_from_data(data.get("calendar")),
    )
    characters = data.get("characters")
    for raw in characters if isinstance(characters, list) else []:
        if not isinstance(raw, dict):
            continue
        variables = raw.get("variables")
        draft.characters.append(
            CharacterDraft(
                name=field_text(raw.get("name")),
                role=field_text(raw.get("role", "npc")),
                description=field_text(raw.get("description")),
                variables=[
                    _variable_from_data(name, value)
                    for name, value in (variables.items() if isinstance(variables, dict) else ())
                ],
            )
        )
    return draft


def draft_from_form(form: Mapping[str, str]) -> WorldDraft:
    """The draft a posted form describes. Rows are taken in the order of their numbers, gaps closed up."""
    numbers = sorted({int(match[1]) for name in form if (match := _CHARACTER_NAME.match(name))})
    rows: dict[int, set[int]] = {}
    for name in form:
        if match := _VARIABLE_NAME.match(name):
            rows.setdefault(int(match[1]), set()).add(int(match[2]))
    draft = WorldDraft(
        title=one_line(form.get("title", "")),
        premise=text_area(form.get("premise", "")),
        instructions=text_area(form.get("instructions", "")),
        characters=[],
        schema=form.get("schema", ""),
        calendar=calendar_from_form(form),
    )
    for number in numbers:
        prefix = f"characters-{number}-"
        variables = [_variable_from_form(form, f"{prefix}variables-{row}-") for row in sorted(rows.get(number, ()))]
        draft.characters.append(
            CharacterDraft(
                one_line(form.get(prefix + "name", "")),
                one_line(form.get(prefix + "role", "npc")),
                text_area(form.get(prefix + "description", "")),
                variables,
            )
        )
    return draft


def world_data(draft: WorldDraft) -> tuple[dict[str, Any], dict[str, list[Problem]]]:
    """world.json's data for `draft`, and the problems only the form can see, by field id.

    Those are a variable row with a value and no name, a name used by two rows, and a value of kind
    number that is not a number; they keep the form from being saved like any other error.
    """
    data: dict[str, Any] = {"$schema": draft.schema} if draft.schema else {}
    data.update({"title": draft.title, "premise": draft.premise})
    if draft.instructions:
        data["instructions"] = draft.instructions
    found: dict[str, list[Problem]] = {}
    characters = []
    for number, character in enumerate(draft.characters):
        raw: dict[str, Any] = {"name": character.name, "role": character.role}
        if character.description:
            raw["description"] = character.description
        variables: dict[str, Any] = {}
        for row, variable in enumerate(character.variables):
            where = f"characters-{number}-variables-{row}"
            if not variable.name and _blank(variable):
                continue
            if not variable.name:
                found.setdefault(f"{where}-name", []).append(Problem("$", "a variable needs a name"))
                continue
            if variable.name in variables:
                message = f"the variable '{variable.name}' is already in this character's list"
                found.setdefault(f"{where}-name", []).append(Problem("$", message))
                continue
            variables[variable.name] = _data_of(variable, where, found)
        if variables:
            raw["variables"] = variables
        characters.append(raw)
    data["characters"] = characters
    if draft.calendar.on:
        data["calendar"] = calendar_data(draft.calendar, found)
    return data, found


def variable_rows(draft: WorldDraft) -> list[dict[str, int]]:
    """For each character, which row holds each variable name (the first, where a name repeats)."""
    rows = []
    for character in draft.characters:
        named: dict[str, int] = {}
        for row, variable in enumerate(character.variables):
            named.setdefault(variable.name, row)
        rows.append(named)
    return rows


def _variable_from_data(name: str, value: Any) -> VariableDraft:
    kind = sheet_kind(value)
    if kind == "bounded":
        return VariableDraft(name, kind, *bounded_parts(value))
    if kind == "items":
        return VariableDraft(name, kind, items=items_from_data(value))
    if kind == "conditions":
        return VariableDraft(name, kind, conditions=conditions_from_data(value))
    return VariableDraft(name, "text" if isinstance(value, str) else "number", field_text(value))


def _variable_from_form(form: Mapping[str, str], prefix: str) -> VariableDraft:
    items, conditions = entries_from_form(form, prefix)
    return VariableDraft(
        one_line(form.get(f"{prefix}name", "")),
        one_line(form.get(f"{prefix}kind", "number")),
        one_line(form.get(f"{prefix}value", "")),
        one_line(form.get(f"{prefix}min", "")),
        one_line(form.get(f"{prefix}max", "")),
        items,
        conditions,
    )


def _blank(variable: VariableDraft) -> bool:
    """Whether the row holds nothing of its kind (a nameless blank row is dropped)."""
    if variable.kind == "items":
        return not any(row.name.strip() or row.count.strip() for row in variable.items)
    if variable.kind == "conditions":
        return not any(row.name.strip() or row.on for row in variable.conditions)
    if variable.kind == "bounded":
        return not (variable.value.strip() or variable.minimum.strip() or variable.maximum.strip())
    return not variable.value.strip()


def _data_of(variable: VariableDraft, where: str, found: dict[str, list[Problem]]) -> Any:
    """The variable's JSON value by its kind; what the form alone finds wrong goes into `found` by field id."""
    if variable.kind == "bounded":
        return bounded_data(variable.value, variable.minimum, variable.maximum, where, found)
    if variable.kind == "items":
        return items_data(variable.items, where, found)
    if variable.kind == "conditions":
        return conditions_data(variable.conditions, where, found)
    value, problem = _value(variable)
    if problem:
        found.setdefault(f"{where}-value", []).append(Problem("$", problem))
    return value


def _value(variable: VariableDraft) -> tuple[int | float | str, str | None]:
    if variable.kind == "text":
        return variable.value, None
    typed = variable.value.strip().replace("\u2212", "-")
    if not NUMBER.match(typed):
        return variable.value, f"expected a number, found {variable.value!r} (or choose the kind 'text')"
    if re.fullmatch(r"[+-]?\d+", typed):
        return int(typed), None
    number = float(typed)
    if not math.isfinite(number):
        return variable.value, f"{typed} is too large a number"
    return number, None


def apply_action(draft: WorldDraft, action: str) -> None:
    """Add, remove or move a character or variable as a button's `action` value says; a 400 for any other."""
    verb, _, where = action.partition(":")
    if apply_calendar_action(draft.calendar, verb, where):
        return
    numbers = positions(where)
    characters = draft.characters
    if verb == "add-character" and not numbers:
        characters.append(CharacterDraft(role="npc" if characters else "player"))
    elif verb in {"remove-character", "up-character", "down-character"} and len(numbers) == 1:
        change(characters, verb.split("-")[0], index_in(characters, numbers[0]))
    elif verb == "add-variable" and len(numbers) == 1:
        characters[index_in(characters, numbers[0])].variables.append(VariableDraft())
    elif verb == "remove-variable" and len(numbers) == 2:
        variables = characters[index_in(characters, numbers[0])].variables
        change(variables, "remove", index_in(variables, numbers[1]))
    elif verb in {"add-item", "add-condition"} and len(numbers) == 2:
        variables = characters[index_in(characters, numbers[0])].variables
        variable = variables[index_in(variables, numbers[1])]
        (variable.items if verb == "add-item" else variable.conditions).append(EntryDraft())
    elif verb in {"remove-item", "remove-condition"} and len(numbers) == 3:
        variables = characters[index_in(characters, numbers[0])].variables
        variable = variables[index_in(variables, numbers[1])]
        rows = variable.items if verb == "remove-item" else variable.conditions
        change(rows, "remove", index_in(rows, numbers[2]))
    else:
        raise HTTPException(400, f"The editor does not know the action {action!r}.")
