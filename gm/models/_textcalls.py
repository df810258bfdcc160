"""Tool calls written as text, and prompted tool calling for servers that take no `tools`.

A model whose server has no tool parser (or was started without one) writes its calls into the
content. `text_calls` reads the common forms:

- one or several `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (Hermes, Qwen;
  the last one may be left unclosed), with any text around them kept as the message's text;
- a fenced (```json ... ```) or bare JSON object with `name` and `arguments` (or `parameters`),
  or a list of such objects, as the whole answer (OpenAI's `{"type": "function", "function":
  {...}}` written out counts too);
- Llama 3's `<|python_tag|>{"name": ..., "parameters": {...}}`, several joined by `;`.

Only calls that all name tools on offer count. Anything else (text that merely looks like JSON, a
call to no known tool, malformed JSON) stays text, and the referee's rule against raw JSON in a
narration still applies to it.

Prompted tool calling (`prompted_request`) is the way round a server that refuses `tools`: the
tools are described in a system message, earlier calls are written back as `<tool_call>` blocks
and their results as `<tool_response>` user messages, so the request holds nothing but text.
`refuses_tools` recognises the error such a server sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"\A```[a-zA-Z]*\s*(.*?)\s*```\Z", re.DOTALL)
_PYTHON_TAG = re.compile(r"\A<\|python_tag\|>\s*(.*?)\s*(?:<\|eom_id\|>|<\|eot_id\|>)?\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class WrittenCall:
    """One tool call read from text: its tool and its arguments (an object, or JSON text)."""

    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True, slots=True)
class WrittenCalls:
    """The calls found in a message's text, and the text left around them."""

    calls: tuple[WrittenCall, ...]
    text: str


def text_calls(content: str, tools: Collection[str]) -> WrittenCalls | None:
    """The tool calls written in `content`, if it holds some naming only `tools`; else None (it is text)."""
    if not tools:
        return None
    stripped = content.strip()
    if "<tool_call>" in stripped:
        bodies = _TOOL_CALL.findall(stripped)
        calls = [_call(body, tools) for body in bodies]
        if not calls or None in calls:
            return None
        return WrittenCalls(tuple(c for c in calls if c is not None), _TOOL_CALL.sub("", stripped).strip())
    tagged = _PYTHON_TAG.match(stripped)
    if tagged:
        parts = [part for part in _split_objects(tagged.group(1))]
    else:
        fenced = _FENCE.match(stripped)
        parts = [fenced.group(1) if fenced else stripped]
    found: list[WrittenCall] = []
    for part in parts:
        many = _calls(part, tools)
        if many is None:
            return None
        found.extend(many)
    return WrittenCalls(tuple(found), "") if found else None


def _calls(text: str, tools: Collection[str]) -> list[WrittenCall] | None:
    """A JSON object or list of objects, each a call naming one of `tools`; None if it is anything else."""
    if not text.startswith(("{", "[")):
        return None
    data = _json(text)
    items = data if isinstance(data, list) else [data]
    calls = [_from_object(item, tools) for item in items]
    if not calls or None in calls:
        return None
    return [c for c in calls if c is not None]


def _call(body: str, tools: Collection[str]) -> WrittenCall | None:
    return _from_object(_json(body), tools)


def _from_object(data: Any, tools: Collection[str]) -> WrittenCall | None:
    if isinstance(data, dict) and "name" not in data and isinstance(data.get("function"), dict):
        data = data["function"]  # OpenAI's own shape, {"type": "function", "function": {...}}, written out
    if not isinstance(data, dict) or data.get("name") not in tools:
        return None
    keys = set(data) - {"name", "type", "id"}
    arguments = data.get("arguments", data.get("parameters", {}))
    if not keys <= {"arguments", "parameters"} or not isinstance(arguments, dict | str):
        return None  # more than a call: an object that happens to have a "name"
    return WrittenCall(str(data["name"]), arguments)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _split_objects(text: str) -> list[str]:
    """Llama 3's calls after <|python_tag|>: one JSON object, or several joined by ';'."""
    decoder = json.JSONDecoder()
    parts: list[str] = []
    rest = text.strip()
    while rest:
        try:
            _, end = decoder.raw_decode(rest)
        except (ValueError, RecursionError):
            return [text]  # not objects: let the caller refuse it whole
        parts.append(rest[:end])
        rest = rest[end:].lstrip().removeprefix(";").lstrip()
    return parts


# Prompted tool calling


def prompted_request(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    tool_choice: str | Mapping[str, Any] | None,
) -> list[dict[str, Any]]:
    """The messages rewritten for a server that takes no tools: tools described, calls and results as text."""
    forced = None
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        forced = function.get("name") if isinstance(function, Mapping) else None
    elif tool_choice == "required":
        forced = ""
    described = prompted_tools_text([dict(tool.get("function") or {}) for tool in tools], forced)
    names: dict[str, str] = {}
    rewritten: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            blocks = []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[str(call.get("id"))] = str(function.get("name", ""))
                blocks.append(written_call(str(function.get("name", "")), _loaded(function.get("arguments", "{}"))))
            text = "\n".join(filter(None, [str(message.get("content") or "").strip(), *blocks]))
            rewritten.append({"role": "assistant", "content": text})
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "")
            rewritten.append({"role": "user", "content": tool_response_text(name, str(message.get("content", "")))})
        else:
            rewritten.append(dict(message))
    first = rewritten[0] if rewritten else {}
    if first.get("role") == "system" and isinstance(first.get("content"), str):
        # Many chat templates take one system message, at the start: the tools join it.
        rewritten[0] = {**first, "content": f"{first['content']}\n\n{described}"}
    else:
        rewritten.insert(0, {"role": "system", "content": described})
    return rewritten


def _loaded(arguments: Any) -> Any:
    if isinstance(arguments, str):
        loaded = _json(arguments)
        return loaded if loaded is not None else arguments
    return arguments


# How servers say they take no tools. Ollama: "<model> does not support tools" (400); llama.cpp's
# server without --jinja: "tools param requires --jinja flag" (400 in some builds, 500 in others);
# vLLM without a parser: '"auto" tool choice requires --enable-auto-tool-choice and
# --tool-call-parser to be set' (400). Any 400 naming tools or function calling counts too.
_NAMES_TOOLS = re.compile(r"\btools?\b|tool[ _-]?(?:choice|call)|function[ _-]?call", re.IGNORECASE)
_NO_TOOLS_AT_ALL = re.compile(r"--jinja|does not support tools|enable-auto-tool-choice", re.IGNORECASE)


def refuses_tools(status: int, message: str) -> bool:
    """Whether an error answer to a request with tools says the server or model takes no tools."""
    if status in (400, 422) and _NAMES_TOOLS.search(message):
        return True
    return status == 500 and bool(_NO_TOOLS_AT_ALL.search(message))


# How prompted tool calling describes the tools, and writes calls and their answers in text

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<tool_response>", "</tool_response>"


def prompted_tools_text(functions: Sequence[Mapping[str, Any]], forced: str | None = None) -> str:
    """The tools described for a model whose server takes none, and how to call them in text.

    `forced` names the one tool the model must call now ("" for any tool; None leaves it free).
    """
    described = "\n".join(
        json.dumps(
            {"name": f.get("name"), "description": f.get("description", ""), "parameters": f.get("parameters", {})},
            ensure_ascii=False,
        )
        for f in functions
    )
    example = written_call("tool_name", {"argument": "value"})
    lines = [
        "# Tools",
        "You can call these tools. Each is given as JSON: its name, what it does, and its parameters (JSON Schema).",
        described,
        "",
        f"To call a tool, answer with only {CALL_OPEN} blocks, one per call, each holding a JSON object with the "
        f"tool's name and its arguments, like this:\n{example}",
        f"Write nothing else in an answer that calls tools, and wait for each {RESPONSE_OPEN} before you use what "
        "it says. To answer without a tool, write plain text with no JSON in it.",
    ]
    if forced:
        lines.append(f"Now call the tool {forced}.")
    elif forced == "":
        lines.append("Now call one of the tools.")
    return "\n".join(lines)


def written_call(name: str, arguments: Any) -> str:
    """One tool call as the model writes it in prompted tool calling."""
    return f"{CALL_OPEN}{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}{CALL_CLOSE}"


def tool_response_text(name: str, content: str) -> str:
    """A tool's answer, given back as a user message in prompted tool calling."""
    try:
        value: Any = json.loads(content)  # the engine's results are JSON: given as JSON, not as a string of it
    except ValueError:
        value = content
    return f"{RESPONSE_OPEN}\n{json.dumps({'name': name, 'content': value}, ensure_ascii=False)}\n{RESPONSE_CLOSE}"
