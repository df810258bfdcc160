"""Reading a completion: reasoning dropped, tool calls written as text read as calls, quirks straightened.

These test the reader (gm.models.completion) and the text-call parser (gm.models._textcalls) as pure functions;
tests/test_server_shapes.py plays the same shapes end to end over HTTP.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from gm.models._textcalls import prompted_request, refuses_tools, text_calls
from gm.models.completion import Completion, read_completion, strip_reasoning
from gm.testing._openai_schemas import load_validator, problems
from tests.support.paths import OPENAI_SCHEMAS

SCHEMA = load_validator(OPENAI_SCHEMAS / "chat-completion-request.schema.json")
TOOLS = ["roll_check", "narrate"]
ROLL = {"check": "attempt", "character": "Mara", "target": 12, "reason": "pick the lock"}
OFFERED = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {}}}}
    for name in TOOLS
]


def read(message: dict[str, Any], finish_reason: str = "stop", tools: list[str] | None = TOOLS) -> Completion:
    ids = itertools.count(1)
    data = {"choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}]}
    options = {"model": "m", "messages": [{"role": "user", "content": "I pick the lock."}]}
    return read_completion(data, options, 0, 1, lambda: f"call_gm_{next(ids)}", tools)


def sent_back(completion: Completion) -> dict[str, Any]:
    """The next request, with the assistant message and a result for each call, checked against OpenAI's schema."""
    results = [{"role": "tool", "tool_call_id": call.id, "content": "{}"} for call in completion.tool_calls]
    request = {"model": "m", "messages": [{"role": "user", "content": "Hi"}, completion.raw_message, *results]}
    assert problems(SCHEMA, request) == ""
    return request


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        ("<think>Roll first.</think>\n\nThe lock gives.", "The lock gives."),
        ("<thinking>Roll first.</thinking>The lock gives.", "The lock gives."),
        ('<think reason="x">Roll.</think>The lock gives.', "The lock gives."),
        ("<THINK>Roll.</THINK>The lock gives.", "The lock gives."),
        ("The lock gives.<think>but what if it", "The lock gives."),  # cut off inside its thinking
        ("<think>Only thinking, never an answer", ""),
        ("Opened in the prompt, so only the end shows.</think>\nThe lock gives.", "The lock gives."),
        ("Mara <think>aside</think>picks the lock.", "Mara picks the lock."),
    ],
)
def test_reasoning_blocks_are_dropped_from_the_content(content: str, kept: str) -> None:
    done = read({"content": content})
    assert (done.content or "").strip() == kept and done.reasoning
    assert "think" not in json.dumps(done.raw_message).lower()


def test_text_that_only_mentions_thinking_is_kept() -> None:
    done = read({"content": "Mara sees <thinker> written on a book about thinking."})
    assert done.content == "Mara sees <thinker> written on a book about thinking." and not done.reasoning
    assert strip_reasoning("no tags here") == "no tags here"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_fields_are_ignored_and_never_sent_back(field: str) -> None:
    done = read({"content": "The lock gives.", field: "I guess it succeeds."})
    assert done.content == "The lock gives." and done.reasoning
    assert done.raw_message == {"role": "assistant", "content": "The lock gives."}


def hermes(*calls: tuple[str, Any], key: str = "arguments") -> str:
    return "\n".join(f"<tool_call>\n{json.dumps({'name': n, key: a})}\n</tool_call>" for n, a in calls)


@pytest.mark.parametrize(
    "content",
    [
        hermes(("roll_check", ROLL)),
        hermes(("roll_check", ROLL), key="parameters"),
        f'<tool_call>{{"name": "roll_check", "arguments": {json.dumps(ROLL)}}}',  # the closing tag cut off
        f"```json\n{json.dumps({'name': 'roll_check', 'arguments': ROLL}, indent=2)}\n```",
        f"```\n{json.dumps({'name': 'roll_check', 'arguments': ROLL})}\n```",
        json.dumps({"name": "roll_check", "arguments": ROLL}),
        json.dumps({"name": "roll_check", "arguments": json.dumps(ROLL)}),  # arguments as JSON text
        json.dumps([{"name": "roll_check", "arguments": ROLL}]),
        json.dumps({"type": "function", "function": {"name": "roll_check", "arguments": json.dumps(ROLL)}}),
        json.dumps({"name": "roll_check", "arguments": json.dumps(json.dumps(ROLL))}),  # double-encoded, as text
        f"<|python_tag|>{json.dumps({'name': 'roll_check', 'parameters': ROLL})}<|eom_id|>",
        f"<|python_tag|>{json.dumps({'name': 'roll_check', 'parameters': ROLL})}",
        f"<think>I should roll.</think>\n{hermes(('roll_check', ROLL))}",
    ],
)
def test_a_tool_call_written_as_text_becomes_a_real_call(content: str) -> None:
    done = read({"content": content})
    [made] = done.tool_calls
    assert (made.id, made.name, json.loads(json.dumps(made.arguments))) in [
        ("call_gm_1", "roll_check", ROLL),
        ("call_gm_1", "roll_check", json.dumps(ROLL)),
    ]
    assert done.written_calls and done.content is None
    request = sent_back(done)
    [echoed] = request["messages"][1]["tool_calls"]
    assert echoed["id"] == "call_gm_1" and json.loads(echoed["function"]["arguments"]) == ROLL


def test_several_written_calls_each_get_an_id_and_the_words_around_them_stay() -> None:
    narrate = {"narration": "It gives.", "outcomes": []}
    done = read({"content": "Let me roll.\n" + hermes(("roll_check", ROLL), ("narrate", narrate))})
    assert [(c.id, c.name) for c in done.tool_calls] == [("call_gm_1", "roll_check"), ("call_gm_2", "narrate")]
    assert done.content == "Let me roll."
    sent_back(done)
    two = f"<|python_tag|>{json.dumps({'name': 'roll_check', 'parameters': ROLL})}; " + json.dumps(
        {"name": "narrate", "parameters": narrate}
    )
    assert [c.name for c in read({"content": two}).tool_calls] == ["roll_check", "narrate"]


@pytest.mark.parametrize(
    "content",
    [
        json.dumps({"name": "Mara", "arguments": {}}),  # names no tool
        json.dumps({"name": "roll_check", "arguments": ROLL, "mood": "tense"}),  # more than a call
        json.dumps({"character": "Mara", "result": "succeeded"}),  # JSON, but no call
        hermes(("roll_check", ROLL), ("cast_spell", {})),  # one of the calls names no tool
        '<tool_call>{"name": "roll_check", "arguments": {"check": </tool_call>',  # malformed
        f"Mara tries: {json.dumps({'name': 'roll_check', 'arguments': ROLL})}",  # JSON inside prose
        "<|python_tag|>brave_search.call(query='locks')<|eom_id|>",  # a built-in tool, not ours
        "The lock gives.",
    ],
)
def test_text_that_is_not_a_call_to_a_round_tool_stays_text(content: str) -> None:
    done = read({"content": content})
    assert done.tool_calls == [] and done.content == content and not done.written_calls


def test_calls_are_read_from_text_only_when_tools_were_offered() -> None:
    content = json.dumps({"name": "roll_check", "arguments": ROLL})
    assert read({"content": content}, tools=None).tool_calls == []  # the request offered none
    assert text_calls(content, []) is None


def test_the_already_handled_quirks_still_are() -> None:
    call = {"type": "function", "function": {"name": "roll_check", "arguments": json.dumps(ROLL)}}
    missing = read({"content": None, "tool_calls": [call, call]}, "tool_calls")
    assert [c.id for c in missing.tool_calls] == ["call_gm_1", "call_gm_2"]
    empty = read({"content": None, "tool_calls": [{**call, "id": ""}]})
    assert empty.tool_calls[0].id == "call_gm_1" and empty.finish_reason == "stop"  # "stop" beside calls
    as_object = read(
        {"content": "", "tool_calls": [{**call, "id": "c1", "function": {"name": "x", "arguments": ROLL}}]}
    )
    assert as_object.tool_calls[0].arguments == ROLL and as_object.content is None  # content "" beside calls
    double = read(
        {"tool_calls": [{**call, "id": "c2", "function": {"name": "x", "arguments": json.dumps(json.dumps(ROLL))}}]}
    )
    assert json.loads(str(double.tool_calls[0].arguments)) == ROLL
    for each in (missing, empty, as_object, double):
        sent_back(each)


def test_a_double_encoded_string_that_is_not_an_object_is_left_for_the_tool_to_refuse() -> None:
    done = read({"tool_calls": [{"id": "c", "type": "function", "function": {"name": "x", "arguments": '"[1]"'}}]})
    assert done.tool_calls[0].arguments == '"[1]"'


@pytest.mark.parametrize(
    ("status", "message", "refused"),
    [
        (400, "registry.ollama.ai/library/gemma3:4b does not support tools", True),
        (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', True),
        (500, "tools param requires --jinja flag", True),
        (400, "tools param requires --jinja flag", True),
        (400, "This model does not support function calling", True),
        (400, "maximum context length is 4096 tokens", False),
        (400, "response_format json_schema is not supported", False),
        (500, "CUDA out of memory", False),
        (404, "model 'x' not found, try pulling it first", False),
    ],
)
def test_which_errors_say_the_server_takes_no_tools(status: int, message: str, refused: bool) -> None:
    assert refuses_tools(status, message) is refused


def test_a_prompted_request_carries_the_tools_in_the_system_prompt_and_nothing_but_text() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "roll_check", "arguments": json.dumps(ROLL)}}
    messages = [
        {"role": "system", "content": "You are the game master."},
        {"role": "user", "content": "I pick the lock."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"roll": 1, "band": "Partial success"})},
    ]
    written = prompted_request(messages, OFFERED, {"type": "function", "function": {"name": "narrate"}})
    assert [m["role"] for m in written] == ["system", "user", "assistant", "user"]
    assert written[0]["content"].startswith("You are the game master.\n\n# Tools")
    assert '"name": "roll_check"' in written[0]["content"] and "Now call the tool narrate." in written[0]["content"]
    [again] = text_calls(written[2]["content"], TOOLS).calls  # type: ignore[union-attr]
    assert (again.name, again.arguments) == ("roll_check", ROLL)
    assert '"name": "roll_check"' in written[3]["content"] and '"band": "Partial success"' in written[3]["content"]
    assert problems(SCHEMA, {"model": "m", "messages": written}) == ""
    assert prompted_request([{"role": "user", "content": "Hi"}], OFFERED, None)[0]["role"] == "system"
