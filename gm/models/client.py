"""The OpenAI-compatible model client: one retry layer for transport failures, and usage accounting.

Any OpenAI-compatible server works (OpenAI, Ollama, vLLM, llama.cpp, LM Studio). Requests go
through gm's own HTTP client (`gm.models._transport.Endpoint`), which posts the JSON body gm built
as the openai client would, and retries nothing itself. `ModelClient.complete` retries with tenacity
(entered only when a first attempt failed in a way retrying may mend), and only what may pass:
connection errors, timeouts, and HTTP 408, 409, 429 and 5xx. A `Retry-After` (seconds or an HTTP
date) or `retry-after-ms` header is honoured up to `retry_after_cap`; otherwise the wait grows
as 0.5 s x 2^(retry - 1) plus up to 0.5 s of jitter, capped likewise. Retrying stops after
`max_attempts`, or when the next wait would end beyond `max_total_seconds` from the first attempt;
an attempt in flight is bounded by `timeout` alone, since a slow local model is not a failing one.
Other 4xx answers, a 429 saying the quota is used up, and an answer saying the server takes no
tools are never retried.

Tools (`ModelSettings.tools`, `--tools`, GM_TOOLS): `native` sends them in `tools`; `prompted`
describes them in the system prompt and reads the calls from the text (`gm.models._textcalls`); `auto`
(the default) sends them natively until the server refuses tools (a 400 naming tools or function
calling, Ollama's "does not support tools", llama.cpp's "requires --jinja"), then asks again
prompted, and keeps that choice for this endpoint and model for the rest of the process. Whatever
the mode, the round engine sees the same `Completion` (`gm.models.completion` reads and normalises it).

Every failure is a `ModelError` whose text is one sentence for a person: `ModelNotConfigured`
(the settings), `ModelUnavailable` (the server cannot be reached, keeps failing, or answers
something that is not a chat completion), `ModelRequestRejected` (the server refused the request).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol

import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from gm._text import counted
from gm.config import TOOLS_MODES, Settings, ToolsMode, proxy_for
from gm.errors import ModelNotConfigured, ModelRequestRejected, ModelUnavailable, SettingsError
from gm.models import _transport as transport
from gm.models._textcalls import prompted_request, refuses_tools
from gm.models._transport import ConnectionFailure, HttpFailure, StatusFailure, is_retryable, retry_after_seconds
from gm.models.completion import Completion, ToolCall, Usage, estimate_tokens, message_text, read_completion

__all__ = [  # the completion's shapes live in gm.models.completion; they are re-exported here, where callers look
    "ChatModel",
    "Completion",
    "ModelClient",
    "ModelSettings",
    "ToolCall",
    "ToolsMode",
    "Usage",
    "decided_tool_mode",
    "estimate_tokens",
    "forget_tool_modes",
    "message_text",
    "read_completion",
    "request_options",
    "retry_after_seconds",
]

PLACEHOLDER_API_KEY = "not-needed"  # local servers (Ollama, llama.cpp) need no key, but the client insists on one
OPENAI_URL = "https://api.openai.com/v1"
CHAT_COMPLETIONS = "/chat/completions"


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
    tools: ToolsMode = "auto"
    organization: str | None = None  # sent as OpenAI-Organization, where set (OPENAI_ORG_ID)
    project: str | None = None  # sent as OpenAI-Project, where set (OPENAI_PROJECT_ID)

    def __post_init__(self) -> None:
        if self.tools not in TOOLS_MODES:
            raise ModelNotConfigured(f"The tools mode must be native, prompted or auto, not {self.tools!r}.")
        if self.max_attempts < 1:
            raise SettingsError(f"max_attempts must be at least 1, not {self.max_attempts}")
        for name in ("timeout", "max_total_seconds", "retry_after_cap"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be more than 0 seconds, not {getattr(self, name)}")

    @classmethod
    def from_env(
        cls,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        tools: str | None = None,
    ) -> ModelSettings:
        """Settings from OPENAI_BASE_URL, OPENAI_API_KEY, GM_MODEL and GM_TOOLS (`gm.config`); arguments given (as
        from flags) win."""
        return cls.from_settings(Settings.from_env(), base_url=base_url, api_key=api_key, model=model, tools=tools)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        tools: str | None = None,
    ) -> ModelSettings:
        """The game master's endpoint in `settings`; arguments given (as from flags) win. `ModelNotConfigured`
        says which variable to set when no model or no endpoint is named."""
        base_url = base_url or settings.base_url
        api_key = api_key or settings.api_key
        model = model or settings.model
        mode = tools or settings.tools
        if mode not in TOOLS_MODES:
            raise ModelNotConfigured(f"GM_TOOLS must be native, prompted or auto, not {mode!r}.")
        missing = [] if model else ["GM_MODEL to the model's name"]
        if not base_url and not api_key:
            missing.append("OPENAI_BASE_URL to an OpenAI-compatible server (or OPENAI_API_KEY to use OpenAI)")
        if missing or model is None:
            raise ModelNotConfigured(
                f"The model is not configured: set {' and '.join(missing)}; "
                "or try gm offline with --model rehearsal (a stand-in that needs no model)."
            )
        return cls(
            base_url=base_url,
            api_key=api_key or PLACEHOLDER_API_KEY,
            model=model,
            tools=mode,
            organization=settings.organization,
            project=settings.project,
        )


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
        self._endpoint = transport.Endpoint(
            self._where,
            settings.api_key,
            settings.timeout,
            organization=settings.organization,
            project=settings.project,
            proxy=proxy_for(self._where),
        )
        self._generated_ids = 0

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> Completion:
        """The model's next message, retrying transport failures; raises a ModelError otherwise.

        With tools, they are sent natively or prompted (in the text) as `tool_mode` says; in `auto`,
        a server that refuses tools is asked again prompted, and that is remembered for the process.
        """
        if not tools:
            return await self._send(request_options(self.settings.model, messages, None, tool_choice, response_format))
        names = [str((tool.get("function") or {}).get("name", "")) for tool in tools]
        if self.tool_mode == "prompted":
            return await self._prompted(messages, tools, tool_choice, response_format, names)
        options = request_options(self.settings.model, messages, tools, tool_choice, response_format)
        try:
            completion = await self._send(options, names)
        except ModelRequestRejected as rejected:
            if not rejected.tools_refused or self.settings.tools == "native":
                raise
            _decide(self._where, self.settings.model, "prompted")
            return await self._prompted(messages, tools, tool_choice, response_format, names)
        if self.settings.tools == "auto":
            _decide(self._where, self.settings.model, "native")
        return completion

    @property
    def tool_mode(self) -> Literal["native", "prompted"] | None:
        """How tools are sent to this endpoint and model: as set, or as decided in `auto` (None: not yet)."""
        if self.settings.tools != "auto":
            return self.settings.tools
        return decided_tool_mode(self._where, self.settings.model)

    async def _prompted(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        tool_choice: str | Mapping[str, Any] | None,
        response_format: Mapping[str, Any] | None,
        names: list[str],
    ) -> Completion:
        written = prompted_request(messages, tools, tool_choice)
        return await self._send(request_options(self.settings.model, written, None, None, response_format), names)

    async def _send(self, options: dict[str, Any], tool_names: list[str] | None = None) -> Completion:
        """One request, with retries, read as a Completion; tool calls written as text may name `tool_names`."""
        started = self._clock()
        attempts = 1
        body = _encoded(options)  # once, however many attempts
        first: HttpFailure | None = None
        try:
            try:  # most requests succeed at once: only a failure worth retrying enters the retry layer
                response = await self._endpoint.post(CHAT_COMPLETIONS, body)
            except HttpFailure as error:
                if not is_retryable(error):
                    raise
                first = error
            if first is not None:
                attempts = 0
                async for attempt in self._retrying(started):
                    with attempt:
                        attempts += 1
                        if attempts == 1:
                            raise first  # the first attempt's failure, met by the retry layer as if it had made it
                        response = await self._endpoint.post(CHAT_COMPLETIONS, body)
        except StatusFailure as error:
            if is_retryable(error):
                raise self._unavailable(attempts, transport.reason(error, self.settings.timeout)) from None
            raise self._rejected(error, "tools" in options) from None
        except ConnectionFailure as error:
            raise self._unavailable(attempts, transport.reason(error, self.settings.timeout)) from None
        latency_ms = round((self._clock() - started) * 1000)
        try:
            data = _decoded(response)
            return read_completion(data, options, latency_ms, attempts, self._new_id, tool_names)
        except (ValueError, TypeError, RecursionError) as error:
            if isinstance(error, RecursionError):  # JSON nested thousands deep: no chat completion looks like that
                why = "it is nested too deeply"
            else:
                why = (
                    "it is not JSON" if isinstance(error, json.JSONDecodeError) else transport.sentence_part(str(error))
                )
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
        await self._endpoint.aclose()

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

    def _retrying(self, started: float) -> AsyncRetrying:
        """The retry layer for one request first sent at `started` (the module docstring says what it retries)."""
        return AsyncRetrying(
            sleep=self._sleep,
            stop=lambda state: self._should_stop(state, started),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            reraise=True,
        )

    def _should_stop(self, state: RetryCallState, started: float) -> bool:
        if state.attempt_number >= self.settings.max_attempts:
            return True
        return self._clock() - started + state.upcoming_sleep > self.settings.max_total_seconds

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, StatusFailure):
            hinted = retry_after_seconds(error.headers)
            if hinted is not None:
                return min(hinted, self.settings.retry_after_cap)
        backoff = 0.5 * 2.0 ** (state.attempt_number - 1) + random.uniform(0, 0.5)
        return min(backoff, self.settings.retry_after_cap)

    def _unavailable(self, attempts: int, reason: str) -> ModelUnavailable:
        spent = counted(attempts, "attempt")
        if attempts < self.settings.max_attempts:
            spent += f" in the {self.settings.max_total_seconds:g} s allowed"
        message = f"The model server at {self._where} is unavailable after {spent}; the last failed with {reason}."
        return ModelUnavailable(message, attempts=attempts, reason=reason)

    def _rejected(self, error: StatusFailure, had_tools: bool) -> ModelRequestRejected:
        server_message = transport.server_message(error)
        code = error.code or (error.type if error.type == "insufficient_quota" else None)
        status = f"HTTP {error.status}" + (f" ({code})" if code else "")
        message = f"The model server at {self._where} rejected the request with {status}: {server_message}."
        refused = had_tools and refuses_tools(error.status, server_message)
        if refused:
            message = message[:-1] + "; it takes no tools, so play with --tools prompted (or GM_TOOLS=prompted)."
        rejected = ModelRequestRejected(message, status=error.status, server_message=server_message, code=code)
        rejected.tools_refused = refused
        return rejected


# How tools are sent to each endpoint and model in `auto` mode, decided on the first request with
# tools and kept for the process: a server does not learn tool calling while gm runs.
_DECIDED: dict[tuple[str, str], Literal["native", "prompted"]] = {}
_DECIDING = threading.Lock()


def _decide(where: str, model: str, mode: Literal["native", "prompted"]) -> None:
    with _DECIDING:
        if mode == "prompted" or (where, model) not in _DECIDED:
            _DECIDED[(where, model)] = mode


def forget_tool_modes() -> None:
    """Forget every `auto` decision of this process (a test's fake servers come and go on reused ports)."""
    with _DECIDING:
        _DECIDED.clear()


def decided_tool_mode(base_url: str | None, model: str) -> Literal["native", "prompted"] | None:
    """How `auto` sends tools to this endpoint and model in this process; None until a request with tools decided."""
    with _DECIDING:
        return _DECIDED.get((base_url or OPENAI_URL, model))


def _encoded(options: Mapping[str, Any]) -> bytes:
    """A request body as JSON bytes, compact UTF-8 (as the openai client encodes one).

    orjson writes the same bytes as `json.dumps(..., ensure_ascii=False, separators=(",", ":"))` for
    the strings, integers, lists and dicts gm's requests hold, at a fifth of the CPU (the prompt is
    thousands of characters, encoded for every model call on the event loop). What orjson cannot
    write (a lone surrogate, an integer past 64 bits, a key that is not a string) falls back to
    `json`, which raises for the first as before and writes the others."""
    try:
        return orjson.dumps(options)
    except orjson.JSONEncodeError:
        return json.dumps(options, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _decoded(content: bytes) -> Any:
    """A response's JSON body: orjson for a well-formed UTF-8 body (most of them, at a fraction of the CPU);
    anything orjson refuses is read again by `json`, so a malformed answer fails with `json`'s reason (not
    JSON, nested too deeply, ...)."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        return json.loads(content)


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
