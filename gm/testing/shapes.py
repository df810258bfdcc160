"""What real servers send: each server's documented response shapes, as steps for the fake model.

Every builder returns a `raw` step (sent verbatim, unchecked), because several of these shapes
break OpenAI's response schema, which is the point. Where each shape comes from:

- OpenAI: the reference (API reference, chat completion object): ids `call_...`, arguments as
  JSON text, `content: null` beside calls, `finish_reason: "tool_calls"`.
- vLLM (docs.vllm.ai, "Tool Calling" and "Reasoning Outputs"): needs `--enable-auto-tool-choice
  --tool-call-parser NAME` for `tools`, else a 400 whose message names both flags; with
  `--reasoning-parser` the thinking comes in `reasoning_content` (newer releases: `reasoning`);
  call ids `chatcmpl-tool-<hex>`. A Hermes/Qwen model whose calls are not parsed writes them as
  `<tool_call>` text.
- Ollama (openai/openai.go, `ToChatCompletion`): `content: ""` beside calls, thinking in
  `reasoning`, an `index` on each call, `system_fingerprint: "fp_ollama"`; a model whose template
  has no tools gets a 400 "<model> does not support tools" with `type: "api_error"`.
- llama.cpp's server (tools/server README, docs/function-calling.md): tool calls only with
  `--jinja`, else "tools param requires --jinja flag" (a 500 `server_error` in some builds, a 400
  in others); thinking in `reasoning_content` with `--reasoning-format deepseek`, else left in the
  content as `<think>...</think>`; random 32-character call ids; a `timings` object beside usage.
- LM Studio (lmstudio.ai/docs, "Tool Use"): call ids made of digits, `content: ""` beside calls,
  thinking in `reasoning_content` when "separate reasoning_content" is on; a model with only
  "default" tool support may leave a malformed call in the content as text.
- Llama 3.1/3.2 (Meta's prompt format): `<|python_tag|>{"name": ..., "parameters": {...}}`
  ending in `<|eom_id|>`, which a server without a Llama parser passes through as text.

`SHAPES` names each shape a round can be played in, with the tools mode it plays in: `native`
where the server takes `tools`, `prompted` where it refuses them (gm then describes the tools in
the prompt and reads the calls from the text). `round_script(shape)` is a game master (and judge
and memory keeper) that plays an honest round through that shape: it rolls the check, reads the
band, and narrates it.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gm.engine.instructions import instructions
from gm.models._textcalls import RESPONSE_OPEN
from gm.testing.judging import honest_judge, is_judge_request
from gm.testing.script import Raw, Request, Step, StepFunction, raw, reply

Call = tuple[str, Mapping[str, Any]]
THINKING = "The player wants the lock open. I should roll, and I guess it succeeds"


def completion(message: Mapping[str, Any], finish_reason: str | None, **extra: Any) -> dict[str, Any]:
    """A chat completion around one message, with usage (as every one of these servers sends)."""
    return {
        "id": f"chatcmpl-{secrets.token_hex(6)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "served-model",
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        **extra,
    }


def _calls(calls: list[Call], ids: Callable[[int], str | None], arguments: str = "text") -> list[dict[str, Any]]:
    made = []
    for index, (name, args) in enumerate(calls):
        sent: Any = json.dumps(args)
        if arguments == "object":
            sent = dict(args)
        elif arguments == "double":
            sent = json.dumps(json.dumps(args))
        call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": sent}}
        if (made_id := ids(index)) is not None:
            call["id"] = made_id
        made.append(call)
    return made


def openai(calls: list[Call]) -> Raw:
    """OpenAI's reference shape."""
    made = _calls(calls, lambda _: f"call_{secrets.token_hex(12)}")
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": made}
    return raw(completion(message, "tool_calls", system_fingerprint="fp_reference"))


def vllm(calls: list[Call], field: str = "reasoning_content") -> Raw:
    """vLLM with a tool parser and a reasoning parser: the thinking in its own field."""
    made = _calls(calls, lambda _: f"chatcmpl-tool-{secrets.token_hex(16)}")
    message = {"role": "assistant", "content": None, field: THINKING, "tool_calls": made}
    return raw(completion(message, "tool_calls"))


def ollama(calls: list[Call]) -> Raw:
    """Ollama: empty content beside calls, thinking in `reasoning`, an index on each call."""
    made = _calls(calls, lambda _: f"call_{secrets.token_hex(4)}")
    for index, call in enumerate(made):
        call["index"] = index
    message = {"role": "assistant", "content": "", "reasoning": THINKING, "tool_calls": made}
    return raw(completion(message, "tool_calls", system_fingerprint="fp_ollama"))


def llamacpp(calls: list[Call]) -> Raw:
    """llama.cpp's server with --jinja and --reasoning-format deepseek."""
    made = _calls(calls, lambda _: secrets.token_urlsafe(24)[:32])
    message = {"role": "assistant", "content": None, "reasoning_content": THINKING, "tool_calls": made}
    return raw(completion(message, "tool_calls", timings={"prompt_n": 100, "predicted_n": 20}))


def lmstudio(calls: list[Call]) -> Raw:
    """LM Studio: digit ids, empty content beside calls, separate reasoning_content."""
    made = _calls(calls, lambda _: str(secrets.randbelow(10**9)))
    message = {"role": "assistant", "content": "", "reasoning_content": THINKING, "tool_calls": made}
    return raw(completion(message, "tool_calls", system_fingerprint="served-model", stats={}))


def quirks(
    calls: list[Call],
    *,
    ids: Literal["missing", "empty", "kept"] = "kept",
    arguments: Literal["text", "object", "double"] = "text",
    content: str | None = None,
    finish_reason: str = "tool_calls",
) -> Raw:
    """The reference shape bent one way: ids missing or empty, arguments as an object or double-encoded,
    content beside the calls, another finish reason."""
    made_ids: dict[str, Callable[[int], str | None]] = {
        "missing": lambda _: None,
        "empty": lambda _: "",
        "kept": lambda index: f"call_{index}_{secrets.token_hex(4)}",
    }
    message = {"role": "assistant", "content": content, "tool_calls": _calls(calls, made_ids[ids], arguments)}
    return raw(completion(message, finish_reason))


def written(calls: list[Call], form: Literal["hermes", "fenced", "bare", "python_tag"], think: str = "") -> Raw:
    """Calls written into the content as text, in one of the common forms, with a reasoning block first."""
    if form == "hermes":
        text = "\n".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)
    elif form == "python_tag":
        text = "<|python_tag|>" + "; ".join(json.dumps({"name": n, "parameters": a}) for n, a in calls) + "<|eom_id|>"
    else:
        objects = [{"name": n, "arguments": a} for n, a in calls]
        body = json.dumps(objects[0] if len(objects) == 1 else objects, indent=2)
        text = f"```json\n{body}\n```" if form == "fenced" else body
    content = f"<think>{think}</think>\n\n{text}" if think else text
    return raw(completion({"role": "assistant", "content": content}, "stop"))


def no_tools(server: Literal["ollama", "vllm", "llamacpp"]) -> Raw:
    """How each server refuses a request with tools when it (or its model) takes none."""
    messages = {
        "ollama": (400, "registry.ollama.ai/library/served-model does not support tools", "api_error"),
        "vllm": (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            "BadRequestError",
        ),
        "llamacpp": (500, "tools param requires --jinja flag", "server_error"),
    }
    status, message, kind = messages[server]
    return raw({"error": {"message": message, "type": kind, "param": None, "code": status}}, status=status)


@dataclass(frozen=True)
class Shape:
    """One way a server answers: how it writes a tool call, how it refuses tools (if it does), its mode."""

    name: str
    answer: Callable[[list[Call]], Raw]
    mode: Literal["native", "prompted"] = "native"
    refuse: Raw | None = None  # the answer to a request that offers tools, for servers that take none
    reasoning: bool = True  # whether the shape carries reasoning that must be dropped
    plain: Callable[[str], Raw] | None = None  # a narration in plain text, for a round with no roll
    notes: dict[str, str] = field(default_factory=dict)


def _think_then(text: str) -> Raw:
    return raw(completion({"role": "assistant", "content": f"<think>{THINKING}</think>\n\n{text}"}, "stop"))


def _unclosed_think(text: str) -> Raw:
    # A template that opens <think> in the prompt: the answer holds only its end.
    return raw(completion({"role": "assistant", "content": f"{THINKING}\n</think>\n\n{text}"}, "stop"))


SHAPES: dict[str, Shape] = {
    shape.name: shape
    for shape in [
        Shape("openai", openai, reasoning=False),
        Shape("vllm-reasoning_content", vllm),
        Shape("vllm-reasoning", lambda calls: vllm(calls, "reasoning")),
        Shape("ollama", ollama),
        Shape("llamacpp", llamacpp),
        Shape("lmstudio", lmstudio),
        Shape("ids-missing", lambda calls: quirks(calls, ids="missing"), reasoning=False),
        Shape("ids-empty", lambda calls: quirks(calls, ids="empty"), reasoning=False),
        Shape("arguments-object", lambda calls: quirks(calls, arguments="object"), reasoning=False),
        Shape("arguments-double", lambda calls: quirks(calls, arguments="double"), reasoning=False),
        Shape("content-empty", lambda calls: quirks(calls, content=""), reasoning=False),
        Shape("stop-with-calls", lambda calls: quirks(calls, finish_reason="stop"), reasoning=False),
        Shape("hermes-text", lambda calls: written(calls, "hermes", THINKING)),
        Shape("fenced-json", lambda calls: written(calls, "fenced"), reasoning=False),
        Shape("bare-json", lambda calls: written(calls, "bare"), reasoning=False),
        Shape("llama3-python_tag", lambda calls: written(calls, "python_tag"), reasoning=False),
        Shape("think-then-narration", openai, plain=_think_then),
        Shape("think-opened-in-prompt", openai, plain=_unclosed_think),
        Shape("ollama-no-tools", lambda c: written(c, "hermes", THINKING), "prompted", no_tools("ollama")),
        Shape("vllm-no-parser", lambda c: written(c, "hermes", THINKING), "prompted", no_tools("vllm")),
        Shape("llamacpp-no-jinja", lambda c: written(c, "hermes", THINKING), "prompted", no_tools("llamacpp")),
        Shape("llama3-no-tools", lambda c: written(c, "python_tag"), "prompted", no_tools("ollama"), reasoning=False),
    ]
}
NARRATION = "The lock gives with a soft click."
SUMMARY = "Mara worked the lock."


def round_script(shape: Shape, narration: str = NARRATION, check: Mapping[str, Any] | None = None) -> StepFunction:
    """One fake serving the game master, the judge and the memory keeper, the game master answering in
    `shape`: a roll of `check` first (by default the harbour world's lock), then an honest narrate."""
    rolled = dict(check or {"check": "attempt", "character": "Mara", "target": 12, "reason": "pick the lock"})

    def step(request: Request) -> Step:
        if is_judge_request(request):
            return honest_judge(request)
        first = request["messages"][0].get("content", "")
        if not str(first).startswith(instructions("game_master")):
            return reply(SUMMARY)  # the memory keeper
        if "tools" in request and shape.refuse is not None:
            return shape.refuse
        if shape.plain is not None:
            return shape.plain(narration)
        results = _results(request)
        if not results:
            return shape.answer([("roll_check", rolled)])
        outcomes = [{"character": r["character"], "result": r["result"], "roll": r["roll"]} for r in results[-1:]]
        return shape.answer([("narrate", {"narration": narration, "outcomes": outcomes})])

    return step


def _results(request: Request) -> list[dict[str, Any]]:
    """The check results the game master was given, natively (tool messages) or prompted (user messages)."""
    found = []
    for message in request["messages"]:
        content = message.get("content")
        if not isinstance(content, str):
            continue
        if message.get("role") == "tool":
            value = json.loads(content)
        elif message.get("role") == "user" and content.startswith(RESPONSE_OPEN):
            value = json.loads(content.split("\n")[1])["content"]
        else:
            continue
        if isinstance(value, dict) and "band" in value:
            found.append(value)
    return found
