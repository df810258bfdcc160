"""An offline stand-in for the model, so a world's author can rehearse a world without one.

    game = Game(RehearsalModel(load_world(Path("worlds/harbor"))))

`RehearsalModel(world)` implements the `ChatModel` protocol with no network at all. It plays the
game master through the same tools and referee as a real model: it only emits tool calls (the
round engine rolls, stores and referees them) and plain text. Everything it writes starts with
"(rehearsal)", so a rehearsed story can never be mistaken for a played one.

A game-master request (one that carries `tools`) is answered from where the round stands:

- The round's first call (no tool result since the player's message): if the message carries facts
  (lines "(Fact: ...)", dice the player rolled), a plain narration repeats them and nothing is
  rolled. Otherwise the best-matching check is rolled with `roll_check`, or, when the world offers no
  roll_check or no check matches, a plain narration says that nothing needed a roll.
- After a check roll: `narrate`, with a plain narration naming each roll's check, band and result
  (and a line for a critical band), and one outcome per roll copied from the tool result, so the
  referee accepts it the first time. After a roll the engine refused, or a void roll (the value fell
  in no band), a plain narration says what happened, without the roll's id.
- If the engine refuses the rehearsal's own ending (a refused narrate, or refused plain text), the
  rehearsal would only say the same again, so it raises `RehearsalStuck` (a `ModelError`) and the
  round fails at once with that sentence, instead of spending the round's model calls.

Which check (`choose_check`): the player's words and each check's key, name and `use` are made into
sets of words: lower case, split on anything but letters and digits (so `pick_lock` is two words),
words of one letter and very common words (`COMMON_WORDS`: articles, pronouns, prepositions,
auxiliaries, "try") dropped, and crudely stemmed (`stem`: a trailing "ing" or "ed", then a doubled
final consonant, or a trailing "s" but not "ss", so picks, picked and picking all become pick).
A check scores the number of distinct words it shares with the player's text. The highest score
wins, ties going to the check listed first in dice.json; a check that scores 0 is never rolled. If
the character cannot be rolled for with a check (it lacks the check's modifier variable), the next
best check that scores above 0 is tried.

Who: the first character with the role "player"; with several, the player named in the text (the
earliest named, as a whole word, ignoring case), else the first.

Targets (`target_for`): an `absolute` check gets none. An `over` check gets a middling difficulty:
the mean of what its dice read (total, or count of successes) rounded half up, so that without a
modifier the roll meets the target about half the time (exactly half for one die: 11 for 1d20,
7 for 2d6); the character's modifier then shifts the odds as it should. An `under` check gets the
character's whole-number variable whose name shares the most words with the check's key, name and
use (the check's own modifier variable excluded; ties go to the variable listed first), so a
"medicine" check rolls under the character's "medicine"; with no such variable, the mean rounded
half down (50 for d%, the midpoint of the range for dice without keep or drop).

Memory-keeper requests (no `tools`) get a short summary: "(rehearsal)", the first sentence of the
round's Player line, and its outcomes. Fold requests get the earlier summary and the folded rounds'
summaries run together, cut to their newest `FOLD_CHARS` characters.

Usage is estimated at about 4 characters a token (`estimated=True`); `raw_message` is in OpenAI's
format, so the engine appends it to the messages as it would a real model's.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from gm import dice
from gm.memory import prompt
from gm.model import Completion, ModelError, ToolCall, Usage, estimate_tokens
from gm.rules import Check
from gm.worlddef import Character, CharacterCannotRoll, World, whole_number

MARK = "(rehearsal)"
ENGINE_PREFIX = "[game engine]"  # how the round engine speaks to the game master in a user message
SENTENCE_CHARS = 160  # cap on the player's words quoted in a narration or a reason
SUMMARY_CHARS = 300  # cap on a round's summary
FOLD_CHARS = 600  # cap on a folded running summary (its newest part is kept)
ESTIMATE_SAMPLES = 20_000  # for the mean of dice too costly for exact odds; a target needs no more

_COMMON = """
    a an the and or but nor so yet if then than as at by for from in into onto of off on out over
    under up down to toward towards with without within through about above across after against
    along among around before behind below beneath beside between beyond during near past since
    until upon via i me my mine myself we us our ours you your yours he him his she her hers it its
    they them their theirs this that these those there here what which who whom whose when where why
    how is are was were be been being am do does did done doing have has had having will would can
    could shall should may might must let lets not no yes all any some each every both either neither
    other another such own same just very too also only again once more most much many few now still
    try tries tried trying get gets got go goes going went
"""
COMMON_WORDS = frozenset(_COMMON.split())

_WORD = re.compile(r"[^\W_]+")
_FACT = re.compile(r"^\(Fact: (.*)\)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# What the referee refuses in a narration, neutralised in quoted words: tool JSON, tool calls, roll ids.
_JSON_OPENING = re.compile(r"\{")
_TOOL_CALL = re.compile(r"\b(roll_check|roll_dice|narrate)(\s*)\(")
_ROLL_NUMBER = re.compile(r"\broll(?=(?:\s+id)?\s*(?:#|no\.?|number)?\s*\d)", re.IGNORECASE)
_ROLL_ID = re.compile(r"\broll \d+\b")


class RehearsalStuck(ModelError):
    """The engine refused the rehearsal's own ending; saying it again would not help, so the round fails."""


def words(text: str) -> frozenset[str]:
    """The distinct stemmed words of `text` that carry meaning (see the module docstring)."""
    found: set[str] = set()
    for word in _WORD.findall(text.casefold()):
        if len(word) < 2 or word in COMMON_WORDS:
            continue
        stemmed = stem(word)
        if stemmed not in COMMON_WORDS:
            found.add(stemmed)
    return frozenset(found)


def stem(word: str) -> str:
    """A crude stem: "ing" (3 letters left) or "ed" (4 left) dropped, then a doubled final consonant
    (not l, s or z) halved; or else a final "s" (3 letters left, not "ss") dropped."""
    for ending, left in (("ing", 3), ("ed", 4)):
        if word.endswith(ending) and len(word) - len(ending) >= left:
            word = word[: -len(ending)]
            if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouylsz":
                word = word[:-1]
            return word
    if word.endswith("s") and not word.endswith("ss") and len(word) - 1 >= 3:
        return word[:-1]
    return word


def check_words(check: Check) -> frozenset[str]:
    """The words a check is matched by: its key, name and use."""
    return words(f"{check.key} {check.name} {check.use}")


def score(check: Check, text: str) -> int:
    """How many distinct words the player's `text` shares with the check's key, name and use."""
    return len(words(text) & check_words(check))


def ranked_checks(world: World, text: str) -> list[Check]:
    """The world's checks that share a word with `text`, best first; ties keep dice.json's order."""
    if world.rules is None:
        return []
    scored = [(score(check, text), index, check) for index, check in enumerate(world.rules.checks)]
    return [check for points, _, check in sorted(scored, key=lambda item: (-item[0], item[1])) if points > 0]


def acting_player(world: World, text: str) -> Character:
    """The player character who acts: with several players, the one named earliest in `text`, else the first."""
    players = world.players
    if len(players) == 1:
        return players[0]
    named: list[tuple[int, Character]] = []
    for player in players:
        found = re.search(rf"(?<!\w){re.escape(player.name)}(?!\w)", text, re.IGNORECASE)
        if found:
            named.append((found.start(), player))
    return min(named, key=lambda item: item[0])[1] if named else players[0]


def choose_check(world: World, text: str) -> tuple[Check, Character] | None:
    """The best-matching check that can be rolled for the acting player, and that player; None if none."""
    character = acting_player(world, text)
    for check in ranked_checks(world, text):
        try:
            world.modifier_for(check, character)
        except CharacterCannotRoll:
            continue
        return check, character
    return None


def target_for(check: Check, character: Character) -> int | None:
    """The target the rehearsal gives a roll of `check` for `character` (see the module docstring)."""
    if check.compare == "absolute":
        return None
    mean = _mean(check)
    if check.compare == "over":
        return math.floor(mean + Fraction(1, 2))
    wanted = check_words(check)
    best: tuple[int, int] | None = None  # (shared words, value)
    for name, value in character.variables.items():
        number = whole_number(value)
        if number is None or name == check.modifier:
            continue
        shared = len(words(name) & wanted)
        if shared > 0 and (best is None or shared > best[0]):
            best = (shared, number)
    return best[1] if best is not None else math.ceil(mean - Fraction(1, 2))


def _mean(check: Check) -> Fraction:
    """The mean of what the check's dice read: the total, or the count of successes."""
    return _mean_of(check.dice.text, check.hit if check.reading == "successes" else None)


@functools.lru_cache(maxsize=256)
def _mean_of(notation: str, hit: int | None) -> Fraction:
    # Kept by notation: exact odds of big dice can take a second or two, and a check is rolled every round.
    return dice.odds(notation, hit, samples=ESTIMATE_SAMPLES).mean


class RehearsalModel:
    """A `ChatModel` that plays the game master of `world` (and its memory keeper) offline; see the module."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.calls = 0  # completions answered, for the generated tool call ids

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
    ) -> Completion:
        """The rehearsal's next message: tool calls or plain text, never a network request."""
        started = time.perf_counter()
        self.calls += 1
        content: str | None
        tool_calls: list[ToolCall]
        if tools is None:
            content, tool_calls = self._memory(messages), []
        else:
            content, tool_calls = self._game_master(messages, tools)
        raw_message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            raw_message["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                for call in tool_calls
            ]
        prompt_text = "".join(_message_text(message) for message in messages)
        if tools is not None:
            prompt_text += json.dumps([dict(tool) for tool in tools])
        usage = Usage(estimate_tokens(prompt_text), estimate_tokens(_message_text(raw_message)), estimated=True)
        return Completion(
            content=content,
            tool_calls=tool_calls,
            finish_reason="tool_calls" if tool_calls else "stop",
            usage=usage,
            latency_ms=round((time.perf_counter() - started) * 1000),
            attempts=1,
            raw_message=raw_message,
        )

    # The game master

    def _game_master(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> tuple[str | None, list[ToolCall]]:
        at = _player_message(messages)
        player_text = _content(messages[at]) if at is not None else ""
        after = list(messages[at + 1 :]) if at is not None else list(messages)
        if after and after[-1].get("role") == "user":
            reason = _content(after[-1]).removeprefix(ENGINE_PREFIX).strip()
            raise RehearsalStuck(f"The rehearsal model's plain narration was refused ({_clause(reason)}).")
        results = _tool_results(after)
        if not results:
            return self._first_call(player_text, tools)
        name, last = results[-1]
        if name == "narrate" and "error" in last:
            raise RehearsalStuck(f"The rehearsal model's narration was refused ({_clause(str(last['error']))}).")
        rolled: dict[Any, dict[str, Any]] = {}
        for called, result in results:
            if called == "roll_check" and "band" in result:
                rolled.setdefault(result.get("roll"), result)
        if rolled:
            return None, [self._call("narrate", self._narrate(player_text, list(rolled.values())))]
        said = _lead(_safe(_first_sentence(_speech(player_text))))
        if "error" in last:
            what = "landed in no band" if "no band" in str(last["error"]) else "was refused"
            error = _safe(_ROLL_ID.sub("the roll", str(last["error"]).split(";")[0]))
            return f"{MARK} {said}The roll {what}: {_clause(error)}. Nothing was settled by the dice.", []
        return f"{MARK} {said}Nothing was settled by a check.", []

    def _first_call(self, player_text: str, tools: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[ToolCall]]:
        """The round's first answer: the facts told, a check rolled, or plain text saying nothing needed a roll."""
        speech = _speech(player_text)
        said = _lead(_safe(_first_sentence(speech)))
        facts = [found.group(1) for line in player_text.splitlines() if (found := _FACT.match(line.strip()))]
        if facts:
            told = " ".join(_safe(fact.rstrip(".")) + "." for fact in facts)
            return f"{MARK} {said}The player's own dice decide it: {told} Nothing else needed a roll.", []
        if "roll_check" not in _tool_names(tools) or self.world.rules is None or not self.world.rules.checks:
            return f"{MARK} {said}Nothing here needed a roll: this world has no checks, so the story goes on.", []
        chosen = choose_check(self.world, speech)
        if chosen is None:
            matching = ranked_checks(self.world, speech)
            if not matching:
                return f"{MARK} {said}Nothing here needed a roll: no check of this world matches these words.", []
            names = ", ".join(check.name for check in matching)
            who = acting_player(self.world, speech).name
            return (
                f"{MARK} {said}Nothing was rolled: the checks that match ({names}) cannot be rolled for {who},"
                " who lacks their modifier variable.",
                [],
            )
        check, character = chosen
        arguments: dict[str, Any] = {
            "check": check.key,
            "character": character.name,
            "reason": _first_sentence(speech) or check.name,
        }
        target = target_for(check, character)
        if target is not None:
            arguments["target"] = target
        return None, [self._call("roll_check", arguments)]

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(f"rehearsal_{self.calls}", name, json.dumps(arguments))

    def _narrate(self, player_text: str, rolled: list[dict[str, Any]]) -> dict[str, Any]:
        lines: list[str] = []
        outcomes: list[dict[str, Any]] = []
        said = _safe(_first_sentence(_speech(player_text)))
        for result in rolled:
            check = self._check_name(str(result.get("check")))
            who = str(result["character"])
            attempt = f"{who} tries: {said}" if said else f"{who} acts."
            lines.append(f"{MARK} {attempt} {check}: {result['band']} ({result['result']}).")
            if result.get("critical"):
                telling = {"succeeded": "a triumph", "failed": "a disaster"}.get(
                    str(result["result"]), "a turning point"
                )
                lines.append(
                    f"{MARK} {result['band']} is a critical band: the result stands, and a game master would tell it"
                    f" as {telling}."
                )
            outcomes.append({"character": who, "result": result["result"], "roll": result["roll"]})
        return {"narration": "\n".join(lines), "outcomes": outcomes}

    def _check_name(self, key: str) -> str:
        if self.world.rules is not None and key in self.world.rules:
            return self.world.rules[key].name
        return key

    # The memory keeper

    def _memory(self, messages: Sequence[Mapping[str, Any]]) -> str:
        system = next((_content(m) for m in messages if m.get("role") == "system"), "")
        text = next((_content(m) for m in reversed(messages) if m.get("role") == "user"), "")
        if system == prompt("memory_fold") or text.startswith("The story so far:"):
            return _fold(text)
        if system == prompt("memory_keeper") or text.startswith("Player:"):
            return _round_summary(text)
        return _cap(f"{MARK} {_first_sentence(text) or 'Nothing to say.'}", SUMMARY_CHARS)


def _player_message(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The index of the player's message of this round: the last user message that is not the engine's."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and not _content(message).startswith(ENGINE_PREFIX):
            return index
    return None


def _tool_results(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
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
                content = json.loads(_content(message))
            except json.JSONDecodeError:
                content = None
            if not isinstance(content, dict):
                content = {"error": _content(message)}
            results.append((names.get(str(message.get("tool_call_id")), ""), content))
    return results


def _tool_names(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    names: set[str] = set()
    for tool in tools:
        function = tool.get("function")
        if isinstance(function, Mapping):
            names.add(str(function.get("name")))
    return names


def _round_summary(text: str) -> str:
    """A round's summary from the memory keeper's request: the Player line's first sentence and the outcomes."""
    player = re.search(r"^Player: (.*?)(?:\n\nNarration: |\Z)", text, re.DOTALL)
    outcomes = re.search(r"\n\nOutcomes: (.*)\Z", text, re.DOTALL)
    said = _first_sentence(player.group(1)) if player else ""
    settled = re.sub(r"\s*\[Dice: .*\]\s*\Z", "", outcomes.group(1), flags=re.DOTALL).strip() if outcomes else ""
    told = f"Outcomes: {_clause(settled)}." if settled and settled != "none" else "Nothing was at stake."
    return _cap(f"{MARK} {_lead(said)}{told}", SUMMARY_CHARS)


def _fold(text: str) -> str:
    """A running summary from a fold request: the earlier summary and each folded round's, newest part kept."""
    earlier = re.search(r"\AThe story so far:\n(.*?)\n\nThe rounds that followed:\n", text, re.DOTALL)
    parts: list[str] = []
    if earlier and earlier.group(1).strip() != "(nothing yet)":
        parts.append(_unmarked(earlier.group(1)))
    rounds = text[earlier.end() :] if earlier else text
    for line in rounds.splitlines():
        found = re.match(r"Round (\d+): (.*?)(?: \[Dice: .*\])?$", line.strip())
        if found:
            parts.append(f"Round {found.group(1)}: {_unmarked(found.group(2))}")
    told = " ".join(part for part in parts if part) or "Nothing happened yet."
    room = FOLD_CHARS - len(MARK) - 1
    if len(told) > room:
        told = "\u2026" + told[len(told) - room + 1 :]
    return f"{MARK} {told}"


def _unmarked(summary: str) -> str:
    text = " ".join(summary.split())
    while text.startswith(MARK):
        text = text[len(MARK) :].strip()
    return text


def _speech(player_text: str) -> str:
    """The player's words, without the fact lines the engine appends."""
    return "\n".join(line for line in player_text.splitlines() if not _FACT.match(line.strip())).strip()


def _first_sentence(text: str) -> str:
    """The first sentence of `text` on one line, capped, ending in punctuation ("" for no text)."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    sentence = _cap(sentence, SENTENCE_CHARS)
    return sentence if sentence[-1] in ".!?\u2026" else sentence + "."


def _lead(sentence: str) -> str:
    return f"{sentence} " if sentence else ""


def _safe(text: str) -> str:
    """Words fit for a narration the referee reads: no chat command, tool JSON, tool calls or roll numbers."""
    if text.lstrip().startswith("/"):
        return ""  # a command such as /roll is not story text; its facts are told on their own
    text = _JSON_OPENING.sub("(", text)
    text = _TOOL_CALL.sub(r"\1\2", text)
    return _ROLL_NUMBER.sub("throw", text)


def _clause(text: str) -> str:
    """Text fit to sit inside a sentence: one line, no final full stop, capped."""
    return _cap(" ".join(text.split()).rstrip("."), 300)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _message_text(message: Mapping[str, Any]) -> str:
    """What a message costs in tokens: its text, and its tool calls' names and arguments."""
    parts = [_content(message)]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            arguments = function.get("arguments", "")
            parts += [str(function.get("name", "")), arguments if isinstance(arguments, str) else json.dumps(arguments)]
    return "".join(parts)
