"""The referee: a pure function from a round's rolls and the proposed outcomes to refusals.

An outcome that disagrees with the dice never reaches the player or the story. The referee refuses:
an outcome whose result differs from its roll's result; a roll named by two outcomes; a rolled-for
character whose outcome does not name the roll; a check roll that serves no outcome; an unknown roll
id, character, or a roll named for the wrong character (an opposed roll settles the actor's outcome
only: the opponent's outcome, if any, names no roll); a roll that was void or is plain dice; an
outcome naming a roll whose band the game master had not yet been told (no narrating before the
band: a `narrate` in the same message as the `roll_check` it names guesses the result, and a guess
that happens to match is still a guess); and a narration that shows the player a roll id, raw tool
JSON or a tool call left as text, is longer than `MAX_NARRATION`, or holds a character no story can
store (a NUL). A critical band does not change the result: a critical success is still `succeeded`.
Each refusal is one sentence the model can act on.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from gm._text import unstorable

Result = Literal["succeeded", "partial", "failed"]
MAX_NARRATION = 10_000  # characters in a round's narration (a plain-text answer included)
RESULTS: tuple[Result, ...] = ("succeeded", "partial", "failed")
RollKind = Literal["check", "dice", "player"]


@dataclass(frozen=True, slots=True)
class RoundRoll:
    """What the referee knows of one roll of this round: never the number, only what it settled."""

    id: int
    kind: RollKind
    character: str | None = None
    check: str | None = None
    band: str | None = None
    result: Result | None = None  # None for plain dice, player rolls and void check rolls
    void: bool = False
    opponent: str | None = None  # an opposed check's other character, whose outcome it does not settle
    seen: bool = True  # False until the game master was told the roll's band in an earlier message


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the game master says happened to one character, and the roll that settled it, if any."""

    character: str
    result: Result
    roll: int | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """One reason an ending was refused, naming the roll and character it is about."""

    reason: str
    roll: int | None = None
    character: str | None = None


# Tool-result JSON, a tool call or an internal roll id in the story text: the player must never see the
# machinery. These are the one definition of each (the rehearsal neutralises the same in quoted words).
TOOL_JSON = re.compile(
    r"""\{\s*"(roll|band|result|check|character|critical|error|outcomes|name|arguments|parameters|narration)"\s*:"""
)
# Tool-call markup a model wrote as text that was not read as a call (it named no tool, or was malformed).
TOOL_MARKUP = re.compile(r"</?tool_call>|</?tool_response>|<\|python_tag\|>")
TOOL_CALL = re.compile(r"\b(roll_check|roll_dice|narrate)(\s*)\(")
ROLL_MENTION = r"\broll(?:\s+id)?\s*(?:#|no\.?|number)?\s*"  # "roll 12", "roll id 12", "roll #12", before the id


def referee(
    rolls: Sequence[RoundRoll],
    outcomes: Sequence[Outcome],
    narration: str,
    characters: Collection[str],
) -> list[Refusal]:
    """Every reason to refuse this ending of the round; an empty list means it may stand."""
    refusals: list[Refusal] = []
    by_id = {roll.id: roll for roll in rolls}
    known = {name.casefold(): name for name in characters}
    named_by: dict[int, int] = {}
    for index, outcome in enumerate(outcomes):
        refusals.extend(_outcome_refusals(index, outcome, by_id, known, named_by))
    refusals.extend(_unserved_rolls(rolls, outcomes, named_by))
    refusals.extend(_narration_refusals(narration, rolls))
    return refusals


def _outcome_refusals(
    index: int,
    outcome: Outcome,
    by_id: dict[int, RoundRoll],
    known: dict[str, str],
    named_by: dict[int, int],
) -> list[Refusal]:
    who, number = outcome.character, index + 1
    if who.casefold() not in known:
        names = ", ".join(sorted(known.values()))
        return [
            Refusal(f"outcome {number} names '{who}', who is not in this story; the characters are {names}", None, who)
        ]
    if outcome.roll is None:
        return []
    roll = by_id.get(outcome.roll)
    if roll is None:
        reason = f"outcome {number} names roll {outcome.roll}, which was not rolled this round"
        return [Refusal(f"{reason}; name a roll that roll_check returned", outcome.roll, who)]
    if roll.kind != "check":
        what = "a player's roll" if roll.kind == "player" else "plain dice"
        reason = f"roll {roll.id} is {what}, not a check, so it cannot settle an outcome"
        return [Refusal(f"{reason}; leave 'roll' out of {who}'s outcome", roll.id, who)]
    refusals: list[Refusal] = []
    if roll.id in named_by:
        reason = f"roll {roll.id} is named by outcomes {named_by[roll.id] + 1} and {number}"
        refusals.append(Refusal(f"{reason}; each roll settles one outcome", roll.id, who))
    named_by.setdefault(roll.id, index)
    if not roll.seen:  # whatever it says of the result is a guess: the only reason that matters
        return [*refusals, Refusal(before_the_band(roll.id), roll.id, who)]
    if roll.opponent is not None and roll.opponent.casefold() == who.casefold():
        reason = f"roll {roll.id} was rolled for {roll.character} against {who}: it settles {roll.character}'s outcome"
        refusals.append(Refusal(f"{reason} only; leave 'roll' out of {who}'s outcome", roll.id, who))
    elif (roll.character or "").casefold() != who.casefold():
        reason = f"roll {roll.id} was rolled for {roll.character}, not {who}"
        refusals.append(Refusal(f"{reason}; name it in {roll.character}'s outcome", roll.id, who))
    elif roll.void:
        reason = f"roll {roll.id} for {who} was void (no band holds its value), so it settles nothing"
        refusals.append(Refusal(f"{reason}; leave 'roll' out", roll.id, who))
    elif roll.result != outcome.result:
        reason = (
            f"roll {roll.id} for {who} came out '{roll.result}' ({roll.band}), but the outcome says '{outcome.result}'"
        )
        refusals.append(Refusal(f"{reason}; the dice decide", roll.id, who))
    return refusals


def before_the_band(roll: int) -> str:
    """The refusal of an outcome naming a roll whose band the game master has not read yet."""
    return f"you narrated before seeing roll {roll}'s band; read it, then narrate"


def _unserved_rolls(rolls: Sequence[RoundRoll], outcomes: Sequence[Outcome], named_by: dict[int, int]) -> list[Refusal]:
    """Check rolls no outcome names: a rolled-for character whose outcome ignores the roll, or no outcome at all."""
    refusals: list[Refusal] = []
    for roll in rolls:
        if roll.kind != "check" or roll.void or roll.id in named_by:
            continue
        who = roll.character or "?"
        rolled = f"roll {roll.id} ({roll.check} for {who}: '{roll.result}')"
        if any(outcome.character.casefold() == who.casefold() for outcome in outcomes):
            reason = f"{who} was rolled for, but {who}'s outcome does not name {rolled}"
        else:
            reason = f"{rolled} serves no outcome; add an outcome for {who} that names roll {roll.id}"
        refusals.append(Refusal(reason, roll.id, who))
    return refusals


def _narration_refusals(narration: str, rolls: Sequence[RoundRoll]) -> list[Refusal]:
    if len(narration) > MAX_NARRATION:
        return [
            Refusal(f"the narration is {len(narration):,} characters long, at most {MAX_NARRATION:,}; tell it shorter")
        ]
    if problem := unstorable(narration):  # a NUL: no database of a story can hold it
        return [Refusal(f"the narration {problem}, which cannot be shown or stored; tell it again without it")]
    refusals: list[Refusal] = []
    # Each pattern is searched only where the text it needs is there at all: a narration is hundreds of
    # words, and scanning it for a word boundary at every position costs more than the rest of the referee.
    if (
        TOOL_JSON.search(narration)
        or ("(" in narration and TOOL_CALL.search(narration))
        or TOOL_MARKUP.search(narration)
    ):
        refusals.append(Refusal("the narration shows raw tool data; tell the story in prose and leave the JSON out"))
    for roll in rolls:
        if str(roll.id) in narration and re.search(rf"{ROLL_MENTION}{roll.id}\b", narration, re.IGNORECASE):
            refusals.append(
                Refusal(
                    f"the narration shows the player roll id {roll.id}; ids are for outcomes, not for the story",
                    roll.id,
                    roll.character,
                )
            )
    return refusals


@dataclass(frozen=True, slots=True)
class Telling:
    """How the judge read one rolled outcome in the narration, beside what the roll said."""

    character: str
    check: str  # the check's name, as the story calls it
    band: str
    result: Result
    told_as: Literal["succeeded", "partial", "failed", "not_told"]
    quote: str = ""


TOLD_WORDS = {"succeeded": "a success", "partial": "a partial success", "failed": "a failure"}


def judge_refusals(tellings: Sequence[Telling]) -> list[Refusal]:
    """Every telling that contradicts its roll: told as another result, or not told at all.

    A critical band told without extra weight is no contradiction: only the result must agree.
    """
    refusals: list[Refusal] = []
    for telling in tellings:
        if telling.told_as == telling.result:
            continue
        what = f"{telling.character}'s {telling.check}"
        rolled = f"the roll {_RESULT_VERBS[telling.result]} ({telling.band}); tell it as {TOLD_WORDS[telling.result]}"
        if telling.told_as == "not_told":
            reason = f"the narration never tells how {what} turned out, but {rolled}"
        else:
            quoted = f" ('{telling.quote}')" if telling.quote else ""
            reason = f"the narration tells {what} as {TOLD_WORDS[telling.told_as]}{quoted}, but {rolled}"
        refusals.append(Refusal(reason, None, telling.character))
    return refusals


_RESULT_VERBS = {"succeeded": "succeeded", "partial": "was a partial success", "failed": "failed"}


def acting_refusals(acting: Collection[str], outcomes: Sequence[Outcome]) -> list[Refusal]:
    """A together round (gm.engine.table) settles every acting character's action: each needs an outcome."""
    settled = {outcome.character.casefold() for outcome in outcomes}
    return [
        Refusal(f"{who} acted this round and has no outcome; give {who} an outcome of their own", None, who)
        for who in acting
        if who.casefold() not in settled
    ]
