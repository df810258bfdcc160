"""The narration judge: reads the narration the player will read and says how it tells each rolled outcome.

The referee checks the outcomes the game master declares; the judge checks the words. After the
referee accepts an ending that names at least one check roll, the judge model is asked, for each
such outcome, how the narration tells it: `succeeded`, `partial`, `failed` or `not_told`, with a
short quote of the words it read that from. It is told the check names, band labels, results and
character names and the narration, never a number. `gm.engine.referee.judge_refusals` then refuses any
telling that differs from the roll.

The answer has a fixed shape, `{"outcomes": [{"character", "told_as", "quote"}]}`, asked for in the
best way the judge's server supports, found once per Judge (that is, per process) and remembered:

1. `response_format` of type `json_schema`, strict (`json_schema`);
2. where the server refuses that with a 400 or 422, one forced tool call (`tool`);
3. where it refuses tools too, JSON in the text (`text`).

Each call records which of the three it used. A malformed or incomplete answer is asked for once
more, with what was wrong; after that the judge has failed, and so has the round (`JudgeFailed`, a
`RoundFailed`: rolls kept, nothing else written). A judge that cannot be reached raises the model
client's `OperatorError`, as an unreachable game master does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gm.config import Settings
from gm.engine.prompt import TOLD_AS, JudgeRequest, Told, judge_messages
from gm.errors import JudgeFailed, ModelRequestRejected
from gm.models.client import PLACEHOLDER_API_KEY, ChatModel, Completion, ModelSettings
from gm.models.completion import strip_reasoning
from gm.store import RollRecord
from gm.world.definition import World

Mode = Literal["json_schema", "tool", "text"]
MODES: tuple[Mode, ...] = ("json_schema", "tool", "text")
FORMAT_NAME = "narration_verdicts"
QUOTE_CHARS = 300  # a quote longer than this is cut: it is shown in a refusal and in the transcript
REFUSED_FORMAT_STATUSES = frozenset({400, 422})  # how servers say "I do not support that parameter"

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "outcomes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "character": {"type": "string"},
                    "told_as": {"type": "string", "enum": list(TOLD_AS)},
                    "quote": {"type": "string"},
                },
                "required": ["character", "told_as", "quote"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["outcomes"],
    "additionalProperties": False,
}
VERDICT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FORMAT_NAME,
        "description": "Give how the narration tells each outcome.",
        "parameters": VERDICT_SCHEMA,
    },
}
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": FORMAT_NAME, "strict": True, "schema": VERDICT_SCHEMA},
}

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def judge_settings(master: ModelSettings, settings: Settings, model: str | None = None) -> ModelSettings:
    """Where the judge's model is: `model` (from `--judge`) or GM_JUDGE_MODEL, else the game master's model;
    GM_JUDGE_BASE_URL and GM_JUDGE_API_KEY, else the game master's endpoint and key (`settings`, gm.config)."""
    base_url = settings.judge_base_url
    api_key = settings.judge_api_key
    name = model or settings.judge_model or master.model
    if base_url is None:
        return replace(master, model=name, api_key=api_key or master.api_key)
    return replace(master, base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, model=name)


@dataclass(frozen=True, slots=True)
class Verdict:
    """How the narration tells one character's rolled outcome, and the words it was read from."""

    character: str
    told_as: Told
    quote: str


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One call to the judge model: what it answered and how the answer was asked for."""

    completion: Completion
    mode: Mode


@dataclass
class Judgement:
    """The judge's reading of one narration: a verdict per judged character, and the calls it took."""

    verdicts: list[Verdict]
    model: str
    calls: list[JudgeCall] = field(default_factory=list)


class Judge:
    """Asks a model how a narration tells each rolled outcome (see the module docstring)."""

    def __init__(self, model: ChatModel, name: str) -> None:
        self.model = model
        self.name = name
        self.mode: Mode | None = None  # found on the first call, then kept for this process

    async def judge(self, request: JudgeRequest) -> Judgement:
        """The verdicts for `request`; raises JudgeFailed after two unusable answers."""
        judgement = Judgement([], self.name)
        messages = judge_messages(request)
        problem = ""
        for _ in range(2):
            completion, mode = await self._ask(messages)
            judgement.calls.append(JudgeCall(completion, mode))
            try:
                judgement.verdicts = read_verdicts(_answer_text(completion, mode), request)
                return judgement
            except ValueError as error:
                problem = str(error)
            messages = [
                *messages,
                {"role": "assistant", "content": _answer_text(completion, mode)[:2000] or "(nothing)"},
                {"role": "user", "content": f"That answer cannot be used: {problem}. Answer again with the JSON only."},
            ]
        raise JudgeFailed(f"the judge of the narration gave no usable verdict ({problem}); try again")

    async def ask_json(
        self, messages: list[dict[str, Any]], name: str, schema: dict[str, Any]
    ) -> tuple[Completion, Mode, str]:
        """One call asking for JSON of `schema` (named `name`), in the best mode the server accepts; the answer's
        JSON text with it (the sheet judge's way in: gm.engine.sheet_judge)."""
        completion, mode = await self._ask(messages, name, schema)
        return completion, mode, _answer_text(completion, mode)

    async def _ask(
        self, messages: list[dict[str, Any]], name: str = FORMAT_NAME, schema: dict[str, Any] = VERDICT_SCHEMA
    ) -> tuple[Completion, Mode]:
        """One call, in the best mode the server accepts; a refused mode is dropped for good."""
        start = MODES.index(self.mode) if self.mode else 0
        for mode in MODES[start:]:
            try:
                completion = await self._call(messages, mode, name, schema)
            except ModelRequestRejected as rejected:
                if rejected.status in REFUSED_FORMAT_STATUSES and mode != "text":
                    continue  # this server has no such feature: try the next way
                raise
            self.mode = mode
            return completion, mode
        raise AssertionError("the text mode raises or returns")  # pragma: no cover

    async def _call(self, messages: list[dict[str, Any]], mode: Mode, name: str, schema: dict[str, Any]) -> Completion:
        if mode == "json_schema":
            if name == FORMAT_NAME:
                return await self.model.complete(messages, response_format=RESPONSE_FORMAT)
            answer_format = {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
            return await self.model.complete(messages, response_format=answer_format)
        if mode == "tool":
            choice = {"type": "function", "function": {"name": name}}
            tool = VERDICT_TOOL if name == FORMAT_NAME else _tool(name, schema)
            return await self.model.complete(messages, tools=[tool], tool_choice=choice)
        return await self.model.complete(messages)


def _tool(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": "Give your reading.", "parameters": schema}}


def _answer_text(completion: Completion, mode: Mode) -> str:
    """The JSON text of an answer: the forced tool call's arguments, or the message's text."""
    if mode == "tool" and completion.tool_calls:
        arguments = completion.tool_calls[0].arguments
        return arguments if isinstance(arguments, str) else json.dumps(arguments)
    return str(completion.content or "")


def json_answer(text: str) -> Any:
    """The JSON in a judge's answer: reasoning blocks and code fences removed, the outermost braces taken from
    words around them; ValueError if what is left is not JSON."""
    cleaned = strip_reasoning(text).strip()
    fenced = _FENCE.search(cleaned)
    if fenced:
        cleaned = fenced.group(1).strip()
    elif not cleaned.startswith("{") and "{" in cleaned:
        cleaned = cleaned[cleaned.index("{") : cleaned.rindex("}") + 1]
    try:
        return json.loads(cleaned)
    except (json.JSONDecodeError, ValueError, RecursionError):
        raise ValueError("it is not a JSON object") from None


def read_verdicts(text: str, request: JudgeRequest) -> list[Verdict]:
    """The verdicts in a judge's answer, one per judged character in the request's order.

    Reasoning blocks and code fences are removed first. Anything else wrong (not JSON, the wrong
    shape, a character missing or named twice, one not asked about) raises ValueError with the reason.
    """
    data = json_answer(text)
    items = data.get("outcomes") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError('it has no "outcomes" list')
    asked = {outcome.character.casefold(): outcome.character for outcome in request.outcomes}
    found: dict[str, Verdict] = {}
    for item in items:
        if not isinstance(item, Mapping):
            raise ValueError("an outcome is not an object")
        who, told, quote = item.get("character"), item.get("told_as"), item.get("quote", "")
        if not isinstance(who, str) or who.casefold() not in asked:
            raise ValueError(f"it names {who!r}, who was not asked about")
        if told not in TOLD_AS:
            raise ValueError(f"told_as for {who} is {told!r}, not one of {', '.join(TOLD_AS)}")
        if who.casefold() in found:
            raise ValueError(f"it names {who} twice")
        text_quote = quote if isinstance(quote, str) else ""
        # The quote is stored and shown: no control characters (a NUL cannot even be stored on PostgreSQL).
        printable = "".join(ch for ch in text_quote if ch.isprintable() or ch.isspace())
        found[who.casefold()] = Verdict(asked[who.casefold()], told, " ".join(printable.split())[:QUOTE_CHARS])
    missing = [name for key, name in asked.items() if key not in found]
    if missing:
        raise ValueError(f"it says nothing of {', '.join(missing)}")
    return [found[outcome.character.casefold()] for outcome in request.outcomes]


def check_name(world: World, roll: RollRecord) -> str:
    """The name of the check a roll was made for, as the judge is told it (its key where the world has none)."""
    if world.rules is not None and roll.check_key in world.rules:
        return world.rules[str(roll.check_key)].name
    return str(roll.check_key)
