"""The store's sheets: the changes accepted rounds made to the characters' sheets, and the sheets now.

A story's sheets now are in its row (`Story.sheet`, with the number of changes and the last one's hash);
each accepted change is a row of `sheet_changes`, written with its round in the transaction that accepts
it (gm.store._rounds), so a failed attempt's changes are never written and a round played again replaces
its round's changes. The store decides nothing: which changes a round may make is the engine's
(gm.engine._sheets), what they must add up to the audit's (gm.integrity).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, delete, insert
from sqlalchemy import select as sql_select
from sqlalchemy.engine import Connection

from gm.store._base import Tables, row_of, table_of
from gm.store.records import Attempt, SheetChangeRecord, Story
from gm.transcript.chain import sheet_genesis, stored_change_hash

CHANGES = table_of(SheetChangeRecord)
STORIES = table_of(Story)
ATTEMPTS = table_of(Attempt)


@dataclass
class SheetStart:
    """The sheets as a round begins: the sheets (None: the story has stored none yet, so its world's start
    values stand), how many changes the story had made before it, and the last one's hash (None: none yet)."""

    sheets: dict[str, Any] | None
    length: int = 0
    head: str | None = None


@dataclass
class SheetWrite:
    """What an accepted round writes of the sheets: its changes, in order, and the sheets, count and head after."""

    changes: list[SheetChangeRecord] = field(default_factory=list)
    sheets: dict[str, Any] | None = None
    length: int = 0
    head: str | None = None


_OF_ROUND = (
    sql_select(CHANGES)
    .where(CHANGES.c.story_id == bindparam("story"), CHANGES.c.round_number == bindparam("round_no"))
    .order_by(CHANGES.c.seq)
)
_OF_STORY = sql_select(CHANGES).where(CHANGES.c.story_id == bindparam("story")).order_by(CHANGES.c.seq)
_REGENERATING = (
    sql_select(ATTEMPTS.c.id).where(ATTEMPTS.c.id == bindparam("attempt"), ATTEMPTS.c.regenerating.is_(True)).exists()
)
# A round played again: its earlier version's changes go (only when the attempt accepted plays its round again).
DROP_REPLACED = delete(CHANGES).where(
    CHANGES.c.story_id == bindparam("story"), CHANGES.c.round_number == bindparam("round_no"), _REGENERATING
)
CHANGES_INSERT = insert(CHANGES)
# The story's sheets as a round left them: set by the UPDATE that counts the round (gm.store._rounds).
SHEET_VALUES = {
    STORIES.c.sheet: bindparam("sheet", type_=STORIES.c.sheet.type),
    STORIES.c.sheet_length: bindparam("sheet_length"),
    STORIES.c.sheet_head: bindparam("sheet_head"),
}


def sheet_start(connection: Connection, story: Any, number: int, regenerate: bool) -> SheetStart:
    """The sheets as round `number` begins, read in the caller's transaction: the story's own, or, for a round
    played again, the story's with that round's changes undone (each variable back to its first `before`)."""
    start = SheetStart(story.sheet, story.sheet_length, story.sheet_head)
    if not regenerate or story.sheet is None:
        return start
    changes = [
        row_of(SheetChangeRecord, row)
        for row in connection.execute(_OF_ROUND, {"story": story.id, "round_no": number}).mappings()
    ]
    if not changes:
        return start
    sheets = {name: {key: _copy(entry) for key, entry in entries.items()} for name, entries in story.sheet.items()}
    for change in reversed(changes):
        undo(sheets, change)
    return SheetStart(sheets, story.sheet_length - len(changes), changes[0].prev_hash)


def undo(sheets: dict[str, Any], change: SheetChangeRecord) -> None:
    """Put one change's variable back as it was before the change (its number, item count or condition state)."""
    entry = sheets[change.character][change.variable]
    if change.action in ("set", "adjust"):
        entry["value"] = change.before
    elif change.action in ("on", "off"):
        entry["conditions"][change.condition] = change.before
    else:
        items = [item for item in entry["items"] if item["name"] != change.item]
        if change.before:
            held = next((item for item in entry["items"] if item["name"] == change.item), None)
            if held is not None:
                held["count"] = change.before
                items = entry["items"]
            else:
                items = [*items, {"name": change.item, "count": change.before}]
        entry["items"] = items


def _copy(entry: dict[str, Any]) -> dict[str, Any]:
    copied = dict(entry)
    if "items" in copied:
        copied["items"] = [dict(item) for item in copied["items"]]
    if "conditions" in copied:
        copied["conditions"] = dict(copied["conditions"])
    return copied


def fork_sheets(
    parent: Any, fork: Any, through: int, changes: list[SheetChangeRecord], attempts: dict[str, str]
) -> tuple[list[SheetChangeRecord], dict[int, str | None]]:
    """A fork's sheet changes (the parent's of rounds 1..`through`, chained anew from the fork's genesis, in the
    fork's attempts) and the chain's head after each of those rounds; sets the fork's sheets, count and head (the
    parent's sheets with its later changes undone)."""
    sheets = {name: {key: _copy(entry) for key, entry in entries.items()} for name, entries in parent.sheet.items()}
    for change in reversed([change for change in changes if change.round_number > through]):
        undo(sheets, change)
    head: str | None = None
    previous = sheet_genesis(fork.id)
    rows, heads = [], {}
    for change in (change for change in changes if change.round_number <= through):
        values = change.model_dump(exclude={"id", "story_id", "attempt_id", "prev_hash", "created_at"})
        row = SheetChangeRecord(**values, story_id=fork.id, attempt_id=attempts[change.attempt_id], prev_hash=previous)
        previous = head = stored_change_hash(row)
        heads[change.round_number] = head
        rows.append(row)
    fork.sheet, fork.sheet_length, fork.sheet_head = sheets, len(rows), head
    running: dict[int, str | None] = {}
    for number in range(1, through + 1):
        running[number] = heads.get(number, running.get(number - 1))
    return rows, running


class SheetTables(Tables):
    """The sheet changes of a story, as written."""

    def sheet_changes(self, story_id: str, round_number: int | None = None) -> list[SheetChangeRecord]:
        """The story's accepted sheet changes in order (`round_number`: that round's only)."""
        with self.reading() as connection:
            if round_number is None:
                rows = connection.execute(_OF_STORY, {"story": story_id}).mappings()
            else:
                rows = connection.execute(_OF_ROUND, {"story": story_id, "round_no": round_number}).mappings()
            return [row_of(SheetChangeRecord, row) for row in rows]
