"""The characters' sheets and a round's sheet changes as the surfaces show them: the terminal chat's `/sheet`,
`gm show`, the play page's sheet panel and the OpenAI-compatible answers' sheet card all read them from here,
so every surface words a sheet alike.

A sheet is the story's, as the database holds it (`Story.sheet`, `RoundPublic.changes`; gm.world.sheet):
nothing here reads a model's words. Characters come in the sheet's order (the world's), player characters
first; a variable reads as the game master reads it ("2 (0 to 3)", "wax, blank manifest x3", "spotted (of
soaked, spotted)").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gm.transcript.sheets import ChangePublic
from gm.world.sheet import Change, kind_of, value_text

NO_SHEET = "This story's characters have no sheet that changes."


def change_text(change: ChangePublic) -> str:
    """One change in a few words, with its reason: "Odile's grit 3 -> 2 (-1) - a failed check costs 1"."""
    fields = change.model_dump()
    told = Change.from_json(fields).text()
    return f"{told} - {change.reason}" if change.reason else told


def sheet_rows(sheet: Mapping[str, Any] | None, players: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The sheets as rows for a page: each character's name and its variables' name, kind and text."""
    if not sheet:
        return []
    names = [name for name in players if name in sheet] + [name for name in sheet if name not in players]
    rows = []
    for name in names:
        entries = sheet[name] if isinstance(sheet[name], Mapping) else {}
        rows.append(
            {
                "character": name,
                "player": name in players,
                "entries": [
                    {"variable": key, "kind": kind_of(entry) or "number", "text": value_text(entry)}
                    for key, entry in entries.items()
                ],
            }
        )
    return rows


def sheet_lines(sheet: Mapping[str, Any] | None, players: Sequence[str] = ()) -> list[str]:
    """The sheets as text, one line a character: "Odile: grit 2 (0 to 3); coin 7 (0 or more); ..."."""
    return [
        f"{row['character']}: " + "; ".join(f"{entry['variable']} {entry['text']}" for entry in row["entries"])
        for row in sheet_rows(sheet, players)
    ]
