"""A chat completion as gm reads it: what real servers send, normalised into one shape.

OpenAI's reference shape is the easy case. Local servers and reasoning models bend it, and each
bend is straightened here, once, for both the HTTP client and the in-process fake:

- Reasoning: `<think>`/`<thinking>` blocks in the content (closed, left unclosed by a cut-off
  answer, or opened by the chat template in the prompt so only `</think>` shows) are removed; the
  `reasoning_content` (vLLM, llama.cpp, LM Studio) and `reasoning` (Ollama, newer vLLM) fields are
  ignored. None of it is kept in `raw_message`, so it is never sent back; `Completion.reasoning`
  only says that some was seen.
- Tool calls: a missing or empty id gets a generated one; arguments sent as an object, or as a
  JSON string holding JSON text (double-encoded), become one JSON object's text; `content: ""`
  beside calls is read as no text.
- Tool calls written as text (see `gm.models._textcalls`): when the message has no `tool_calls` but its
  whole text is calls to tools the request offered, they become real calls with generated ids, and
  `raw_message` is rewritten to carry them, so the next request stays valid under OpenAI's schema.

`finish_reason` is kept as sent; the round engine goes by the calls, not by it (servers send
"stop" beside tool calls).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from gm._text import storable
from gm.models._textcalls import text_calls


@dataclass(frozen=True)
class ToolCall:
    """One tool call; `arguments` is as received: JSON text normally, an object from some servers."""

    id: str
    name: str
    arguments: str | dict[str, Any]


@dataclass(frozen=True)
class Usage:
    """Tokens a completion cost; `estimated` when the server sent no usage and text length stood in."""

    prompt_tokens: int
    completion_tokens: int
    estimated: bool

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    """The model's answer, with what it cost; `raw_message` can be appended to the messages as is.

    `content` never holds reasoning; `reasoning` says whether any was seen (and dropped).
    `written_calls` says the tool calls were read from the text rather than from `tool_calls`.
    """

    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage
    latency_ms: int  # from the first attempt to the answer, waits included
    attempts: int
    raw_message: dict[str, Any]
    reasoning: bool = False
    written_calls: bool = False


# A reasoning model's thinking: <think>...</think> or <thinking>...</thinking> (attributes allowed);
# an unclosed block runs to the end of the answer (it was cut off).
_REASONING = re.compile(
    r"<(?:think|thinking)(?:\s[^>]*)?>.*?(?:</(?:think|thinking)\s*>|\Z)", re.IGNORECASE | re.DOTALL
)
# A closing tag left once whole blocks are gone: the chat template opened the block in the prompt
# (as DeepSeek-R1's and Qwen3's do), so everything before it is thinking too.
_OPENED_IN_THE_PROMPT = re.compile(r"\A.*</(?:think|thinking)\s*>", re.IGNORECASE | re.DOTALL)
REASONING_FIELDS = ("reasoning_content", "reasoning")


def strip_reasoning(text: str) -> str:
    """`text` without reasoning blocks (closed, unclosed, or opened in the prompt); not stripped of spaces."""
    return _OPENED_IN_THE_PROMPT.sub("", _REASONING.sub("", text))


def has_reasoning(text: str) -> bool:
    """Whether `text` holds a reasoning block or the end of one."""
    return strip_reasoning(text) != text


def read_completion(
    data: Any,
    options: dict[str, Any],
    latency_ms: int,
    attempts: int,
    new_id: Callable[[], str],
    tool_names: Collection[str] | None = None,
) -> Completion:
    """A chat completion's JSON as a Completion; ValueError or TypeError says what is wrong with it.

    `new_id` names a tool call that came without an id. `tool_names` are the tools a call written
    as text may name (by default those in `options`; prompted tool calling sends none there).
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("it has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError("its first choice has no message")
    sent = _text(message.get("content"))
    reasoning = any(message.get(name) for name in REASONING_FIELDS)
    content = sent
    if sent is not None:
        content = strip_reasoning(sent)
        reasoning = reasoning or content != sent
    tool_calls = [_tool_call(each, new_id) for each in message.get("tool_calls") or []]
    written = False
    if not tool_calls and content:
        names = tool_names if tool_names is not None else _offered(options)
        found = text_calls(content, names)
        if found is not None:
            content = found.text or None
            tool_calls = [ToolCall(new_id(), call.name, normal_arguments(call.arguments)) for call in found.calls]
            written = True
    if tool_calls and content is not None and not content.strip():
        content = None  # `content: ""` beside calls (Ollama, LM Studio) says nothing
    raw_message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        raw_message["tool_calls"] = [_call_json(call) for call in tool_calls]
    finish_reason = choices[0].get("finish_reason")
    return Completion(
        content=content,
        tool_calls=tool_calls,
        # Stored with the call's record: kept short, and free of what a database cannot hold.
        finish_reason=storable(finish_reason[:40]) if isinstance(finish_reason, str) else None,
        usage=_usage(data.get("usage"), options, raw_message),
        latency_ms=latency_ms,
        attempts=attempts,
        raw_message=raw_message,
        reasoning=reasoning,
        written_calls=written,
    )


def _call_json(call: ToolCall) -> dict[str, Any]:
    """A tool call as OpenAI's schema has it in a request: arguments always JSON text."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": _json_text(call.arguments)}}


def _offered(options: Mapping[str, Any]) -> list[str]:
    """The names of the function tools a request offered."""
    names = []
    for tool in options.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def _tool_call(data: Any, new_id: Callable[[], str]) -> ToolCall:
    # A custom tool call carries {"name", "input"} where a function call carries {"name", "arguments"}.
    function = (data.get("function") or data.get("custom")) if isinstance(data, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError("a tool call has no name")
    arguments = normal_arguments(function.get("arguments", function.get("input", "")))
    call_id = data.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = new_id()  # some local servers omit ids, but a tool's answer must name the call it answers
    return ToolCall(call_id, function["name"], arguments)


def normal_arguments(arguments: Any) -> str | dict[str, Any]:
    """A call's arguments as an object or JSON text; a JSON string holding JSON text is decoded once.

    Text that is not JSON is kept as sent, so the tool can say what is wrong with it.
    """
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return json.dumps(arguments)  # null, a list or a number: kept as JSON text, and refused by the tool
    try:
        decoded = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    if isinstance(decoded, str):  # double-encoded: "{\"check\": ...}"
        try:
            inner = json.loads(decoded)
        except (ValueError, RecursionError):
            return arguments
        if isinstance(inner, dict):
            return json.dumps(inner)
    return arguments


def estimate_tokens(text: str) -> int:
    """Tokens guessed from text length: 4 characters a token, rounded up."""
    return (len(text) + 3) // 4


def _usage(data: Any, options: dict[str, Any], raw_message: dict[str, Any]) -> Usage:
    """The server's usage, or one estimated from message text, tool names and arguments, and the tools' JSON."""
    if isinstance(data, dict):
        prompt, completion = data.get("prompt_tokens"), data.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int):
            return Usage(prompt, completion, estimated=False)
    prompt_text = "".join(message_text(message) for message in options["messages"])
    if "tools" in options:
        prompt_text += json.dumps(options["tools"])
    return Usage(estimate_tokens(prompt_text), estimate_tokens(message_text(raw_message)), estimated=True)


def message_text(message: Mapping[str, Any]) -> str:
    """What a message costs in tokens: its text, and its tool calls' names and arguments."""
    parts = [_text(message.get("content")) or ""]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts += [str(function.get("name", "")), _json_text(function.get("arguments", ""))]
    return "".join(parts)


def _text(content: Any) -> str | None:
    """Message content as text; content parts (some servers send them) are joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise TypeError(f"its content is {type(content).__name__}, expected text")


def _json_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
