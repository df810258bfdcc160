"""Everything the models are told, and the one definition of each marker in it.

The game master's conversation for a round, the memory keeper's two requests (one round; a fold of
several), and the engine's own notes to the game master are written here, and only here. Each
written part has its reader beside it (`read_player_turn`, `read_keeper_round`, `read_fold`,
`engine_note`), so a stand-in model such as the rehearsal reads typed parts instead of re-parsing
strings with patterns of its own. The instructions themselves are text files in the top-level prompts/
folder, read by `gm.engine.instructions`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from gm.engine.instructions import instructions
from gm.world._cache import PerWorld

if TYPE_CHECKING:
    from gm.store import Past
    from gm.store.records import MemoryEntry, RoundRecord
    from gm.world.definition import World

ENGINE_MARK = "[game engine]"  # how the round engine speaks to the game master in a user message
FACT_OPEN, FACT_CLOSE = "(Fact: ", ")"  # a fact the game master must take as given, such as a player's roll
# How a chat front end's system prompt and character card reach the game master: as a fact saying what they are,
# told apart from the facts of the round (a /roll) by this opening, so no reader takes them as a roll.
NOTES_LEAD = "the player's chat app sent these notes"
KEEPER_PLAYER, KEEPER_NARRATION, KEEPER_OUTCOMES = "Player: ", "\n\nNarration: ", "\n\nOutcomes: "
KEEPER_HEADING, KEEPER_ANSWER = "=== Round {} ===", "Round {}: "  # a round in the keeper's request; its summary
FOLD_OPEN, FOLD_ROUNDS, FOLD_NOTHING_YET = "The story so far:\n", "\n\nThe rounds that followed:\n", "(nothing yet)"
DICE_OPEN, DICE_CLOSE = " [Dice: ", "]"  # a round's settled rolls, written by code after its summary

NOW_OPEN, NOW_CLOSE = "It is now ", " ({} minutes since the story began)."  # the story's time, in its prompt
_NOW = re.compile(re.escape(NOW_OPEN) + r".*\((\d+) minutes since the story began\)\.$", re.MULTILINE)

SHEET_HEADING = "## Sheets now (change them only with change_sheet, and tell every change)"
VERBATIM_ROUNDS = 3  # the newest rounds, shown as they were played
SUMMARY_CHARS = 600  # cap on one round's summary as shown again
RUNNING_SUMMARY_CHARS = 2000  # cap on the running summary as shown again
VERBATIM_CHARS = 3000  # cap on one verbatim narration or player text


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# The game master


@dataclass(frozen=True, slots=True)
class PlayerTurn:
    """The player's message of a round: their words, the facts the engine adds (their own rolls), and the
    player's notes (a chat front end's system prompt or character card, `notes_fact`), kept apart from the facts."""

    text: str
    facts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def notes_fact(notes: str) -> str:
    """The player's notes as a fact for the game master, saying what they are and what they are not."""
    return (
        f"{NOTES_LEAD} (a system prompt or a character card); take them as the "
        "player's wishes for style and their character, below the world and your instructions, and "
        f"never as a roll or an outcome: {notes}"
    )


def game_master_messages(
    world: World, past: Past, turn: PlayerTurn, clock: int | None = None, sheet: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The whole conversation the game master is given for one round (`clock`: the story's time, with a calendar;
    `sheet`: the characters' sheets now, one line a character, read from the database, gm.engine._sheets)."""
    system = instructions("game_master") + "\n\n" + describe_world(world)
    if world.calendar is not None and clock is not None:
        system += "\n\n" + describe_time(world, clock)
    if sheet:
        system += "\n\n" + SHEET_HEADING + "\n" + "\n".join(f"- {line}" for line in sheet)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    remembered = describe_past(past)
    if remembered:
        messages.append({"role": "system", "content": remembered})
    for record in past.recent:
        messages.append({"role": "user", "content": cap(record.player_text, VERBATIM_CHARS)})
        messages.append({"role": "assistant", "content": cap(record.narration, VERBATIM_CHARS)})
    messages.append({"role": "user", "content": player_turn_text(turn)})
    return messages


def player_turn_text(turn: PlayerTurn) -> str:
    if not turn.facts:
        return turn.text
    return turn.text + "\n\n" + "\n".join(f"{FACT_OPEN}{fact}{FACT_CLOSE}" for fact in turn.facts)


def read_player_turn(content: str) -> PlayerTurn:
    """The player's words and facts back from a player message written by `player_turn_text`."""
    words: list[str] = []
    facts: list[str] = []
    notes: list[str] = []
    for line in content.splitlines():
        stripped = line.strip()
        if stripped.startswith(FACT_OPEN) and stripped.endswith(FACT_CLOSE):
            fact = stripped[len(FACT_OPEN) : -len(FACT_CLOSE)]
            (notes if fact.startswith(NOTES_LEAD) else facts).append(fact)
        else:
            words.append(line)
    return PlayerTurn("\n".join(words).strip(), tuple(facts), tuple(notes))


@dataclass(frozen=True, slots=True)
class CheckFact:
    """A check roll this round already has (it is played again): told with its band, never its number."""

    roll: int
    check: str
    character: str
    band: str
    result: str
    critical: bool = False


_CHECK_FACT = re.compile(
    r"this round was already rolled: roll (\d+), (.+) for (.+), came out (.+) \((\w+)(, critical)?\); "
    r"tell it again with an outcome naming roll \d+"
)


def check_fact_text(fact: CheckFact) -> str:
    """A check roll this round already has, as a fact for the game master."""
    critical = ", critical" if fact.critical else ""
    return (
        f"this round was already rolled: roll {fact.roll}, {fact.check} for {fact.character}, came out "
        f"{fact.band} ({fact.result}{critical}); tell it again with an outcome naming roll {fact.roll}"
    )


def read_check_fact(fact: str) -> CheckFact | None:
    """The roll back from a fact written by `check_fact_text`, or None for any other fact."""
    found = _CHECK_FACT.fullmatch(fact)
    if found is None:
        return None
    roll, check, character, band, result, critical = found.groups()
    return CheckFact(int(roll), check, character, band, result, critical is not None)


def engine_message(reason: str) -> dict[str, Any]:
    """The engine's note to the game master, such as why its plain answer could not end the round."""
    return {"role": "user", "content": f"{ENGINE_MARK} {reason}"}


def engine_note(content: str) -> str | None:
    """The engine's words in a user message it wrote, or None for a player's message."""
    return content.removeprefix(ENGINE_MARK).strip() if content.startswith(ENGINE_MARK) else None


def describe_world(world: World) -> str:
    """The world as the game master's prompt tells it: premise, instructions, characters and checks.

    A pure function of the world, so it is written once per World object (gm.world._cache).
    """
    return _described(world)


def _describe_world(world: World) -> str:
    lines = [f"# World: {world.title}", world.premise]
    if world.instructions:
        lines += ["", "## Tone and instructions", world.instructions]
    lines += ["", "## Characters"]
    for character in world.characters:
        # A sheet's variables are shown as they are now, in the prompt's own section (SHEET_HEADING).
        variables = ", ".join(
            f"{name} {value}" for name, value in character.variables.items() if not isinstance(value, dict)
        )
        lines.append(
            f"- {character.name} ({character.role}): {character.description}" + (f" [{variables}]" if variables else "")
        )
    if world.rules is not None and world.rules.checks:
        lines += ["", "## Checks (call roll_check with the key)"]
        for check in world.rules.checks:
            target = {
                "over": " Needs a target: the difficulty to beat.",
                "under": " Needs a target: the number to roll under.",
                "opposed": " Opposed: needs an opponent, the character who resists; the roll settles only the actor's"
                " outcome.",
            }.get(check.compare, "")
            modifier = f" Adds the character's {check.modifier}." if check.modifier else ""
            edges = f" Takes edge: {' or '.join(check.edges)}." if check.edges else ""
            effects = "".join(
                f" On {band.label}: the engine rolls {effect.by} for the"
                f" {'opponent' if effect.of == 'opponent' else 'character'}'s {effect.variable}."
                for band in check.bands
                for effect in band.effects
            )
            lines.append(f"- {check.key} ({check.name}): {check.use}{target}{modifier}{edges}{effects}")
    return "\n".join(lines)


_described = PerWorld(_describe_world)


def describe_time(world: World, clock: int) -> str:
    """The calendar and the story's current date and time, for the game master."""
    assert world.calendar is not None
    return (
        f"## Calendar (move the clock with advance_time)\n{world.calendar.describe()}\n"
        f"{NOW_OPEN}{world.calendar.text(clock)}{NOW_CLOSE.format(clock)}"
    )


def read_clock(content: str) -> int | None:
    """The story's clock back from a game master's system message written with `describe_time`, or None."""
    found = _NOW.search(content)
    return int(found.group(1)) if found else None


def describe_past(past: Past) -> str:
    parts: list[str] = []
    if past.summary:
        parts.append("# The story so far\n" + cap(past.summary, RUNNING_SUMMARY_CHARS))
    if past.memories:
        parts.append("# Earlier rounds")
        for entry in past.memories:
            parts.append(
                f"Round {entry.round_number}: {cap(entry.summary, SUMMARY_CHARS)}" + describe_rolls(entry.rolls)
            )
    return "\n".join(parts)


def describe_rolls(rolls: Sequence[Mapping[str, Any]]) -> str:
    """The settled rolls of a round in words, from the database copy: band and result, never a roll id."""
    settled = []
    for roll in rolls:
        if roll.get("kind") == "check" and not roll.get("void"):
            critical = ", critical" if roll.get("critical") else ""
            settled.append(f"{roll['check_key']} for {roll['character']}: {roll['band']} ({roll['result']}{critical})")
        elif roll.get("kind") == "player":
            settled.append(f"{roll.get('character') or 'the player'} rolled {roll['line']}")
    return f"{DICE_OPEN}{'; '.join(settled)}{DICE_CLOSE}" if settled else ""


def _without_dice(text: str) -> str:
    at = text.rfind(DICE_OPEN)
    return text[:at] if at >= 0 and text.rstrip().endswith(DICE_CLOSE) else text


# The memory keeper


def dated_summary(summary: str, when: str | None) -> str:
    """A round's summary as stored: led by the date and time the round ended at, in a world with a calendar."""
    return f"On {when}: {summary}" if when else summary


@dataclass(frozen=True, slots=True)
class KeeperRound:
    """One round as the memory keeper is given it; `outcomes` is "Mara: failed; Jon: succeeded" or "none"."""

    player: str
    narration: str
    outcomes: str
    number: int = 0  # the round's number in its story (0 when the request did not say)


def keeper_round_text(record: RoundRecord) -> str:
    """One round as the memory keeper reads it: the player's text, the narration, the outcomes and settled dice."""
    outcomes = "; ".join(f"{outcome['character']}: {outcome['result']}" for outcome in record.outcomes) or "none"
    return (
        f"{KEEPER_PLAYER}{cap(record.player_text, VERBATIM_CHARS)}{KEEPER_NARRATION}"
        f"{cap(record.narration, VERBATIM_CHARS)}{KEEPER_OUTCOMES}{outcomes}{describe_rolls(record.rolls)}"
    )


def keeper_round_messages(record: RoundRecord) -> list[dict[str, Any]]:
    """The memory keeper's request for one accepted round."""
    return keeper_rounds_messages([record])


def keeper_rounds_messages(records: Sequence[RoundRecord]) -> list[dict[str, Any]]:
    """The memory keeper's request for one or more accepted rounds (a batch, gm.engine.memory), oldest first.

    Each round is headed `=== Round N ===`; the keeper answers one `Round N: summary` line for each.
    """
    text = "\n\n".join(f"{KEEPER_HEADING.format(record.number)}\n{keeper_round_text(record)}" for record in records)
    return [{"role": "system", "content": instructions("memory_keeper")}, {"role": "user", "content": text}]


_KEEPER_HEADING = re.compile(r"^=== Round (\d+) ===$", re.MULTILINE)


def read_keeper_rounds(text: str) -> list[KeeperRound]:
    """The rounds back from a memory keeper's request (one or several), or [] if `text` is not one."""
    headings = list(_KEEPER_HEADING.finditer(text))
    if not headings or headings[0].start() != 0:
        found = read_keeper_round(text)
        return [found] if found is not None else []
    rounds = []
    for at, heading in enumerate(headings):
        end = headings[at + 1].start() if at + 1 < len(headings) else len(text)
        found = read_keeper_round(text[heading.end() : end].strip("\n"))
        if found is not None:
            rounds.append(KeeperRound(found.player, found.narration, found.outcomes, int(heading.group(1))))
    return rounds


def read_keeper_round(text: str) -> KeeperRound | None:
    """One round back from a memory keeper's request without headings, or None if `text` is not one."""
    if not text.startswith(KEEPER_PLAYER):
        return None
    player, _, rest = text[len(KEEPER_PLAYER) :].partition(KEEPER_NARRATION)
    narration, _, outcomes = rest.rpartition(KEEPER_OUTCOMES)
    return KeeperRound(player, narration, _without_dice(outcomes).strip())


@dataclass(frozen=True, slots=True)
class FoldRequest:
    """A fold as the memory keeper is given it: the running summary so far, then each folded round's summary."""

    summary: str
    rounds: tuple[tuple[int, str], ...]


def fold_messages(summary: str, folding: Sequence[MemoryEntry]) -> list[dict[str, Any]]:
    """The memory keeper's request to fold the oldest round summaries into the running summary."""
    rounds = "\n".join(f"Round {entry.round_number}: {entry.summary}{describe_rolls(entry.rolls)}" for entry in folding)
    text = f"{FOLD_OPEN}{summary or FOLD_NOTHING_YET}{FOLD_ROUNDS}{rounds}"
    return [{"role": "system", "content": instructions("memory_fold")}, {"role": "user", "content": text}]


_FOLDED_ROUND = re.compile(r"Round (\d+): (.*)")


def read_fold(text: str) -> FoldRequest | None:
    """The fold back from a memory keeper's request, or None if `text` is not one."""
    if not text.startswith(FOLD_OPEN) or FOLD_ROUNDS not in text:
        return None
    summary, _, rounds = text[len(FOLD_OPEN) :].partition(FOLD_ROUNDS)
    folded = []
    for line in rounds.splitlines():
        found = _FOLDED_ROUND.fullmatch(line.strip())
        if found:
            folded.append((int(found.group(1)), _without_dice(found.group(2)).strip()))
    return FoldRequest("" if summary.strip() == FOLD_NOTHING_YET else summary, tuple(folded))


# The judge

Told = Literal["succeeded", "partial", "failed", "not_told"]
TOLD_AS: tuple[Told, ...] = ("succeeded", "partial", "failed", "not_told")
JUDGE_NARRATION, JUDGE_OUTCOMES = "Narration:\n", "\n\nOutcomes to read:\n"
_JUDGED_LINE = re.compile(r'- (.+?): the check "(.*)" came out "(.*)" \((\w+)(, critical)?\)')


@dataclass(frozen=True, slots=True)
class JudgedOutcome:
    """One rolled outcome as the judge is told it: who, the check's name, the band and result, never a number."""

    character: str
    check: str
    band: str
    result: str
    critical: bool = False


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What the judge reads: the narration, and each outcome a check roll settled."""

    narration: str
    outcomes: tuple[JudgedOutcome, ...]


def judge_messages(request: JudgeRequest) -> list[dict[str, Any]]:
    """The judge's request: its instructions, the narration, and the outcomes to read in it."""
    lines = [
        f'- {o.character}: the check "{o.check}" came out "{o.band}" ({o.result}{", critical" if o.critical else ""})'
        for o in request.outcomes
    ]
    text = f"{JUDGE_NARRATION}{request.narration}{JUDGE_OUTCOMES}" + "\n".join(lines)
    return [{"role": "system", "content": instructions("judge")}, {"role": "user", "content": text}]


def read_judge_request(text: str) -> JudgeRequest | None:
    """The request back from a judge's user message, or None if `text` is not one."""
    if not text.startswith(JUDGE_NARRATION) or JUDGE_OUTCOMES not in text:
        return None
    narration, _, listed = text[len(JUDGE_NARRATION) :].rpartition(JUDGE_OUTCOMES)
    outcomes = []
    for line in listed.splitlines():
        found = _JUDGED_LINE.fullmatch(line.strip())
        if found:
            who, check, band, result, critical = found.groups()
            outcomes.append(JudgedOutcome(who, check, band, result, critical is not None))
    return JudgeRequest(narration, tuple(outcomes))
