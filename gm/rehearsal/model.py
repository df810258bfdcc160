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
  roll_check or no check matches (and it has no catch-all check), a plain narration says that
  nothing needed a roll. A check that
  cannot be rolled for the player, or cannot go either way for them, is never asked for; when no
  matching check is left, a plain narration says why of each.
- After a check roll: `narrate`, with a plain narration naming each roll's check, band and result
  (and a line for a critical band), and one outcome per roll copied from the tool result, so the
  referee accepts it the first time. Each telling opens with the next of a few phrasings ("Odile
  tries: ...", "Odile sets about it: ...", ...), so `/regenerate` reads visibly different. After a
  roll the engine refused, or a void roll (the value fell in no band), a plain narration says what
  happened, without the roll's id.
- If the engine refuses the rehearsal's own ending (a refused narrate, or refused plain text), the
  rehearsal would only say the same again, so it raises `RehearsalStuck` (a `ModelError`) and the
  round fails at once with that sentence, instead of spending the round's model calls.

Which check is rolled, for whom and at what target is `gm.rehearsal._checks`.

In a world whose sheets can change (the request offers `change_sheet`), after its check rolls and before
`narrate`, the rehearsal makes the changes `gm.rehearsal._sheets` gives (a failed check costs a wound, an
item used is used up, ...), one `change_sheet` call each, and its narration tells every change the round
made, a band effect's or its own, on a line of its own; it answers the sheet judge by the same lines.

In a world with a calendar, when the player's words say time passes ("I wait until nightfall"),
the round's first call is `advance_time` instead, with the amount `gm.rehearsal._clock` reads from
them and the story's clock in the prompt; the round then goes on as above, and its ending (plain
text or narrate) starts with a line saying how much time passed and what time it is now.

Judge requests (a user message written by `gm.engine.prompt.judge_messages`) are answered by a simple rule
applied to the rehearsal's own narrations (`rehearsal_verdict`): an outcome is told as the result in
parentheses at the end of the first narration line that starts with "(rehearsal) NAME " and reads
"CHECK: BAND (RESULT)."; with no such line it is `not_told`. The quote is "CHECK: BAND (RESULT)".
The answer is JSON text, or the forced tool call when the request offers one.

Memory-keeper requests (no `tools`) get a short summary: "(rehearsal)", the first sentence of the
round's Player line, and its outcomes. Fold requests get the earlier summary and the folded rounds'
summaries run together, cut to their newest `FOLD_CHARS` characters.

Usage is estimated at about 4 characters a token (`estimated=True`); `raw_message` is in OpenAI's
format, so the engine appends it to the messages as it would a real model's.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gm.engine.prompt import (
    JudgeRequest,
    engine_note,
    read_check_fact,
    read_clock,
    read_judge_request,
    read_player_turn,
)
from gm.engine.sheet_judge import read_sheet_request
from gm.errors import RehearsalStuck
from gm.models.client import Completion, ToolCall, Usage, estimate_tokens, message_text
from gm.rehearsal._checks import (
    acting_player,
    catch_all,
    choose_check,
    edge_for,
    opponent_for,
    ranked_checks,
    target_for,
    why_not_rolled,
)
from gm.rehearsal._clock import Advance, time_wanted
from gm.rehearsal._sheets import (
    again_lines,
    made_changes,
    planned_changes,
    sheet_lines,
    sheet_verdict,
    sheets_in_prompt,
)
from gm.rehearsal._texts import (
    MARK,
    clause,
    content_of,
    first_sentence,
    lead,
    memory_answer,
    player_message,
    rehearsal_verdict,
    safe,
    tool_names,
    tool_results,
)
from gm.world.definition import World

# How a check narration opens, with the player's words and without; told in turn (see `_narrate`).
PHRASINGS = (
    ("tries", "acts"),
    ("sets about it", "moves"),
    ("takes a breath and goes for it", "goes for it"),
)

# What the referee refuses in a narration, neutralised in quoted words: tool JSON, tool calls, roll ids.


@dataclass
class _Counts:
    """What a rehearsal model and the views it hands out for each world count together."""

    calls: int = 0  # completions answered, for the generated tool call ids
    tellings: int = 0  # check narrations written, to turn to the next phrasing each time


class RehearsalModel:
    """A `ChatModel` that plays the game master of `world` (and its memory keeper) offline; see the module.

    Made without a world (as `gm serve --model rehearsal` does), it plays each story's own world:
    `Game` asks `for_world` for a view bound to the story's world before each round. Without one, a
    game-master request fails the round with one sentence.
    """

    name = "rehearsal"

    def __init__(self, world: World | None = None, *, delay: float = 0.0) -> None:
        self.world = world
        self.delay = delay  # seconds each game-master answer takes, so a front end's "stop" can be tried
        self._counts = _Counts()

    @property
    def calls(self) -> int:
        """Completions answered so far, by this model and the views `for_world` made of it."""
        return self._counts.calls

    def for_world(self, world: World) -> RehearsalModel:
        """The same rehearsal playing `world`: it shares this model's counts, so tool call ids stay unique
        and each telling takes the next phrasing."""
        view = copy.copy(self)  # shallow: the counts are shared, and a subclass stays itself
        view.world = world
        return view

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        """The rehearsal's next message: tool calls or plain text, never a network request."""
        started = time.perf_counter()
        self._counts.calls += 1
        content: str | None
        tool_calls: list[ToolCall]
        last_user = next((content_of(m) for m in reversed(messages) if m.get("role") == "user"), "")
        if (sheet_judging := read_sheet_request(last_user)) is not None:
            content, tool_calls = self._answer(sheet_verdict(sheet_judging), tools)
        elif (judging := read_judge_request(last_user)) is not None:
            content, tool_calls = self._judge(judging, tools)
        elif tools is None:
            content, tool_calls = memory_answer(messages), []
        else:
            if self.delay > 0:
                await asyncio.sleep(self.delay)
            content, tool_calls = self._told_time(messages, *self._game_master(messages, tools))
        raw_message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:
            raw_message["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                for call in tool_calls
            ]
        prompt_text = "".join(message_text(message) for message in messages)
        if tools is not None:
            prompt_text += json.dumps([dict(tool) for tool in tools])
        usage = Usage(estimate_tokens(prompt_text), estimate_tokens(message_text(raw_message)), estimated=True)
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
        world = self.world
        if world is None:
            raise RehearsalStuck("The rehearsal model has no world to play; give it one (RehearsalModel(world)).")
        at = player_message(messages)
        turn = read_player_turn(content_of(messages[at]) if at is not None else "")
        after = list(messages[at + 1 :]) if at is not None else list(messages)
        if after and after[-1].get("role") == "user":
            reason = engine_note(content_of(after[-1])) or content_of(after[-1])
            raise RehearsalStuck(f"The rehearsal model's plain narration was refused ({clause(reason)}).")
        every = tool_results(after)
        results = [(name, result) for name, result in every if name != "advance_time"]
        replayed = _replayed(turn.facts)  # a round played again: its check rolls, told again as they came out
        if not results:
            if "advance_time" in tool_names(tools) and not any(name == "advance_time" for name, _ in every):
                advance = self._time_passing(world, messages, turn.text)
                if advance is not None:
                    return None, [self._call("advance_time", asdict(advance))]
            if not replayed:
                # Words that only let time pass ("I wait until nightfall") are no risky action: no catch-all for them.
                waited = any(name == "advance_time" and "now" in result for name, result in every)
                return self._first_call(world, turn.text, turn.facts, tools, catch_all_ok=not waited)
        elif results[-1][0] == "narrate" and "error" in results[-1][1]:
            raise RehearsalStuck(
                f"The rehearsal model's narration was refused ({clause(str(results[-1][1]['error']))})."
            )
        rolled: dict[Any, dict[str, Any]] = {}
        for called, result in results:
            if called == "roll_check" and "band" in result:
                rolled.setdefault(result.get("roll"), result)
        for result in replayed:
            rolled.setdefault(result["roll"], result)
        if rolled:
            if "change_sheet" in tool_names(tools):  # the sheet rules, one change a call (gm.rehearsal._sheets)
                planned = planned_changes(world, turn.text, list(rolled.values()), sheets_in_prompt(messages))
                asked = sum(called == "change_sheet" for called, _ in results)
                if asked < len(planned):
                    return None, [self._call("change_sheet", {"changes": [planned[asked]]})]
            narration = self._narrate(turn.text, list(rolled.values()))
            told = [*again_lines(world, replayed), *sheet_lines(made_changes(results))]
            narration["narration"] = "\n".join([narration["narration"], *told])
            return None, [self._call("narrate", narration)]
        _, last = next((item for item in reversed(results) if item[0] != "change_sheet"), results[-1])
        said = lead(safe(first_sentence(turn.text)))
        if last.get("void"):
            check, who = self._check_name(str(last.get("check"))), last.get("character")
            return (
                f"{MARK} {said}The roll landed in no band: {check} for {who} is void. Nothing was settled by the dice.",
                [],
            )
        if "error" in last:
            error = safe(str(last["error"]).split(";")[0])
            return f"{MARK} {said}The roll was refused: {clause(error)}. Nothing was settled by the dice.", []
        return f"{MARK} {said}Nothing was settled by a check.", []

    def _first_call(
        self,
        world: World,
        speech: str,
        facts: Sequence[str],
        tools: Sequence[Mapping[str, Any]],
        *,
        catch_all_ok: bool = True,
    ) -> tuple[str | None, list[ToolCall]]:
        """The round's first answer: the facts told, a check rolled, or plain text saying nothing needed a roll."""
        said = lead(safe(first_sentence(speech)))
        if facts:
            told = " ".join(safe(fact.rstrip(".")) + "." for fact in facts)
            return f"{MARK} {said}The player's own dice decide it: {told} Nothing else needed a roll.", []
        if "roll_check" not in tool_names(tools) or world.rules is None or not world.rules.checks:
            return f"{MARK} {said}Nothing here needed a roll: this world has no checks, so the story goes on.", []
        chosen = choose_check(world, speech, catch_all_ok=catch_all_ok)
        if chosen is None:
            who = acting_player(world, speech)
            fallback = catch_all(world) if catch_all_ok else None
            matching = [check for check in ranked_checks(world, speech) if check != fallback]
            if fallback is not None:
                matching.append(fallback)  # its reason is told last: it was tried last
            elif not matching:
                return f"{MARK} {said}Nothing here needed a roll: no check of this world matches these words.", []
            reasons = "; ".join(filter(None, (why_not_rolled(check, who) for check in matching)))
            return f"{MARK} {said}Nothing was rolled: {safe(reasons)}.", []
        check, character = chosen
        arguments: dict[str, Any] = {
            "check": check.key,
            "character": character.name,
            "reason": first_sentence(speech) or check.name,
        }
        target = target_for(check, character)
        if target is not None:
            arguments["target"] = target
        if (edge := edge_for(check, speech)) is not None:
            arguments["edge"] = edge
        if check.opposed and (opponent := opponent_for(world, check, character, speech)) is not None:
            arguments["opponent"] = opponent.name
        return None, [self._call("roll_check", arguments)]

    def _time_passing(self, world: World, messages: Sequence[Mapping[str, Any]], speech: str) -> Advance | None:
        """The advance_time the player's words ask for (`gm.rehearsal._clock`), given the clock in the prompt."""
        system = next((content_of(m) for m in messages if m.get("role") == "system"), "")
        clock = read_clock(system)
        if world.calendar is None or clock is None:
            return None
        return time_wanted(speech, world.calendar, clock)

    def _told_time(
        self, messages: Sequence[Mapping[str, Any]], content: str | None, calls: list[ToolCall]
    ) -> tuple[str | None, list[ToolCall]]:
        """An ending (plain text or narrate) led by a line saying how the clock moved this round, if it did."""
        at = player_message(messages)
        moved = [
            result
            for name, result in tool_results(messages[at + 1 :] if at is not None else [])
            if name == "advance_time"
        ]
        if not moved or "now" not in moved[-1]:
            return content, calls
        line = f"{MARK} Time passes ({safe(str(moved[-1].get('passed')))}): it is now {safe(str(moved[-1]['now']))}."
        if content is not None and not calls:
            return f"{line}\n{content}", calls
        told = []
        for call in calls:
            if call.name == "narrate":
                arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else dict(call.arguments)
                arguments["narration"] = f"{line}\n{arguments['narration']}"
                call = ToolCall(call.id, call.name, json.dumps(arguments))
            told.append(call)
        return content, told

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(f"rehearsal_{self._counts.calls}", name, json.dumps(arguments))

    def _narrate(self, speech: str, rolled: list[dict[str, Any]]) -> dict[str, Any]:
        lines: list[str] = []
        outcomes: list[dict[str, Any]] = []
        said = safe(first_sentence(speech))
        # Each telling takes the next phrasing, so /regenerate reads visibly different from the telling before.
        opening, bare = PHRASINGS[self._counts.tellings % len(PHRASINGS)]
        self._counts.tellings += 1
        for result in rolled:
            check = self._check_name(str(result.get("check")))
            who = str(result["character"])
            attempt = f"{who} {opening}: {said}" if said else f"{who} {bare}."
            against = f" against {result['opponent']}" if result.get("opponent") else ""
            edge = f" with {result['edge']}" if result.get("edge") else ""
            lines.append(f"{MARK} {attempt} {check}{against}{edge}: {result['band']} ({result['result']}).")
            if result.get("natural"):
                lines.append(f"{MARK} {safe(str(result['natural']))[:1].upper()}{safe(str(result['natural']))[1:]}.")
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
        if self.world is not None and self.world.rules is not None and key in self.world.rules:
            return self.world.rules[key].name
        return key

    # The judge

    def _judge(
        self, request: JudgeRequest, tools: Sequence[Mapping[str, Any]] | None
    ) -> tuple[str | None, list[ToolCall]]:
        """Verdicts by the rehearsal's rule, as JSON text, or as the forced tool call when tools are offered."""
        verdicts = {
            "outcomes": [rehearsal_verdict(request.narration, outcome.character) for outcome in request.outcomes]
        }
        return self._answer(verdicts, tools)

    def _answer(
        self, verdicts: dict[str, Any], tools: Sequence[Mapping[str, Any]] | None
    ) -> tuple[str | None, list[ToolCall]]:
        """A judge's verdicts as JSON text, or as the forced tool call when the request offers one."""
        if tools:
            return None, [self._call(tool_names(tools).pop(), verdicts)]
        return json.dumps(verdicts), []


def _replayed(facts: Sequence[str]) -> list[dict[str, Any]]:
    """The check rolls a round played again already has, from its facts, shaped as roll_check's answers."""
    return [
        {"roll": r.roll, "check": r.check, "character": r.character, "band": r.band, "result": r.result}
        | ({"critical": True} if r.critical else {})
        for fact in facts
        if (r := read_check_fact(fact)) is not None
    ]
