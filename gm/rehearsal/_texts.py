"""What the rehearsal stand-in reads from a request, and how it words what it writes (see gm.rehearsal.model).

Everything it writes starts with `MARK`; the player's words are quoted capped, on one line, and cleaned
of anything the referee would take for a tool call or a roll's number (`safe`). The memory keeper's
requests are answered here too (`memory_answer`): a round's summary is the player's first sentence and
its outcomes; a fold runs the earlier summary and the folded rounds' summaries together, newest part kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gm.engine.prompt import KEEPER_ANSWER, KeeperRound, cap, engine_note, read_fold, read_keeper_rounds
from gm.engine.referee import ROLL_MENTION, TOOL_CALL

MARK = "(rehearsal)"
SENTENCE_CHARS = 160  # cap on the player's words quoted in a narration or a reason
SUMMARY_CHARS = 300  # cap on a round's summary
FOLD_CHARS = 600  # cap on a folded running summary (its newest part is kept)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_JSON_OPENING = re.compile(r"\{")
_ROLL_NUMBER = re.compile(ROLL_MENTION + r"(?=\d)", re.IGNORECASE)


def memory_answer(messages: Sequence[Mapping[str, Any]]) -> str:
    """The memory keeper's answer: a summary of each round asked for, or a fold of earlier summaries."""
    text = next((content_of(m) for m in reversed(messages) if m.get("role") == "user"), "")
    if (folding := read_fold(text)) is not None:
        return fold(folding.summary, folding.rounds)
    if keeper_rounds := read_keeper_rounds(text):  # one line for each round, as prompts/memory_keeper.txt asks
        return "\n".join(
            (KEEPER_ANSWER.format(kept.number) if kept.number else "") + " ".join(round_summary(kept).split())
            for kept in keeper_rounds
        )
    return cap(f"{MARK} {first_sentence(text) or 'Nothing to say.'}", SUMMARY_CHARS)


def rehearsal_verdict(narration: str, character: str) -> dict[str, str]:
    """How the rehearsal's judge reads one character's outcome (see the module docstring)."""
    opening = f"{MARK} {character} "
    for line in narration.splitlines():
        told = re.search(r"([^.:]+: [^:]*\((succeeded|partial|failed)\))\.$", line)
        if line.startswith(opening) and told:
            return {"character": character, "told_as": told.group(2), "quote": told.group(1).strip()}
    return {"character": character, "told_as": "not_told", "quote": ""}


def player_message(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The index of the player's message of this round: the last user message that is not the engine's."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and engine_note(content_of(message)) is None:
            return index
    return None


def tool_results(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each tool result in `messages`, with the name of the tool call it answers."""
    names: dict[str, str] = {}
    results: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                names[str(call.get("id"))] = str(function.get("name"))
        if message.get("role") == "tool":
            try:
                content = json.loads(content_of(message))
            except json.JSONDecodeError:
                content = None
            if not isinstance(content, dict):
                content = {"error": content_of(message)}
            results.append((names.get(str(message.get("tool_call_id")), ""), content))
    return results


def tool_names(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    names: set[str] = set()
    for tool in tools:
        function = tool.get("function")
        if isinstance(function, Mapping):
            names.add(str(function.get("name")))
    return names


def round_summary(keeper_round: KeeperRound) -> str:
    """A round's summary: the player's first sentence and the outcomes."""
    said = first_sentence(keeper_round.player)
    settled = keeper_round.outcomes
    told = f"Outcomes: {clause(settled)}." if settled and settled != "none" else "Nothing was at stake."
    return cap(f"{MARK} {lead(said)}{told}", SUMMARY_CHARS)


def fold(summary: str, rounds: Sequence[tuple[int, str]]) -> str:
    """A running summary from a fold: the earlier summary and each folded round's, newest part kept."""
    parts: list[str] = []
    if summary.strip():
        parts.append(unmarked(summary))
    parts += [f"Round {number}: {unmarked(text)}" for number, text in rounds]
    told = " ".join(part for part in parts if part) or "Nothing happened yet."
    room = FOLD_CHARS - len(MARK) - 1
    if len(told) > room:
        told = "\u2026" + told[len(told) - room + 1 :]
    return f"{MARK} {told}"


def unmarked(summary: str) -> str:
    text = " ".join(summary.split())
    while text.startswith(MARK):
        text = text[len(MARK) :].strip()
    return text


def first_sentence(text: str) -> str:
    """The first sentence of `text` on one line, capped, ending in punctuation ("" for no text)."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    sentence = cap(sentence, SENTENCE_CHARS)
    return sentence if sentence[-1] in ".!?\u2026" else sentence + "."


def lead(sentence: str) -> str:
    return f"{sentence} " if sentence else ""


def safe(text: str) -> str:
    """Words fit for a narration the referee reads: no chat command, tool JSON, tool calls or roll numbers."""
    if text.lstrip().startswith("/"):
        return ""  # a command such as /roll is not story text; its facts are told on their own
    text = _JSON_OPENING.sub("(", text)
    text = TOOL_CALL.sub(r"\1\2", text)
    return _ROLL_NUMBER.sub("throw ", text)


def clause(text: str) -> str:
    """Text fit to sit inside a sentence: one line, no final full stop, capped."""
    return cap(" ".join(text.split()).rstrip("."), 300)


def content_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""
