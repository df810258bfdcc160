"""The public shape of a sheet change (gm.world.sheet.Change as a story stored it), for rounds, the API and
the audit. Built from the store's row through `StoredChange`, so this module knows no database."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel


class StoredChange(Protocol):
    """What a change's shape is built from: the store's row of it (`gm.store.records.SheetChangeRecord`)."""

    seq: int
    round_number: int
    attempt_id: str
    character: str
    variable: str
    action: str
    amount: int | None
    item: str | None
    condition: str | None
    reason: str
    source: str
    roll_id: int | None
    before: Any
    after: Any
    clamped: bool
    prev_hash: str


class ChangePublic(BaseModel):
    """One accepted change of a character's sheet: what changed, by how much and why, where the amount came from
    (chosen, rolled at the game master's asking, or rolled for a band's effect: `roll` names the roll), the value
    before and after (a number, an item's count, a condition's state), and its link in the story's sheet chain."""

    seq: int
    round: int
    attempt: str
    character: str
    variable: str
    action: str
    amount: int | None = None
    item: str | None = None
    condition: str | None = None
    reason: str = ""
    source: str = "chosen"
    roll: int | None = None
    before: int | bool | None = None
    after: int | bool | None = None
    clamped: bool = False
    prev_hash: str

    @classmethod
    def from_stored(cls, record: StoredChange) -> ChangePublic:
        return cls(
            seq=record.seq,
            round=record.round_number,
            attempt=record.attempt_id,
            character=record.character,
            variable=record.variable,
            action=record.action,
            amount=record.amount,
            item=record.item,
            condition=record.condition,
            reason=record.reason,
            source=record.source,
            roll=record.roll_id,
            before=record.before,
            after=record.after,
            clamped=record.clamped,
            prev_hash=record.prev_hash,
        )


class SheetsPublic(BaseModel):
    """A story's sheets: the characters' sheets now (gm.world.sheet's normal form, `{character: {variable: entry}}`),
    each as the game master reads it in words, and every accepted change in order. `sheet` is null in a world
    whose sheets cannot change. What `GET /api/stories/{id}/sheet` answers and `gm.engine.transcript.sheets` gives."""

    story: str
    sheet: dict[str, Any] | None = None
    shown: dict[str, dict[str, str]] = {}
    changes: list[ChangePublic] = []
