"""A character's sheet: the variables of world.json a story can change, and changes to them. Pure, no I/O.

In world.json a character's `variables` hold two sorts of value. A plain number or text is fixed for the
whole story. Three shapes are the character's *sheet*, which the game master changes with the
`change_sheet` tool (docs/sheets.md):

- a bounded number, `{"value": 10, "min": 0, "max": 10}` (min and max optional; whole numbers);
- items, `{"items": ["wax", {"name": "blank manifest", "count": 3}]}` (a name alone is one of it);
- conditions, `{"conditions": {"wounded": false, "soaked": true}}` (named states, on or off).

A story's sheets (`Sheets`) are plain JSON, `{character: {variable: entry}}`, with only the changeable
variables, each entry in its normal form: a bounded number as written, items as
`{"items": [{"name": ..., "count": ...}]}` (each counted), conditions as written. So a story can store them
as they are, and the same form is valid in world.json.

A `Change` is one change of one variable, written as it was applied (`applied`): its `before` and `after`
are the variable's number, the item's count, or the condition's state. `apply` checks a change against
the sheets and returns the new sheets and the applied change, or raises `SheetRefused` with one sentence
the model can act on and a `kind` (unknown_character, unknown_variable, fixed, wrong_type, out_of_bounds,
not_held, unknown_condition, too_many).

Bounds (the decision, docs/decisions/sheet-bounds.md): a *chosen* amount (`source` "chosen": a price, a gift,
a value set) that would take a number past its bounds is refused, since the game master can choose
another; a *rolled* amount (`source` "rolled" or "effect": dice decided it) is clamped at the bound, and
the change says so (`clamped`), since dice cannot be asked again and an arrow that would take 9 hit points
from a character with 3 leaves 0.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from gm.errors import SheetRefused
from gm.problems import Problem, member_path

Kind = Literal["number", "items", "conditions"]
Action = Literal["set", "adjust", "add", "remove", "on", "off"]
Source = Literal["chosen", "rolled", "effect"]
Sheets = dict[str, dict[str, dict[str, Any]]]

MAX_VALUE = 1_000_000  # a bounded number, as for a check's modifier: it always fits its column and a roll's value
MAX_COUNT = 1_000_000  # of one item
MAX_HELD = 50  # different items in one variable
MAX_ITEM_NAME = 60
ACTIONS: dict[Kind, tuple[Action, ...]] = {
    "number": ("set", "adjust"),
    "items": ("add", "remove"),
    "conditions": ("on", "off"),
}


@dataclass(frozen=True, slots=True)
class Change:
    """One change of one character's variable.

    `amount` is the number set or added (negative to take away) for a number, the count added or removed
    for items, None for a condition; `item` names the item, `condition` the condition. `source` says
    where the amount came from: chosen by the game master, rolled by the engine at its asking (`roll`
    is that roll's id) or rolled for a band's effect. `before`/`after` (set by `apply`) are the
    variable's number, the item's count or the condition's state; `clamped` says a rolled amount was cut
    at a bound.
    """

    character: str
    variable: str
    action: Action
    amount: int | None = None
    item: str | None = None
    condition: str | None = None
    reason: str = ""
    source: Source = "chosen"
    roll: int | None = None
    before: int | bool | None = None
    after: int | bool | None = None
    clamped: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Change:
        names = cls.__dataclass_fields__
        return cls(**{name: value for name, value in data.items() if name in names})

    def text(self) -> str:
        """The change in a few words, such as "Mara's hp 7 -> 4 (-3, rolled)"."""
        who = f"{self.character}'s {self.variable}"
        how = "" if self.source == "chosen" else f", {self.source}"
        how += ", clamped at its bound" if self.clamped else ""
        if self.action in ("set", "adjust"):
            by = "" if self.action == "set" else f" ({self.amount:+d}{how})"
            return f"{who} {self.before} -> {self.after}{by}"
        if self.action in ("add", "remove"):
            sign = "+" if self.action == "add" else "-"
            return f"{who}: {sign}{self.amount} {self.item} (now {self.after})"
        return f"{who}: {self.condition} {'on' if self.action == 'on' else 'off'}"


def kind_of(value: Any) -> Kind | None:
    """The sort of sheet entry a world.json variable is, or None for a fixed value (a plain number or text)."""
    if isinstance(value, dict):
        if "value" in value:
            return "number"
        if "items" in value:
            return "items"
        if "conditions" in value:
            return "conditions"
    return None


def start_value(value: Any) -> Any:
    """What a variable holds when a story starts: a bounded number's value, else the value itself."""
    return value["value"] if kind_of(value) == "number" else value


def normal(value: Any) -> dict[str, Any]:
    """A changeable variable of world.json in its normal form (items each with a count)."""
    kind = kind_of(value)
    if kind == "items":
        return {
            "items": [{"name": item, "count": 1} if isinstance(item, str) else dict(item) for item in value["items"]]
        }
    if kind is None:
        raise ValueError(f"{value!r} is not a sheet entry")
    return copy.deepcopy(dict(value))


def start_sheets(characters: list[dict[str, Any]] | Any) -> Sheets:
    """The sheets a story starts with, from world.json's raw characters: each character with a changeable
    variable, and only those variables. Empty: the world's sheet cannot change."""
    sheets: Sheets = {}
    for raw in characters if isinstance(characters, list) else []:
        if not isinstance(raw, dict) or not isinstance(raw.get("variables"), dict):
            continue
        entries = {name: normal(value) for name, value in raw["variables"].items() if kind_of(value) is not None}
        if entries:
            sheets[str(raw["name"])] = entries
    return sheets


def number_of(entry: Mapping[str, Any]) -> int:
    return int(entry["value"])


def sheet_problems(characters: list[tuple[int, dict[str, Any]]]) -> list[Problem]:
    """What world.json's schema cannot say of the sheets: a bounded number outside its bounds or with min above
    max, an item or condition named twice (ignoring case) or with spaces at either end."""
    problems: list[Problem] = []
    for index, raw in characters:
        variables = raw.get("variables")
        for variable, value in (variables if isinstance(variables, dict) else {}).items():
            path = member_path(f"$.characters[{index}].variables", variable)
            problems.extend(_entry_problems(path, variable, value))
    return problems


def _entry_problems(path: str, variable: str, value: Any) -> list[Problem]:
    kind = kind_of(value)
    found: list[Problem] = []
    if kind == "number" and all(_whole(value.get(key)) for key in ("value", "min", "max") if key in value):
        low, high, now = value.get("min"), value.get("max"), value["value"]
        if low is not None and high is not None and low > high:
            found.append(Problem(f"{path}.min", f"'{variable}' has min {low} above its max {high}"))
        elif (low is not None and now < low) or (high is not None and now > high):
            found.append(Problem(f"{path}.value", f"'{variable}' starts at {now}, outside {_bounds(value)}"))
    elif kind == "items" and isinstance(value.get("items"), list):
        names = [item if isinstance(item, str) else item.get("name") for item in value["items"]]
        found += _name_problems(f"{path}.items", variable, [name for name in names if isinstance(name, str)], "item")
    elif kind == "conditions" and isinstance(value.get("conditions"), dict):
        found += _name_problems(f"{path}.conditions", variable, list(value["conditions"]), "condition")
    return found


def _name_problems(path: str, variable: str, names: list[str], what: str) -> list[Problem]:
    found: list[Problem] = []
    seen: set[str] = set()
    for name in names:
        if name != name.strip() or not name.strip():
            found.append(Problem(path, f"the {what} name {name!r} in '{variable}' must not start or end with spaces"))
        folded = name.strip().casefold()
        if folded in seen:
            found.append(Problem(path, f"'{variable}' names the {what} '{name}' twice (names ignore case)"))
        seen.add(folded)
    return found


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounds(entry: Mapping[str, Any]) -> str:
    low, high = entry.get("min"), entry.get("max")
    if low is not None and high is not None:
        return f"its bounds {low} to {high}"
    return f"its least value {low}" if low is not None else f"its greatest value {high}"


def apply(sheets: Sheets, change: Change, world_variables: Mapping[str, Mapping[str, Any]]) -> tuple[Sheets, Change]:
    """`sheets` with `change` applied (a new object; `sheets` is left as it was) and the change as applied.

    `world_variables` is every character's variables as world.json has them (fixed ones included), by name,
    so a change of a fixed variable is told apart from one of a variable the character lacks. The
    character is matched ignoring case; the change comes back with the names as the sheet spells them.
    Raises `SheetRefused`.
    """
    character = _find(list(world_variables), change.character)
    if character is None:
        known = ", ".join(world_variables) or "none"
        raise SheetRefused(
            "unknown_character", f"there is no character '{change.character}'; the characters are {known}"
        )
    entries = sheets.get(character, {})
    variable = _find(list(world_variables[character]), change.variable)
    if variable is None:
        changeable = ", ".join(entries) or "none"
        raise SheetRefused(
            "unknown_variable",
            f"{character} has no variable '{change.variable}'; the ones that can change are: {changeable}",
        )
    if variable not in entries:
        raise SheetRefused("fixed", f"{character}'s '{variable}' is fixed for the story and cannot change")
    entry = entries[variable]
    kind = kind_of(entry)
    assert kind is not None
    change = replace(change, character=character, variable=variable)
    if change.action not in ACTIONS[kind]:
        wanted = " or ".join(ACTIONS[kind])
        raise SheetRefused(
            "wrong_type",
            f"{character}'s '{variable}' is {_KIND_WORDS[kind]}, so its change must be {wanted}, not {change.action}",
        )
    if kind == "number":
        new_entry, change = _number(entry, change)
    elif kind == "items":
        new_entry, change = _items(entry, change)
    else:
        new_entry, change = _condition(entry, change)
    changed = {name: dict(value) for name, value in sheets.items()}
    changed.setdefault(character, {})[variable] = new_entry
    return changed, change


_KIND_WORDS: dict[Kind, str] = {"number": "a number", "items": "a list of items", "conditions": "a set of conditions"}


def _find(names: list[str], wanted: str) -> str | None:
    folded = wanted.strip().casefold()
    return next((name for name in names if name.casefold() == folded), None)


def _number(entry: dict[str, Any], change: Change) -> tuple[dict[str, Any], Change]:
    who = f"{change.character}'s '{change.variable}'"
    if change.amount is None:
        raise SheetRefused("wrong_type", f"a change of {who} needs a whole-number amount")
    before = number_of(entry)
    after = change.amount if change.action == "set" else before + change.amount
    low, high = entry.get("min"), entry.get("max")
    clamped = False
    if (low is not None and after < low) or (high is not None and after > high):
        if change.source == "chosen":
            raise SheetRefused(
                "out_of_bounds",
                f"{who} is {before} and must stay within {_bounds(entry)}, so it cannot become {after}; "
                f"choose an amount that keeps it there",
            )
        after, clamped = max(low, after) if low is not None else after, True
        after = min(high, after) if high is not None else after
    if abs(after) > MAX_VALUE:
        raise SheetRefused("out_of_bounds", f"{who} cannot go beyond {MAX_VALUE:,} either way")
    return {**entry, "value": after}, replace(change, before=before, after=after, clamped=clamped)


def _items(entry: dict[str, Any], change: Change) -> tuple[dict[str, Any], Change]:
    who = change.character
    count = change.amount if change.amount is not None else 1
    name = (change.item or "").strip()
    if not name:
        raise SheetRefused("wrong_type", f"a change of {who}'s '{change.variable}' must name the item")
    if count < 1:
        raise SheetRefused("out_of_bounds", f"the count of '{name}' to {change.action} must be at least 1")
    items = [dict(item) for item in entry["items"]]
    held = next((item for item in items if item["name"].casefold() == name.casefold()), None)
    before = held["count"] if held else 0
    if change.action == "remove":
        if held is None:
            names = ", ".join(f"{item['name']} ({item['count']})" for item in items) or "nothing"
            raise SheetRefused("not_held", f"{who} holds no '{name}' in '{change.variable}'; {who} holds {names}")
        if count > before:
            raise SheetRefused("not_held", f"{who} holds {before} '{held['name']}', so {count} cannot be removed")
        held["count"] -= count
        items = [item for item in items if item["count"] > 0]
    else:
        if held is None:
            if len(items) >= MAX_HELD:
                raise SheetRefused("too_many", f"{who}'s '{change.variable}' holds {MAX_HELD} kinds of item already")
            if len(name) > MAX_ITEM_NAME:
                raise SheetRefused("too_many", f"an item's name is at most {MAX_ITEM_NAME} characters")
            held = {"name": name, "count": 0}
            items.append(held)
        if held["count"] + count > MAX_COUNT:
            raise SheetRefused("out_of_bounds", f"{who} can hold at most {MAX_COUNT:,} of '{held['name']}'")
        held["count"] += count
    after = before + count if change.action == "add" else before - count
    return {"items": items}, replace(change, item=held["name"], amount=count, before=before, after=after)


def _condition(entry: dict[str, Any], change: Change) -> tuple[dict[str, Any], Change]:
    states = dict(entry["conditions"])
    name = _find(list(states), change.condition or "")
    if name is None:
        known = ", ".join(states)
        raise SheetRefused(
            "unknown_condition",
            f"{change.character}'s '{change.variable}' has no condition '{change.condition or ''}'; it has {known}",
        )
    before, after = states[name], change.action == "on"
    states[name] = after
    return {"conditions": states}, replace(change, condition=name, amount=None, before=before, after=after)


def value_text(entry: Mapping[str, Any]) -> str:
    """An entry as the game master reads it: "7 (0 to 10)", "wax, blank manifest x3", "wounded" or "none"."""
    kind = kind_of(entry)
    if kind == "number":
        low, high = entry.get("min"), entry.get("max")
        bounds = (
            "" if low is None and high is None else f" ({'' if low is None else low} to {'' if high is None else high})"
        )
        return f"{entry['value']}{bounds.replace('( to', '(up to').replace(' to )', ' or more)')}"
    if kind == "items":
        held = [item["name"] if item["count"] == 1 else f"{item['name']} x{item['count']}" for item in entry["items"]]
        return ", ".join(held) or "nothing"
    on = [name for name, state in entry["conditions"].items() if state]
    return (
        ", ".join(on) + " (of " + ", ".join(entry["conditions"]) + ")"
        if on
        else "none (of " + ", ".join(entry["conditions"]) + ")"
    )
