"""How the rehearsal stand-in keeps the characters' sheets (see gm.rehearsal.model and docs/sheets.md).

In a world where a sheet can change (the engine offers `change_sheet`), after a round's check rolls and
before it narrates, the rehearsal makes the changes these rules give, one `change_sheet` call each, in this
order (`planned_changes`). "The actor" is whoever a check was rolled for; a rule that needs a variable the
actor lacks, or a change its bounds forbid, is skipped.

1. Harm: a check that `failed` costs the actor 1 of their wound track, the first bounded number they hold
   with both a min and a max (harbour-heist's grit, storm-wall's stamina), unless a band effect of this
   round already changed it, or it is at its min.
2. Spending: the player's words "pay 3 coin" (or spend, give, bribe with, a number and a bounded number the
   actor holds) take that many away, unless the check failed or it would go below the min.
3. Using up: the player's words naming an item the actor holds after a verb of using up (use, press, burn,
   light, spend, drop, throw, leave, give) remove one of it, unless the check failed.
4. Taking: on a check that did not fail, the player's words "take the strongroom key" (or grab, pocket,
   steal, lift, pick up; up to four words, articles dropped, up to the next comma or preposition) add that
   item to the actor's first item list.
5. Conditions: a condition of the actor named in the player's words is turned on by a failed check (if it
   is off) and off by a succeeded one (if it is on).

The sheets the rules read are those of the prompt's sheet section (`gm.engine.prompt.SHEET_HEADING`),
that is, as the round began. The narration then says each change made this round, a band effect's or its
own, one line each: "(rehearsal) Sheet: Odile's grit 3 -> 2 (-1)." (`sheet_lines`). The sheet judge's
requests are answered by a rule on that (`sheet_verdict`): a change is told when its words stand in the
narration, and the rehearsal never tells a change it did not make, so nothing is invented.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gm.engine.prompt import SHEET_HEADING
from gm.engine.sheet_judge import SheetRequest
from gm.world.definition import World
from gm.world.sheet import kind_of

MARK = "(rehearsal)"
SHEET_LINE = f"{MARK} Sheet: "
_USE_VERBS = (
    r"use|uses|using|press|presses|burn|burns|light|lights|spend|spends|drop|drops|throw|throws|leave|leaves|give|gives"
)
_USING = re.compile(rf"\b(?:{_USE_VERBS})\b(.*)", re.IGNORECASE)
_PAYING = re.compile(
    r"\b(?:pay|pays|spend|spends|give|gives|bribe\w*(?: \w+)* with)\s+(\d{1,6})\s+([^\W\d_][\w' -]*)", re.I
)
_TAKING = re.compile(
    r"\b(?:take|takes|grab|grabs|pocket|pockets|steal|steals|lift|lifts|pick up|picks up)\s+([^.,;:!?]+)", re.I
)
_ENDS = re.compile(r"\s(?:from|off|out|in|into|on|onto|under|with|and|to|before|while|then|of)\s.*", re.I)
_ARTICLES = {"a", "an", "the", "his", "her", "their", "its", "my", "some", "that", "this"}


def sheets_in_prompt(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each character's sheet line in the game master's prompt ("Odile" -> "grit 3 (0 to 3); coin 12 ...")."""
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    _, found, rest = system.partition(SHEET_HEADING + "\n")
    lines: dict[str, str] = {}
    for line in rest.splitlines() if found else ():
        if not line.startswith("- "):
            break
        name, _, sheet = line[2:].partition(": ")
        lines[name] = sheet
    return lines


def _parts(line: str) -> dict[str, str]:
    """A sheet line's variables, each as its text ("grit" -> "3 (0 to 3)")."""
    parts = {}
    for part in line.split("; "):
        key, _, text = part.partition(" ")
        parts[key] = text
    return parts


def _number(world_value: Any, shown: str | None) -> int | None:
    found = re.match(r"-?\d+", shown or "")
    if found:
        return int(found.group())
    return world_value.get("value") if isinstance(world_value, dict) else None


def _held(shown: str | None, world_value: Any) -> list[str]:
    if shown is None:
        items = world_value.get("items", []) if isinstance(world_value, dict) else []
        return [item if isinstance(item, str) else str(item.get("name")) for item in items]
    if shown == "nothing":
        return []
    return [re.sub(r" x\d+$", "", name) for name in shown.split(", ")]


def _conditions_on(shown: str | None, world_value: Any) -> set[str]:
    if shown is None:
        states = world_value.get("conditions", {}) if isinstance(world_value, dict) else {}
        return {name for name, on in states.items() if on}
    on, _, _ = shown.partition(" (of ")
    return set() if on == "none" else set(on.split(", "))


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


def planned_changes(
    world: World, speech: str, rolled: Sequence[Mapping[str, Any]], prompt_sheets: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The change_sheet changes the rules give for this round's check rolls (see the module docstring)."""
    planned: list[dict[str, Any]] = []
    for result in rolled:
        actor = str(result.get("character"))
        outcome = str(result.get("result"))
        try:
            variables = world.character(actor).variables
        except Exception:
            continue
        shown = _parts(prompt_sheets.get(actor, ""))
        effected = " ".join(str(change) for change in result.get("changes", []))
        planned += _harm(actor, outcome, variables, shown, effected)
        planned += _spending(actor, outcome, variables, shown, speech)
        planned += _items(actor, outcome, variables, shown, speech)
        planned += _conditions(actor, outcome, variables, shown, speech)
    return planned


def _harm(
    actor: str, outcome: str, variables: Mapping[str, Any], shown: dict[str, str], effected: str
) -> list[dict[str, Any]]:
    if outcome != "failed":
        return []
    for name, value in variables.items():
        if kind_of(value) == "number" and "min" in value and "max" in value:
            now = _number(value, shown.get(name))
            if f"{actor}'s {name} " in effected or now is None or now <= value["min"]:
                return []
            return [_change(actor, name, "adjust", amount=-1, reason="a failed check costs 1")]
    return []


def _spending(
    actor: str, outcome: str, variables: Mapping[str, Any], shown: dict[str, str], speech: str
) -> list[dict[str, Any]]:
    found = _PAYING.search(speech)
    if outcome == "failed" or not found:
        return []
    amount, words = int(found.group(1)), found.group(2).casefold()
    for name, value in variables.items():
        if kind_of(value) == "number" and words.startswith(name.casefold()):
            now = _number(value, shown.get(name))
            if now is not None and ("min" not in value or now - amount >= value["min"]):
                return [_change(actor, name, "adjust", amount=-amount, reason=f"paid {amount} {name}")]
    return []


def _items(
    actor: str, outcome: str, variables: Mapping[str, Any], shown: dict[str, str], speech: str
) -> list[dict[str, Any]]:
    lists = [name for name, value in variables.items() if kind_of(value) == "items"]
    if outcome == "failed" or not lists:
        return []
    changes = []
    using = _USING.search(speech)
    for name in lists:
        held = _held(shown.get(name), variables[name])
        used = next((item for item in held if using and _named(item, using.group(1))), None)
        if used is not None:
            changes.append(_change(actor, name, "remove", item=used, reason=f"used the {used}"))
            break
    taking = _TAKING.search(speech)
    if taking:
        words = [word for word in _ENDS.sub("", " " + taking.group(1)).split() if word.casefold() not in _ARTICLES]
        item = " ".join(words[:4]).strip(" '\"")
        if item and len(item) <= 60:
            changes.append(_change(actor, lists[0], "add", item=item, reason=f"took the {item}"))
    return changes


def _conditions(
    actor: str, outcome: str, variables: Mapping[str, Any], shown: dict[str, str], speech: str
) -> list[dict[str, Any]]:
    changes = []
    for name, value in variables.items():
        if kind_of(value) != "conditions":
            continue
        on = _conditions_on(shown.get(name), value)
        for condition in value["conditions"]:
            if not _named(condition, speech):
                continue
            if outcome == "failed" and condition not in on:
                changes.append(_change(actor, name, "on", condition=condition, reason="the check failed"))
            elif outcome == "succeeded" and condition in on:
                changes.append(_change(actor, name, "off", condition=condition, reason="the check succeeded"))
    return changes


def _change(character: str, variable: str, action: str, **given: Any) -> dict[str, Any]:
    return {"character": character, "variable": variable, "action": action, **given}


def made_changes(results: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """What this round changed, in the engine's words: band effects (from roll_check) and change_sheet calls."""
    made: list[str] = []
    for name, result in results:
        if name == "roll_check":
            made += [str(text) for text in result.get("changes", []) if not str(text).startswith("no effect on ")]
        elif name == "change_sheet":
            made += [str(text) for text in result.get("changed", [])]
    return made


def sheet_lines(made: Sequence[str]) -> list[str]:
    """The narration's lines telling each change made."""
    return [f"{SHEET_LINE}{text}." for text in made]


def again_lines(world: World, replayed: Sequence[Mapping[str, Any]]) -> list[str]:
    """For a round told again: a line for each band effect the engine made again before the rehearsal was called
    (the facts it is given do not say what they changed, so the line says which effect it was)."""
    lines = []
    for result in replayed:
        named = str(result["check"])  # a fact names the check by its name; a tool answer by its key
        checks = world.rules.checks if world.rules else ()
        check = next((check for check in checks if named in (check.key, check.name)), None)
        band = next((band for band in check.bands if band.label == result["band"]), None) if check else None
        if band is None:
            continue
        for effect in band.effects:
            lines.append(
                f"{SHEET_LINE}{band.label} makes its effects again ({effect.by} {effect.variable} of {effect.of})."
            )
    return lines


_EFFECT_CHANGE = re.compile(r"^(.+?)'s (.+?) -?\d+ -> -?\d+ \([+-]\d+, effect")


def sheet_verdict(request: SheetRequest) -> dict[str, Any]:
    """The rehearsal's sheet judge: each change told when its words stand in the narration, or, for a band
    effect made again in a round told again, when a line says that effect was made again; nothing invented."""
    again = [line for line in request.narration.splitlines() if line.startswith(SHEET_LINE) and "effects again" in line]
    made = []
    for number, text in enumerate(request.made, 1):
        effect = _EFFECT_CHANGE.match(text)
        told = text in request.narration or (
            effect is not None and any(f" {effect.group(2)} of " in line for line in again)
        )
        made.append({"number": number, "told": told, "quote": text if told else ""})
    return {"made": made, "invented": []}
