"""Scripts for the fake models: the steps, and what both fakes share (taking steps, answers, failures)."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

from gm.testing._openai_schemas import load_validator, problems

Request: TypeAlias = dict[str, Any]
UsageSpec: TypeAlias = tuple[int, int] | Literal["estimate"] | None
Arguments: TypeAlias = Mapping[str, Any] | str


@dataclass(frozen=True)
class ToolCallStep:
    """One tool call in a scripted answer; a string `arguments` is sent exactly as written."""

    name: str
    arguments: Arguments = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Answer:
    """A scripted 200 answer: one assistant message with text, tool calls, or both."""

    content: str | None
    tool_calls: tuple[ToolCallStep, ...] = ()
    finish_reason: str = "stop"
    usage: UsageSpec = "estimate"
    delay: float = 0.0


@dataclass(frozen=True)
class HttpError:
    """A scripted error status with an OpenAI-style error body."""

    status: int
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    code: str | None = None
    type: str | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class Raw:
    """A scripted response sent verbatim and never checked: a JSON value, or text or bytes as they are."""

    body: Any
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Step: TypeAlias = Answer | HttpError | Raw
StepFunction: TypeAlias = Callable[[Request], Step]
Script: TypeAlias = Sequence[Step | StepFunction] | StepFunction
StepT = TypeVar("StepT", Answer, HttpError, Raw)
# The in-process FunctionModel also takes functions returning an awaitable step (async def).
AnyStepFunction: TypeAlias = Callable[[Request], Step | Awaitable[Step]]
AnyScript: TypeAlias = Sequence[Step | AnyStepFunction] | AnyStepFunction


def reply(text: str, finish_reason: str = "stop", *, usage: UsageSpec = "estimate") -> Answer:
    """An answer of assistant text."""
    return Answer(text, finish_reason=finish_reason, usage=usage)


def tool_call(name: str, arguments: Arguments | None = None, *, id: str | None = None) -> ToolCallStep:
    """One tool call for `calls`; its id is generated (`call_1`, `call_2`, ...) unless given."""
    return ToolCallStep(name, {} if arguments is None else arguments, id)


def call(
    name: str,
    arguments: Arguments | None = None,
    *,
    id: str | None = None,
    content: str | None = None,
    usage: UsageSpec = "estimate",
) -> Answer:
    """An answer making one tool call."""
    return calls([tool_call(name, arguments, id=id)], content, usage=usage)


def calls(
    tool_calls: Sequence[ToolCallStep | tuple[str, Arguments]],
    content: str | None = None,
    *,
    finish_reason: str = "tool_calls",
    usage: UsageSpec = "estimate",
) -> Answer:
    """An answer making several tool calls in one message, with optional text alongside."""
    steps = tuple(each if isinstance(each, ToolCallStep) else tool_call(*each) for each in tool_calls)
    return Answer(content, steps, finish_reason, usage)


def length(text: str, *, usage: UsageSpec = "estimate") -> Answer:
    """An answer cut off at the token limit (finish_reason "length")."""
    return Answer(text, finish_reason="length", usage=usage)


def http_error(
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    code: str | None = None,
    type: str | None = None,
) -> HttpError:
    """An error response, such as 500, 429 with `Retry-After`, or 429 with code "insufficient_quota"."""
    return HttpError(status, message, dict(headers or {}), code, type)


def raw(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Raw:
    """A response sent verbatim, unchecked: for servers that bend the spec (str is sent as text, bytes as they are)."""
    return Raw(body, status, dict(headers or {}))


def slow(step: StepT, seconds: float) -> StepT:
    """The same step, answered only after `seconds` (to make a client time out)."""
    return replace(step, delay=seconds)


def estimate_tokens(text: str) -> int:
    """A token count guessed from text length, about 4 characters a token."""
    return (len(text) + 3) // 4


class Scripted:
    """What both fakes share: the script and its next step, the requests seen, failures, and the schemas."""

    def __init__(
        self,
        script: AnyScript,
        *,
        model: str = "fake-model",
        request_schema: Path | str | None = None,
        response_schema: Path | str | None = None,
    ) -> None:
        self.model = model
        self.requests: list[Request] = []
        self.failures: list[str] = []
        self._script = script
        self._next_step = 0
        self._call_ids = itertools.count(1)  # next() on a count is atomic in CPython, so threads share it safely
        self._answer_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._request_validator = load_validator(request_schema) if request_schema else None
        self._response_validator = load_validator(response_schema) if response_schema else None

    @property
    def remaining(self) -> list[Step | AnyStepFunction]:
        """The scripted steps not used yet (none for a function script, which never runs out)."""
        with self._lock:
            return [] if callable(self._script) else list(self._script[self._next_step :])

    def assert_done(self) -> None:
        """Raise AssertionError listing unused steps and recorded failures, if there are any."""
        left, failures = self.remaining, list(self.failures)
        if left or failures:
            lines = [f"{len(left)} scripted step(s) not used:", *(f"  {step!r}" for step in left)] if left else []
            lines += [f"{len(failures)} failure(s):", *(f"  {failure}" for failure in failures)] if failures else []
            raise AssertionError("the fake model's script did not finish cleanly\n" + "\n".join(lines))

    def _record(self, request: Request) -> tuple[int, str]:
        """Keep a request; its number (from 1) and what is wrong with it by the request schema, if anything."""
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        reasons = problems(self._request_validator, request)
        return number, f"request {number} does not match OpenAI's request schema: {reasons}" if reasons else ""

    def _next_item(self, number: int) -> Step | AnyStepFunction | str:
        """The next step or step function for request `number`, or the reason there is none."""
        with self._lock:
            if callable(self._script):
                return self._script
            if self._next_step < len(self._script):
                self._next_step += 1
                return self._script[self._next_step - 1]
        return f"the fake model's script ran out: request {number} came after all {len(self._script)} step(s)"

    def _completion(self, step: Answer, request: Request, number: int) -> tuple[dict[str, Any], str]:
        """A chat.completion object for an Answer step, and what is wrong with it by the response schema."""
        tool_calls: list[dict[str, Any]] = []
        for each in step.tool_calls:
            arguments = each.arguments if isinstance(each.arguments, str) else json.dumps(each.arguments)
            function = {"name": each.name, "arguments": arguments}
            tool_calls.append(
                {"id": each.id or f"call_{next(self._call_ids)}", "type": "function", "function": function}
            )
        message: dict[str, Any] = {"role": "assistant", "content": step.content, "refusal": None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        model = request.get("model")
        answer: dict[str, Any] = {
            "id": f"chatcmpl-fake-{next(self._answer_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) else self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": step.finish_reason, "logprobs": None}],
        }
        if step.usage == "estimate":
            written = "".join(c["function"]["name"] + c["function"]["arguments"] for c in tool_calls)
            prompt, completion = estimate_tokens(_prompt_text(request)), estimate_tokens((step.content or "") + written)
        elif step.usage is not None:
            prompt, completion = step.usage
        if step.usage is not None:
            answer["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        reasons = problems(self._response_validator, answer)
        why = f"bug in the script or fake: answer {number} breaks the response schema: {reasons}" if reasons else ""
        return answer, why

    def _failed(self, message: str) -> str:
        """Record a failure for assert_done(); returns the message."""
        with self._lock:
            self.failures.append(message)
        return message


def _prompt_text(request: Request) -> str:
    """The text of a request's messages (string contents only: enough for a rough estimate)."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return ""
    return "".join(m["content"] for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str))
