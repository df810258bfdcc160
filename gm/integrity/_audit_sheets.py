"""The audit of a story's sheets: every sheet recomputed from the world's start values and the rounds' changes.

Each accepted change (gm.world.sheet, in the rounds of the transcript, in story order) must come next in the
story's sheet chain (its `seq` and its `prev_hash`, gm.transcript.chain's `change_hash`), must be one the sheet
could take at that moment (`gm.world.sheet.apply`, with the amount it records), and must record the value
before and after that applying it gives. A rolled amount (a `roll` the game master asked for, or a band's
effect) must be the total of a roll in the story's chain, of the same round. Each round's `sheet_hash` must be
the chain's head when it ended, and the story's sheets now, its change count and its head must be what the
changes leave. A check roll whose modifier is a bounded number must have used a value that number held in its
round (at the round's start or after one of its changes); a roll of an attempt that was not accepted, any value
within the number's bounds. Pure: no I/O.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from gm.errors import SheetRefused
from gm.integrity._audit_report import AuditReport, Mismatch
from gm.transcript.chain import change_hash, sheet_genesis
from gm.transcript.shapes import RollPublic, TranscriptPublic
from gm.world.sheet import Change, Sheets, apply


@dataclass
class SheetValues:
    """What the audit learnt of the sheets' numbers: the values each held in each round, for check modifiers."""

    start: Sheets = field(default_factory=dict)
    held: dict[tuple[int, str, str], set[int]] = field(default_factory=dict)  # (round, character, variable)
    accepted: set[str] = field(default_factory=set)  # the attempts that played the accepted rounds

    def number(self, character: str | None, variable: str | None) -> dict[str, Any] | None:
        entry = self.start.get(character or "", {}).get(variable or "")
        return entry if entry is not None and "value" in entry else None

    def allows(self, roll: RollPublic, character: str | None, variable: str, value: int | None) -> bool:
        """Whether a check roll's modifier `value` is one `character`'s `variable` held when it was rolled."""
        key = (roll.round or 0, character or "", variable)
        if value in self.held.get(key, set()):
            return True
        if roll.attempt in self.accepted:  # rolled by the round as accepted: only the values it held will do
            return False
        entry = self.number(character, variable)
        assert entry is not None
        low, high = entry.get("min"), entry.get("max")
        return value is not None and (low is None or value >= low) and (high is None or value <= high)


def check_sheets(transcript: TranscriptPublic, report: AuditReport) -> SheetValues:
    """Recompute the sheets as the module says; every mismatch goes into `report`."""
    integrity = transcript.integrity
    assert integrity is not None
    values = SheetValues(copy.deepcopy(integrity.sheet_start or {}))
    changes = [change for round_ in transcript.rounds for change in round_.changes]
    if integrity.sheet_start is None:
        if changes:
            report.mismatches.append(Mismatch("sheets", "the rounds change sheets, but the story has no start sheets"))
        return values
    sheets = copy.deepcopy(integrity.sheet_start)
    variables = {name: dict(entries) for name, entries in sheets.items()}
    rolls = {roll.id: roll for roll in integrity.rolls}
    previous, seq = sheet_genesis(transcript.story.id), 0
    values.accepted = {round_.attempt for round_ in transcript.rounds if round_.attempt is not None}
    for round_ in transcript.rounds:
        _note(values, round_.number, sheets)
        for change in round_.changes:
            seq += 1
            where = f"sheet change {change.seq} (round {round_.number})"
            found = []
            if change.seq != seq or change.round != round_.number:
                found.append(
                    f"it is number {change.seq} of round {change.round} but comes {seq}, in round {round_.number}"
                )
            if change.prev_hash != previous:
                found.append(
                    "its prev_hash is not the hash of the change before it: a change was edited, removed or added"
                )
            if change.source in ("rolled", "effect"):
                rolled = rolls.get(change.roll) if change.roll is not None else None
                if rolled is None or rolled.round != round_.number or abs(change.amount or 0) != rolled.total:
                    found.append(f"its amount {change.amount} is not the total of a roll of its round")
            asked = Change(
                change.character,
                change.variable,
                change.action,  # type: ignore[arg-type]
                change.amount,
                change.item,
                change.condition,
                change.reason,
                change.source,  # type: ignore[arg-type]
            )
            try:
                sheets, applied = apply(sheets, asked, variables)
                said = (change.before, change.after, change.clamped)
                if (applied.before, applied.after, applied.clamped) != said:
                    found.append(
                        f"it says {change.before} -> {change.after}, but made on the sheet as it was it gives "
                        f"{applied.before} -> {applied.after}"
                    )
            except SheetRefused as refused:
                found.append(f"the sheet could not take it ({refused.sentence})")
            report.mismatches += [Mismatch(where, message) for message in found]
            previous = change_hash(change.model_dump(mode="json"))
            _note(values, round_.number, sheets)
        if round_.sheet_hash is not None and round_.sheet_hash != (previous if seq else None):
            report.mismatches.append(
                Mismatch(f"round {round_.number}", "its sheet_hash is not the hash of the last change when it ended")
            )
    head = previous if seq else None
    if (integrity.sheet_length, integrity.sheet_head) != (seq, head):
        report.mismatches.append(
            Mismatch(
                "sheets",
                f"the story says {integrity.sheet_length} changes ending in {integrity.sheet_head}, "
                f"but the rounds hold {seq} ending in {head}: changes were removed or added",
            )
        )
    if transcript.story.sheet is not None and transcript.story.sheet != sheets:
        wrong = sorted(
            f"{name}'s {key}"
            for name, entries in sheets.items()
            for key, entry in entries.items()
            if (transcript.story.sheet.get(name) or {}).get(key) != entry
        )
        report.mismatches.append(
            Mismatch(
                "sheets", f"the story's sheets now are not what its changes leave: {', '.join(wrong) or 'their shape'}"
            )
        )
    return values


def _note(values: SheetValues, number: int, sheets: Sheets) -> None:
    for name, entries in sheets.items():
        for key, entry in entries.items():
            if "value" in entry:
                values.held.setdefault((number, name, key), set()).add(int(entry["value"]))
