"""The sheet judge: reads the narration against the changes the round made to the characters' sheets.

The narration judge (gm.engine.judge) reads how each rolled outcome is told; this reads the sheet. After
the referee (and the narration judge, where outcomes were rolled) accept an ending of a round that changed
a sheet, the judge's model is asked, with the same model and the same way of asking for JSON, two things:
for each change the round made, whether the narration tells it; and which changes to a sheet the narration
tells that no listed change makes ("she drops the picks" where nobody's kit changed). Either mistake refuses
the narration with one sentence, as an outcome told against its roll is, and nothing is stored.

A plain round, which changed no sheet, is read only when its narration names something on a sheet (a held
item, a condition, a variable): other plain rounds make no call here (docs/sheets.md says why).
The answer's shape is fixed:
`{"made": [{"number", "told", "quote"}], "invented": [{"character", "change", "quote"}]}`; an unusable
answer is asked for once more, then the round fails (`JudgeFailed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gm.engine._sheets import RoundSheet, sheet_lines
from gm.engine.judge import Judge, JudgeCall, json_answer
from gm.errors import JudgeFailed
from gm.world.sheet import Change

FORMAT_NAME = "sheet_verdicts"
QUOTE_CHARS = 200
SHEET_NARRATION, SHEET_MADE, SHEET_BEFORE = "Narration:\n", "\n\nSheet changes made this round:\n", "\n\nSheets:\n"
INSTRUCTIONS = """You check an interactive story's narration against the characters' sheets (hit points, items,
conditions), which only the game engine changes. You are given the narration the player is about to read, the
changes the engine made this round (numbered), and the sheets after them. Answer two things:

- "made": for each numbered change, whether the narration tells it ("told": true or false), with the few words
  that tell it ("quote", exactly as they stand; empty when not told). Telling it loosely is enough: "the guard's
  blade bites her arm" tells a loss of hit points, "she pockets the key" tells a key added.
- "invented": every change to a character's hit points, items or conditions that the narration tells as
  happening now and that no listed change makes (an item dropped, given, found or used up, a wound, healing, a
  condition taken or shaken off), with the character, the change in a few words, and the quote. Things merely
  seen, threatened, remembered or planned are not changes.

Answer with JSON only, in this shape:
{"made": [{"number": 1, "told": true, "quote": "<words>"}],
 "invented": [{"character": "<name>", "change": "<what>", "quote": "<words>"}]}"""
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "made": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"number": {"type": "integer"}, "told": {"type": "boolean"}, "quote": {"type": "string"}},
                "required": ["number", "told", "quote"],
                "additionalProperties": False,
            },
        },
        "invented": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "character": {"type": "string"},
                    "change": {"type": "string"},
                    "quote": {"type": "string"},
                },
                "required": ["character", "change", "quote"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["made", "invented"],
    "additionalProperties": False,
}
_MADE_LINE = re.compile(r"(\d+)\. (.*)")


@dataclass(frozen=True, slots=True)
class SheetRequest:
    """What the sheet judge reads: the narration, the round's changes in words, and the sheets after them."""

    narration: str
    made: tuple[str, ...]
    sheets: tuple[str, ...] = ()


@dataclass
class SheetJudgement:
    """The sheet judge's reading: the refusals it leads to (none: the narration stands), and the calls it took."""

    refusals: list[str] = field(default_factory=list)
    calls: list[JudgeCall] = field(default_factory=list)


def needs_judging(sheet: RoundSheet | None, narration: str = "") -> bool:
    """Whether the sheet judge reads this round: one that changed a sheet, or one whose narration names
    something on a sheet (an item a character holds, a condition, a variable's name), where a change may be
    told that the round did not make. Other plain rounds make no judge call."""
    if sheet is None:
        return False
    if sheet.changes:
        return True
    names = sheet_names(sheet)
    return bool(names) and re.search(_any_of(names), narration, flags=re.IGNORECASE) is not None


def sheet_names(sheet: RoundSheet) -> frozenset[str]:
    """The words of the sheets a narration may name: variables, held items, conditions."""
    found: set[str] = set()
    for entries in sheet.sheets.values():
        for variable, entry in entries.items():
            found.add(variable)
            found.update(item["name"] for item in entry.get("items", ()) if item.get("count", 0) > 0)
            found.update(entry.get("conditions", {}))
    return frozenset(name.strip() for name in found if name.strip())


def _any_of(names: frozenset[str]) -> str:
    # Whole words only ("hp" is not in "whip"); longest first, so "lock picks" is tried before "lock".
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return rf"(?<!\w)(?:{alternatives})(?!\w)"


def sheet_messages(request: SheetRequest) -> list[dict[str, Any]]:
    made = "\n".join(f"{number}. {text}" for number, text in enumerate(request.made, 1)) or "(none)"
    text = f"{SHEET_NARRATION}{request.narration}{SHEET_MADE}{made}{SHEET_BEFORE}" + "\n".join(request.sheets)
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": text}]


def read_sheet_request(text: str) -> SheetRequest | None:
    """The request back from a sheet judge's user message (for fakes and rehearsal), or None if it is not one."""
    if not text.startswith(SHEET_NARRATION) or SHEET_MADE not in text or SHEET_BEFORE not in text:
        return None
    narration, _, rest = text[len(SHEET_NARRATION) :].rpartition(SHEET_MADE)
    made, _, sheets = rest.partition(SHEET_BEFORE)
    lines = [found.group(2) for line in made.splitlines() if (found := _MADE_LINE.fullmatch(line.strip()))]
    return SheetRequest(narration, tuple(lines), tuple(sheets.splitlines()))


async def judge_sheet(judge: Judge, sheet: RoundSheet, narration: str) -> SheetJudgement:
    """Read `narration` against the round's changes; refusals for each change untold and each one invented."""
    request = SheetRequest(
        narration, tuple(change.text() for change in sheet.changes), tuple(sheet_lines(sheet.sheets))
    )
    judgement = SheetJudgement()
    messages = sheet_messages(request)
    problem = ""
    for _ in range(2):
        completion, mode, text = await judge.ask_json(messages, FORMAT_NAME, VERDICT_SCHEMA)
        judgement.calls.append(JudgeCall(completion, mode))
        try:
            judgement.refusals = _refusals(_read(text), sheet.changes)
            return judgement
        except ValueError as error:
            problem = str(error)
        messages = [
            *messages,
            {"role": "assistant", "content": text[:2000] or "(nothing)"},
            {"role": "user", "content": f"That answer cannot be used: {problem}. Answer again with the JSON only."},
        ]
    raise JudgeFailed(f"the judge of the sheet changes gave no usable verdict ({problem}); try again")


def _read(text: str) -> dict[str, Any]:
    data = json_answer(text)
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("made"), list)
        or not isinstance(data.get("invented"), list)
    ):
        raise ValueError('it needs a "made" list and an "invented" list')
    return data


def _refusals(data: dict[str, Any], changes: list[Change]) -> list[str]:
    told: dict[int, bool] = {}
    for item in data["made"]:
        number = item.get("number") if isinstance(item, dict) else None
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= len(changes):
            raise ValueError(f"it names change {number!r}, which was not listed")
        told[number] = item.get("told") is True
    if len(told) != len(changes):
        raise ValueError(f"it says nothing of change {min(set(range(1, len(changes) + 1)) - set(told))}")
    refusals = [
        f"the narration never tells that {changes[number - 1].text()}; tell every change the round made"
        for number, was_told in sorted(told.items())
        if not was_told
    ]
    for item in data["invented"]:
        if not isinstance(item, dict):
            raise ValueError("an invented change is not an object")
        quote = _clean(item.get("quote"))
        who, what = _clean(item.get("character")), _clean(item.get("change"))
        refusals.append(
            f"the narration tells {who}'s sheet changing ({what}: '{quote}'), but the round made no such change;"
            " make it with change_sheet or leave it out"
        )
    return refusals


def _clean(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    printable = "".join(ch for ch in text if ch.isprintable() or ch.isspace())
    return " ".join(printable.split())[:QUOTE_CHARS]
