"""Validating a form with `gm check`'s own rules, and putting each problem next to the field it is about.

A problem's JSON path (`$.checks[0].bands[2].max`) becomes a field id (`checks-0-bands-2-max`), the
name of the form field it is about; a path with no field of its own (`$.checks[0].bands`, a whole
check) lands on the nearest enclosing block. A form is checked together with the world's other file,
as `gm check WORLD` does, so a modifier that opens a gap for some character is found. Problems the
other file has on its own are shown as a notice and do not stop a save; problems this form causes
there (a check's modifier held as text by some character, a character's modifier opening a gap in a
check) are placed in this form and do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from gm.problems import Problem
from gm.rules.validation import validate
from gm.world.definition import DICE_FILE, WORLD_FILE, validate_world

from .calendar_form import calendar_field_ids
from .dice_form import BAND_FIELDS, CHECK_FIELDS, NATURAL_FIELDS, DiceDraft, dice_data, effects_data
from .sheet_form import sheet_field_id, sheet_field_ids
from .world_form import WorldDraft, variable_rows, world_data

_STEP = re.compile(r"\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\.([^.\[]*)")
FORM = "form"  # the id of the form as a whole: problems about the file itself


@dataclass
class Findings:
    """A form's problems by field id, and `notices`: the other file's own problems, which do not block a save."""

    by_field: dict[str, list[Problem]] = field(default_factory=dict)
    notices: list[Problem] = field(default_factory=list)

    def add(self, field_id: str, problem: Problem) -> None:
        self.by_field.setdefault(field_id, []).append(problem)

    def at(self, field_id: str) -> list[Problem]:
        """The problems placed at `field_id`, errors first."""
        return sorted(self.by_field.get(field_id, []), key=lambda problem: problem.severity != "error")

    @property
    def errors(self) -> int:
        return sum(problem.severity == "error" for problems in self.by_field.values() for problem in problems)

    @property
    def warnings(self) -> int:
        return sum(problem.severity == "warning" for problems in self.by_field.values() for problem in problems)


def steps(path: str) -> list[str | int]:
    """The steps of a JSON path: member names and list indices."""
    found: list[str | int] = []
    for step in _STEP.finditer(path.removeprefix("$")):
        if step[1] is not None:
            found.append(int(step[1]))
        elif step[2] is not None:
            found.append(re.sub(r"\\(.)", r"\1", step[2]))
        else:
            found.append(step[3])
    return found


def dice_field_ids(draft: DiceDraft) -> set[str]:
    """Every field id the Dice form shows for `draft`."""
    ids = {FORM, "checks"}
    for number, check in enumerate(draft.checks):
        prefix = f"checks-{number}"
        ids.update({prefix, f"{prefix}-bands", f"{prefix}-naturals", f"{prefix}-target", f"{prefix}-character"})
        ids.add(f"{prefix}-opponent")
        for natural in range(len(check.naturals)):
            ids.add(f"{prefix}-naturals-{natural}")
            ids.update(f"{prefix}-naturals-{natural}-{name}" for name in NATURAL_FIELDS)
        ids.update(f"{prefix}-{name}" for name in CHECK_FIELDS)
        for band in range(len(check.bands)):
            ids.add(f"{prefix}-bands-{band}")
            ids.update(f"{prefix}-bands-{band}-{name}" for name in (*BAND_FIELDS, "critical", "effects"))
    return ids


def world_field_ids(draft: WorldDraft) -> set[str]:
    """Every field id the world form shows for `draft`."""
    ids = {FORM, "folder", "title", "premise", "instructions", "characters"}
    for number, character in enumerate(draft.characters):
        prefix = f"characters-{number}"
        ids.update({prefix, f"{prefix}-variables", *(f"{prefix}-{name}" for name in ("name", "role", "description"))})
        for row, variable in enumerate(character.variables):
            ids.update(f"{prefix}-variables-{row}{part}" for part in ("", "-name", "-kind", "-value"))
            ids |= sheet_field_ids(f"{prefix}-variables-{row}", len(variable.items), len(variable.conditions))
    return ids | calendar_field_ids(draft.calendar)


def nearest(field_id: str, known: set[str]) -> str:
    """`field_id`, or the nearest enclosing id the form shows (`checks-0-bands-9` -> `checks-0-bands`)."""
    while field_id and field_id not in known:
        field_id = field_id.rpartition("-")[0]
    return field_id or FORM


def check_dice(draft: DiceDraft, world: Any | None) -> Findings:
    """The Dice form's problems, checked with `world` (parsed world.json; None when it cannot be read)."""
    data = dice_data(draft)
    known = dice_field_ids(draft)
    findings = Findings()
    for number, check in enumerate(draft.checks):
        for band_number, band in enumerate(check.bands):
            for message in effects_data(band.effects)[1]:
                findings.add(f"checks-{number}-bands-{band_number}-effects", Problem("$", message))
    if world is None:
        for problem in validate(data):
            findings.add(nearest(_joined(problem.path), known), replace(problem, file=DICE_FILE))
        return findings
    own = set(validate_world(world, None))
    for problem in validate_world(world, data):
        if problem.file == DICE_FILE:
            findings.add(nearest(_joined(problem.path), known), problem)
        elif problem in own:
            findings.notices.append(problem)
        else:
            _place_modifier_problem(problem, draft, world, findings)
    return findings


def _place_modifier_problem(problem: Problem, draft: DiceDraft, world: Any, findings: Findings) -> None:
    """A world.json error this form caused (a modifier some character holds as text) goes at those checks' modifier."""
    path = steps(problem.path)
    variable = path[3] if len(path) == 4 else None
    who = ""
    if len(path) > 1 and isinstance(path[1], int):
        character = world["characters"][path[1]]
        name = character.get("name") if isinstance(character, dict) else None
        who = f"{name}: " if isinstance(name, str) else ""
    placed = replace(problem, message=f"{who}{problem.message} (in {WORLD_FILE})")
    users = [f"checks-{number}-modifier" for number, check in enumerate(draft.checks) if check.modifier == variable]
    for field_id in users or ["checks"]:
        findings.add(field_id, placed)


def check_world(draft: WorldDraft, dice: Any | None, extra: dict[str, list[Problem]] | None = None) -> Findings:
    """The world form's problems, checked with `dice` (parsed dice.json; None when there is none to use).

    `extra` are problems found before validation (a bad folder name), already placed by field id.
    """
    data, found = world_data(draft)
    known = world_field_ids(draft)
    findings = Findings({key: list(value) for key, value in found.items()})
    for field_id, problems in (extra or {}).items():
        for problem in problems:
            findings.add(field_id, problem)
    own = {replace(problem, file=DICE_FILE) for problem in validate(dice)} if dice is not None else set()
    rows = variable_rows(draft)
    for problem in validate_world(data, dice):
        if problem.file == WORLD_FILE:
            field_id = nearest(_world_id(problem.path, rows, draft), known)
            if field_id not in found:  # the form said what is wrong there; the rest would only echo it
                findings.add(field_id, problem)
        elif problem in own:
            findings.notices.append(problem)
        else:  # a character's modifier opens a gap, or no character has a check's modifier
            findings.add("characters", replace(problem, message=f"{problem.message} (in {DICE_FILE})"))
    return findings


def _joined(path: str) -> str:
    return "-".join(str(step) for step in steps(path))


def _world_id(path: str, rows: list[dict[str, int]], draft: WorldDraft) -> str:
    """A world.json path as a field id; a variable's path names it, so it is looked up among the rows."""
    parts = steps(path)
    if len(parts) >= 4 and parts[0] == "characters" and isinstance(parts[1], int) and parts[2] == "variables":
        named = rows[parts[1]] if parts[1] < len(rows) else {}
        row = named.get(str(parts[3]))
        if row is not None:
            variable = draft.characters[parts[1]].variables[row]
            return sheet_field_id(f"characters-{parts[1]}-variables-{row}", parts[4:], variable.kind, variable)
        return f"characters-{parts[1]}-variables"
    return "-".join(str(step) for step in parts)
