"""A character sheet's variables in the world form: bounded numbers, item lists and conditions.

The sheet format is gm's (docs/sheets.md): beside a plain number or text, which stays fixed for the whole
story, a variable may be a bounded number `{"value": 10, "min": 0, "max": 10}` (min and max optional), an
item list `{"items": ["wax", {"name": "blank manifest", "count": 3}]}` or conditions
`{"conditions": {"wounded": false}}`. The engine changes these as the story goes; the world only sets
where they start.

A variable row of such a kind shows its own fields: `-value`, `-min` and `-max` for a bounded number, rows
`-items-N-name` and `-items-N-count` for items, rows `-conditions-N-name` and `-conditions-N-on` (a
checkbox) for conditions. Every part is kept in the draft whatever the kind, so switching a row's kind
back and forth loses nothing typed; only the chosen kind's parts are written. An item whose count is left
empty is written as its plain name (count 1) and one with a count as `{"name", "count"}`, so a file read
into the form is written back as it was.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gm.problems import Problem

from .fields import field_text, one_line

SHEET_KINDS = ("bounded", "items", "conditions")
KIND_LABELS = {
    "number": "number (fixed)",
    "text": "text (fixed)",
    "bounded": "bounded number",
    "items": "items",
    "conditions": "conditions",
}
WHOLE = re.compile(r"^[+-]?\d{1,15}$")
_ROW = re.compile(r"^(items|conditions)-(\d{1,4})-")


@dataclass
class EntryDraft:
    """One item (a name and a count, empty meaning a plain name) or one condition (a name, on or off)."""

    name: str = ""
    count: str = ""
    on: bool = False


def sheet_kind(value: Any) -> str | None:
    """The sheet kind a variable's JSON value has, or None for a plain number or text (or anything odd)."""
    if not isinstance(value, dict):
        return None
    if "items" in value and isinstance(value["items"], list):
        return "items"
    if "conditions" in value and isinstance(value["conditions"], dict):
        return "conditions"
    if "value" in value:
        return "bounded"
    return None


def bounded_parts(value: dict[str, Any]) -> tuple[str, str, str]:
    """A bounded number's value, min and max as field text."""
    return field_text(value.get("value")), field_text(value.get("min")), field_text(value.get("max"))


def items_from_data(value: dict[str, Any]) -> list[EntryDraft]:
    rows = []
    for item in value["items"]:
        if isinstance(item, dict):
            rows.append(EntryDraft(field_text(item.get("name")), field_text(item.get("count"))))
        else:
            rows.append(EntryDraft(field_text(item)))
    return rows


def conditions_from_data(value: dict[str, Any]) -> list[EntryDraft]:
    return [EntryDraft(name, on=state is True) for name, state in value["conditions"].items()]


def entries_from_form(form: Mapping[str, str], prefix: str) -> tuple[list[EntryDraft], list[EntryDraft]]:
    """The item rows and condition rows posted for the variable whose fields start with `prefix`."""
    rows: dict[str, set[int]] = {"items": set(), "conditions": set()}
    for name in form:
        if name.startswith(prefix) and (match := _ROW.match(name[len(prefix) :])):
            rows[match[1]].add(int(match[2]))
    items = [
        EntryDraft(
            one_line(form.get(f"{prefix}items-{n}-name", "")), one_line(form.get(f"{prefix}items-{n}-count", ""))
        )
        for n in sorted(rows["items"])
    ]
    conditions = [
        EntryDraft(one_line(form.get(f"{prefix}conditions-{n}-name", "")), on=f"{prefix}conditions-{n}-on" in form)
        for n in sorted(rows["conditions"])
    ]
    return items, conditions


def _whole(text: str, where: str, found: dict[str, list[Problem]], what: str) -> int | None:
    typed = text.strip().replace("\u2212", "-")
    if WHOLE.match(typed):
        return int(typed)
    found.setdefault(where, []).append(Problem("$", f"{what} is a whole number, found {text!r}"))
    return None


def bounded_data(value: str, minimum: str, maximum: str, where: str, found: dict[str, list[Problem]]) -> dict[str, Any]:
    """A bounded number's JSON; a value or bound that is not a whole number is a problem at its field."""
    data: dict[str, Any] = {}
    number = _whole(value, f"{where}-value", found, "the value") if value.strip() else None
    if not value.strip():
        found.setdefault(f"{where}-value", []).append(Problem("$", "a bounded number needs a value"))
    data["value"] = number if number is not None else value
    for key, text in (("min", minimum), ("max", maximum)):
        if text.strip():
            bound = _whole(text, f"{where}-{key}", found, f"{key} (when given)")
            data[key] = bound if bound is not None else text
    return data


def items_data(rows: list[EntryDraft], where: str, found: dict[str, list[Problem]]) -> dict[str, Any]:
    """An item list's JSON: blank rows dropped; an item needs a name, and a count (when given) of 1 or more."""
    items: list[Any] = []
    for number, row in enumerate(rows):
        at = f"{where}-items-{number}"
        if not row.name.strip() and not row.count.strip():
            continue
        if not row.name.strip():
            found.setdefault(f"{at}-name", []).append(Problem("$", "an item needs a name"))
        if not row.count.strip():
            items.append(row.name)
            continue
        count = _whole(row.count, f"{at}-count", found, "a count")
        if count is not None and count < 1:
            found.setdefault(f"{at}-count", []).append(Problem("$", f"a count is 1 or more, found {count}"))
        items.append({"name": row.name, "count": count if count is not None else row.count})
    return {"items": items}


def conditions_data(rows: list[EntryDraft], where: str, found: dict[str, list[Problem]]) -> dict[str, Any]:
    """Conditions' JSON: unnamed rows that are off dropped; a name used twice is a problem at the second."""
    conditions: dict[str, bool] = {}
    for number, row in enumerate(rows):
        at = f"{where}-conditions-{number}"
        if not row.name.strip():
            if row.on:
                found.setdefault(f"{at}-name", []).append(Problem("$", "a condition needs a name"))
            continue
        if row.name in conditions:
            message = f"the condition '{row.name}' is already in this list"
            found.setdefault(f"{at}-name", []).append(Problem("$", message))
            continue
        conditions[row.name] = row.on
    return {"conditions": conditions}


def sheet_field_ids(where: str, items: int, conditions: int) -> set[str]:
    """The field ids a sheet variable's row shows besides its name and kind."""
    ids = {f"{where}-min", f"{where}-max", f"{where}-items", f"{where}-conditions"}
    for number in range(items):
        ids.update({f"{where}-items-{number}", f"{where}-items-{number}-name", f"{where}-items-{number}-count"})
    for number in range(conditions):
        ids.update({f"{where}-conditions-{number}", f"{where}-conditions-{number}-name"})
        ids.add(f"{where}-conditions-{number}-on")
    return ids


def item_rows(rows: list[EntryDraft]) -> list[int]:
    """The form rows the items of the written list come from (blank rows are not written)."""
    return [number for number, row in enumerate(rows) if row.name.strip() or row.count.strip()]


def condition_rows(rows: list[EntryDraft]) -> dict[str, int]:
    """Which form row holds each condition's name (the first, where a name repeats)."""
    named: dict[str, int] = {}
    for number, row in enumerate(rows):
        named.setdefault(row.name, number)
    return named


def sheet_field_id(where: str, rest: list[str | int], kind: str, variable: Any) -> str:
    """The field a problem under a variable's JSON path (`rest`, the steps after its name) belongs at.

    `variable` is the row's draft (a `VariableDraft`): its item and condition rows place a problem about
    one item or condition next to it.
    """
    if not rest:
        return f"{where}-value" if kind in {"number", "text", "bounded"} else where
    head = rest[0]
    if head in {"value", "min", "max"}:
        return f"{where}-{head}"
    written = item_rows(variable.items)
    if head == "items" and len(rest) >= 2 and isinstance(rest[1], int) and rest[1] < len(written):
        tail = f"-{rest[2]}" if len(rest) >= 3 and rest[2] in {"name", "count"} else ""
        return f"{where}-items-{written[rest[1]]}{tail}"
    if head == "conditions" and len(rest) >= 2:
        row = condition_rows(variable.conditions).get(str(rest[1]))
        return f"{where}-conditions-{row}-name" if row is not None else f"{where}-conditions"
    return f"{where}-{head}" if head in {"items", "conditions"} else where
