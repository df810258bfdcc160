"""The OpenAI-compatible model client: one retry layer for transport failures, and usage accounting.

Any OpenAI-compatible server works (OpenAI, Ollama, vLLM, llama.cpp, LM Studio). The openai
client's own retries are off; `ModelClient.complete` retries with tenacity, and only what may
pass: connection errors, timeouts, and HTTP 408, 409, 429 and 5xx. A `Retry-After` (seconds or an
HTTP date) or `retry-after-ms` header is honoured up to `retry_after_cap`; otherwise the wait grows
as 0.5 s x 2^(retry - 1) plus up to 0.5 s of jitter, capped likewise. Retrying stops after
`max_attempts`, or when the next wait would end beyond `max_total_seconds` from the first attempt;
an attempt in flight is bounded by `timeout` alone, since a slow local model is not a failing one.
Other 4xx answers, and a 429 saying the quota is used up, are never retried.

Every failure is a `ModelError` whose text is one sentence for a person: `ModelNotConfigured`
(the settings), `ModelUnavailable` (the server cannot be reached, keeps failing, or answers
something that is not a chat completion), `ModelRequestRejected` (the server refused the request).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, Protocol, cast

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from gm.errors import OperatorError
from gm.text import storable

PLACEHOLDER_API_KEY = "not-needed"  # local servers (Ollama, llama.cpp) need no key, but the client insists on one
OPENAI_URL = "https://api.openai.com/v1"
RETRIED_STATUSES = frozenset({408, 409, 429})  # and every 5xx


class ModelError(OperatorError):
    """Something went wrong reaching the model; the text is one sentence for whoever runs gm."""


class ModelNotConfigured(ModelError):
    """No model is named, or no endpoint: the settings or environment need fixing."""


class ModelUnavailable(ModelError):
    """The server could not be reached, kept failing after retries, or did not answer with a chat completion."""

    def __init__(self, message: str, *, attempts: int, reason: str) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.reason = reason


class ModelRequestRejected(ModelError):
    """The server refused the request (a 4xx that retrying cannot fix, including an exhausted quota)."""

    def __init__(self, message: str, *, status: int, server_message: str, code: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message
        self.code = code


@dataclass(frozen=True)
class ModelSettings:
    """Where the model is and how patiently to ask it; times are in seconds."""

    base_url: str | None
    api_key: str = field(repr=False)
    model: str
    timeout: float = 120.0
    max_attempts: int = 4
    max_total_seconds: float = 60.0
    retry_after_cap: float = 20.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        for name in ("timeout", "max_total_seconds", "retry_after_cap"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be more than 0 seconds, not {getattr(self, name)}")

    @classmethod
    def from_env(
        cls, base_url: str | None = None, api_key: str | None = None, model: str | None = None
    ) -> ModelSettings:
        """Settings from OPENAI_BASE_URL, OPENAI_API_KEY and GM_MODEL; arguments given (as from flags) win."""
        base_url = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY", "").strip() or None
        model = model or os.environ.get("GM_MODEL", "").strip() or None
        missing = [] if model else ["GM_MODEL to the model's name"]
        if not base_url and not api_key:
            missing.append("OPENAI_BASE_URL to an OpenAI-compatible server (or OPENAI_API_KEY to use OpenAI)")
        if missing or model is None:
            raise ModelNotConfigured(
                f"The model is not configured: set {' and '.join(missing)}; "
                "or try gm offline with --model rehearsal (a stand-in that needs no model)."
            )
        return cls(base_url=base_url, api_key=api_key or PLACEHOLDER_API_KEY, model=model)


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
    """The model's answer, with what it cost; `raw_message` can be appended to the messages as is."""

    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    usage: Usage
    latency_ms: int  # from the first attempt to the answer, waits included
    attempts: int
    raw_message: dict[str, Any]


class ChatModel(Protocol):
    """Anything that answers chat completions like `ModelClient`: the round engine needs nothing more."""

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion: ...


def model_name(model: ChatModel) -> str:
    """A model's name for the records: its `name` where it has one, else its class's."""
    name = getattr(model, "name", None)
    return name if isinstance(name, str) else type(model).__name__


class ModelClient:
    """Chat completions from an OpenAI-compatible server, with one bounded retry layer (see the module docstring)."""

    def __init__(
        self,
        settings: ModelSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._sleep = sleep  # tests pass one that records the waits and returns at once
        self._clock = clock
        self._where = settings.base_url or OPENAI_URL
        # The URL is always passed: given None, the openai client would read OPENAI_BASE_URL behind the settings' back.
        self._client = openai.AsyncOpenAI(
            base_url=self._where, api_key=settings.api_key, timeout=settings.timeout, max_retries=0
        )
        self._generated_ids = 0

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        """The model's next message, retrying transport failures; raises a ModelError otherwise."""
        options = request_options(self.settings.model, messages, tools, tool_choice, response_format)
        started = self._clock()
        attempts = 0
        retrying = AsyncRetrying(
            sleep=self._sleep,
            stop=lambda state: self._should_stop(state, started),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    response = await self._client.chat.completions.with_raw_response.create(**cast(Any, options))
        except openai.APIStatusError as error:
            if is_retryable(error):
                raise self._unavailable(attempts, _reason(error, self.settings.timeout)) from None
            raise self._rejected(error) from None
        except openai.APIConnectionError as error:
            raise self._unavailable(attempts, _reason(error, self.settings.timeout)) from None
        latency_ms = round((self._clock() - started) * 1000)
        try:
            return read_completion(response.http_response.json(), options, latency_ms, attempts, self._new_id)
        except (ValueError, TypeError, RecursionError) as error:
            if isinstance(error, RecursionError):  # JSON nested thousands deep: no chat completion looks like that
                why = "it is nested too deeply"
            else:
                why = "it is not JSON" if isinstance(error, json.JSONDecodeError) else _sentence_part(str(error))
            reason = f"an answer that is not a chat completion ({why})"
            raise ModelUnavailable(
                f"The model server at {self._where} gave {reason}.", attempts=attempts, reason=reason
            ) from None

    @property
    def name(self) -> str:
        """The model's name, as requests name it."""
        return self.settings.model

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _new_id(self) -> str:
        # Some local servers omit tool call ids, but a tool's answer must name the call it answers.
        self._generated_ids += 1
        return f"call_gm_{self._generated_ids}"

    def _should_stop(self, state: RetryCallState, started: float) -> bool:
        if state.attempt_number >= self.settings.max_attempts:
            return True
        return self._clock() - started + state.upcoming_sleep > self.settings.max_total_seconds

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, openai.APIStatusError):
            hinted = retry_after_seconds(error.response.headers)
            if hinted is not None:
                return min(hinted, self.settings.retry_after_cap)
        backoff = 0.5 * 2.0 ** (state.attempt_number - 1) + random.uniform(0, 0.5)
        return min(backoff, self.settings.retry_after_cap)

    def _unavailable(self, attempts: int, reason: str) -> ModelUnavailable:
        spent = f"{attempts} attempt" + ("" if attempts == 1 else "s")
        if attempts < self.settings.max_attempts:
            spent += f" in the {self.settings.max_total_seconds:g} s allowed"
        message = f"The model server at {self._where} is unavailable after {spent}; the last failed with {reason}."
        return ModelUnavailable(message, attempts=attempts, reason=reason)

    def _rejected(self, error: openai.APIStatusError) -> ModelRequestRejected:
        server_message = _server_message(error)
        code = error.code or (error.type if error.type == "insufficient_quota" else None)
        status = f"HTTP {error.status_code}" + (f" ({code})" if code else "")
        message = f"The model server at {self._where} rejected the request with {status}: {server_message}."
        return ModelRequestRejected(message, status=error.status_code, server_message=server_message, code=code)


def is_retryable(error: BaseException) -> bool:
    """Whether retrying may help: connection errors, timeouts, HTTP 408/409/429/5xx, but not an exhausted quota."""
    if isinstance(error, openai.APIConnectionError):
        return True
    if not isinstance(error, openai.APIStatusError):
        return False
    if "insufficient_quota" in (error.code, error.type):
        return False
    return error.status_code in RETRIED_STATUSES or error.status_code >= 500


def retry_after_seconds(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a server asks for in `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if any."""
    lowered = {name.lower(): value for name, value in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
    except ValueError:
        pass  # a malformed header is ignored, as if absent: Retry-After may still say
    value = lowered.get("retry-after", "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def request_options(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | Mapping[str, Any] | None = None,
    response_format: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of a chat completion request, as gm sends it (the in-process fake builds the same)."""
    options: dict[str, Any] = {"model": model, "messages": [dict(message) for message in messages]}
    if tools is not None:
        options["tools"] = [dict(tool) for tool in tools]
    if tool_choice is not None:
        options["tool_choice"] = tool_choice if isinstance(tool_choice, str) else dict(tool_choice)
    if response_format is not None:
        options["response_format"] = dict(response_format)
    return options


def read_completion(
    data: Any, options: dict[str, Any], latency_ms: int, attempts: int, new_id: Callable[[], str]
) -> Completion:
    """A chat completion's JSON as a Completion; ValueError or TypeError says what is wrong with it.

    `new_id` names a tool call that came without an id (some local servers omit them).
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("it has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError("its first choice has no message")
    content = _text(message.get("content"))
    tool_calls = [_tool_call(each, new_id) for each in message.get("tool_calls") or []]
    raw_message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        raw_message["tool_calls"] = [
            {
                "id": each.id,
                "type": "function",
                "function": {"name": each.name, "arguments": _json_text(each.arguments)},
            }
            for each in tool_calls
        ]
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
    )


def _tool_call(data: Any, new_id: Callable[[], str]) -> ToolCall:
    # A custom tool call carries {"name", "input"} where a function call carries {"name", "arguments"}.
    function = (data.get("function") or data.get("custom")) if isinstance(data, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError("a tool call has no name")
    arguments = function.get("arguments", function.get("input", ""))
    if not isinstance(arguments, str | dict):
        arguments = json.dumps(arguments)  # null, a list or a number: kept as the JSON text received
    call_id = data.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = new_id()
    return ToolCall(call_id, function["name"], arguments)


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


def _reason(error: openai.APIError, timeout: float) -> str:
    if isinstance(error, openai.APITimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code} ({_server_message(error)})"
    cause = error.__cause__
    return (
        f"a connection error ({_sentence_part(str(cause) or type(cause).__name__)})" if cause else "a connection error"
    )


def _server_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"].strip():
        return _sentence_part(body["message"])
    text = error.response.text if body is None else str(body)
    return _sentence_part(text) or "no reason given"


def _sentence_part(text: str, limit: int = 300) -> str:
    """Text fit to sit inside one sentence: one line, no final full stop, not too long."""
    flat = " ".join(text.split()).rstrip(".")
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
