"""A round's sheet: the characters' sheets as the round runs, the changes it makes, and what it writes at the end.

The round starts from the sheets the store read as it opened (gm.store._sheets: the story's now, or, for a
round played again, those before its earlier version). `change_sheet` (gm.engine.tools.running) and a band's
effects (gm.rules.effects) change them through `RoundSheet`, each change checked by `gm.world.sheet.apply`:
nothing the model sends is trusted. A call's changes are all made or none: any refusal refuses the call,
with one sentence naming the change at fault. An amount the model asks to be rolled (`roll`, such as
"-1d6") and a band effect's amount are real rolls, written in the story's chain as they are rolled
(`roll` names it on the change); a chosen `amount` is recorded as chosen. Checks rolled later in the round
read the sheets of that moment (`World.modifier_for`).

The changes live in the attempt until the round is accepted (`write`, in the transaction that accepts it):
a failed attempt's changes vanish with it, a paused round keeps them (`kept`/`restored`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gm import dice
from gm.errors import SheetRefused
from gm.rules.effects import Effect, split_amount
from gm.store import RollRecord, SheetChangeRecord, SheetStart, SheetWrite
from gm.transcript.chain import sheet_genesis, stored_change_hash
from gm.world.definition import World
from gm.world.sheet import Change, Sheets, apply, value_text

MAX_CHANGES = 8  # in one change_sheet call
RollAmount = Callable[[str, str], RollRecord]  # (notation, reason) -> the roll written for that amount


@dataclass
class RoundSheet:
    """The sheets as this attempt has changed them so far, and the changes, in order."""

    world: World
    start: SheetStart
    sheets: Sheets = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.sheets:
            self.sheets = _copy(self.start.sheets if self.start.sheets is not None else self.world.start_sheets)
        self._variables = {character.name: dict(character.variables) for character in self.world.characters}

    def change(self, requested: list[dict[str, Any]], roll_amount: RollAmount) -> dict[str, Any]:
        """Make one change_sheet call's changes, all or none; `SheetRefused` names the first that cannot be made."""
        if not requested or len(requested) > MAX_CHANGES:
            raise SheetRefused("too_many", f"send from 1 to {MAX_CHANGES} changes in one change_sheet call")
        wanted = []
        for place, item in enumerate(requested, 1):
            try:
                wanted.append(_change_of(item))
            except SheetRefused as refused:
                raise _at(refused, place, len(requested)) from None
        sheets = self.sheets
        for place, (change, _) in enumerate(wanted, 1):  # a dry run first: nothing is rolled for a call refused
            try:
                sheets, _ = apply(sheets, change, self._variables)
            except SheetRefused as refused:
                raise _at(refused, place, len(wanted)) from None
        sheets, made = self.sheets, []
        for place, (change, notation) in enumerate(wanted, 1):
            if notation is not None:
                sign, text = split_amount(notation)
                rolled = roll_amount(text, _amount_reason(change))
                change = replace(change, amount=sign * rolled.total, roll=rolled.id)
            try:
                sheets, applied = apply(sheets, change, self._variables)
            except SheetRefused as refused:
                raise _at(refused, place, len(wanted)) from None
            made.append(applied)
        self.sheets = sheets
        self.changes.extend(made)
        return {"changed": [change.text() for change in made], "now": self.shown([c.character for c in made])}

    def effects(
        self, effects: tuple[Effect, ...], actor: str, opponent: str | None, roll_amount: RollAmount
    ) -> list[str]:
        """Apply a band's effects to the character rolled for and the opponent; what each did, in words."""
        done = []
        for effect in effects:
            who = actor if effect.of == "self" else opponent
            entry = self.sheets.get(who or "", {}).get(effect.variable)
            if who is None or entry is None or "value" not in entry:
                done.append(f"no effect on {who or 'an opponent'}: no '{effect.variable}' number that can change")
                continue
            change = Change(who, effect.variable, "adjust", 0, reason=f"effect: {effect.by}", source="effect")
            rolled = roll_amount(effect.notation, _amount_reason(change))
            change = replace(change, amount=effect.sign * rolled.total, roll=rolled.id)
            self.sheets, applied = apply(self.sheets, change, self._variables)
            self.changes.append(applied)
            done.append(applied.text())
        return done

    def shown(self, characters: list[str] | None = None) -> dict[str, dict[str, str]]:
        """The sheets (of `characters`, or everyone's) as the game master reads them."""
        names = list(dict.fromkeys(characters)) if characters is not None else list(self.sheets)
        return {name: {key: value_text(entry) for key, entry in self.sheets.get(name, {}).items()} for name in names}

    def write(self, story_id: str, attempt_id: str, number: int) -> SheetWrite:
        """The round's changes as rows, each chained to the one before, and the sheets they leave."""
        head = self.start.head or sheet_genesis(story_id)
        rows = []
        for seq, change in enumerate(self.changes, self.start.length + 1):
            row = SheetChangeRecord(
                story_id=story_id,
                attempt_id=attempt_id,
                round_number=number,
                seq=seq,
                character=change.character,
                variable=change.variable,
                action=change.action,
                amount=change.amount,
                item=change.item,
                condition=change.condition,
                reason=change.reason,
                source=change.source,
                roll_id=change.roll,
                before=change.before,
                after=change.after,
                clamped=change.clamped,
                prev_hash=head,
            )
            head = stored_change_hash(row)
            rows.append(row)
        last = head if rows else self.start.head
        return SheetWrite(rows, self.sheets, self.start.length + len(rows), last)

    def kept(self) -> dict[str, Any]:
        """What a paused round keeps of its sheet (PausedRound.sheet)."""
        start = {"sheets": self.start.sheets, "length": self.start.length, "head": self.start.head}
        return {"start": start, "sheets": self.sheets, "changes": [change.to_json() for change in self.changes]}

    @classmethod
    def restored(cls, world: World, kept: dict[str, Any] | None, start: SheetStart) -> RoundSheet:
        """A paused round's sheet as it was when it paused (`kept`), or a fresh one from `start`."""
        if not kept:
            return cls(world, start)
        begun = SheetStart(kept["start"]["sheets"], kept["start"]["length"], kept["start"]["head"])
        return cls(world, begun, kept["sheets"], [Change.from_json(change) for change in kept["changes"]])


def band_effects(world: World, record: RollRecord) -> tuple[Effect, ...]:
    """The effects of the band a check roll fell in (none for a void roll or a band without any)."""
    rules = world.rules
    if record.kind != "check" or record.void or rules is None or str(record.check_key) not in rules:
        return ()
    band = next((band for band in rules[str(record.check_key)].bands if band.label == record.band), None)
    return band.effects if band is not None else ()


def earlier_against(world: World, earlier: Sequence[RollRecord], record: RollRecord) -> str | None:
    """Whom an earlier version's check roll was made against: the character its opponent effect's amount was
    rolled for (named in that roll's reason), else the roll's opponent."""
    for effect in band_effects(world, record):
        tail = f"'s {effect.variable}: effect: {effect.by}"
        for roll in earlier:
            later = roll.kind == "dice" and (roll.id or 0) > (record.id or 0) and roll.reason.endswith(tail)
            if effect.of == "opponent" and later and roll.reason.startswith("amount of "):
                who = roll.reason.removeprefix("amount of ").removesuffix(tail)
                if who != record.character:
                    return who
    return record.opponent


def sheet_lines(sheets: Sheets) -> list[str]:
    """The sheets for the game master's prompt, one line a character: "Mara: hp 7 (0 to 10); kit wax, rope"."""
    return [
        f"{name}: " + "; ".join(f"{key} {value_text(entry)}" for key, entry in entries.items())
        for name, entries in sheets.items()
    ]


def _change_of(item: dict[str, Any]) -> tuple[Change, str | None]:
    """A requested change, and the notation of its amount when it is to be rolled (None: chosen)."""
    action = item["action"]
    notation = item.get("roll")
    if notation is not None:
        if action != "adjust":
            raise SheetRefused(
                "wrong_type", "a rolled amount ('roll') is only for action adjust; give a chosen 'amount'"
            )
        if item.get("amount") is not None:
            raise SheetRefused("wrong_type", "give either 'amount' (chosen) or 'roll' (rolled), not both")
        _, text = split_amount(str(notation))
        try:
            dice.require_dice(dice.parse(text))
        except dice.DiceError as error:
            raise SheetRefused("wrong_type", f"'roll' must be dice notation such as -1d6: {error}") from None
    amount = item.get("amount")
    if amount is not None:
        amount = int(amount)
    elif action in ("add", "remove"):
        amount = 1
    elif action in ("set", "adjust") and notation is None:
        raise SheetRefused("wrong_type", f"action {action} needs an 'amount' (or, for adjust, a 'roll')")
    change = Change(
        str(item["character"]),
        str(item["variable"]),
        action,
        0 if notation is not None else amount,
        item=item.get("item"),
        condition=item.get("condition"),
        reason=str(item.get("reason", "")),
        source="rolled" if notation is not None else "chosen",
    )
    return change, notation


def _amount_reason(change: Change) -> str:
    return f"amount of {change.character}'s {change.variable}: {change.reason}"[:300]


def _at(refused: SheetRefused, place: int, count: int) -> SheetRefused:
    where = f"change {place}: " if count > 1 else ""
    return SheetRefused(refused.kind, f"{where}{refused.sentence}; nothing in this call was changed")


def _copy(sheets: Sheets) -> Sheets:
    return {
        name: {
            key: {
                k: (list(map(dict, v)) if k == "items" else dict(v) if isinstance(v, dict) else v)
                for k, v in entry.items()
            }
            for key, entry in entries.items()
        }
        for name, entries in sheets.items()
    }
