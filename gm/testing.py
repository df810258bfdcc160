"""A scripted, OpenAI-compatible fake model served over real HTTP, for tests and offline rehearsal.

The fake listens on 127.0.0.1 (an ephemeral port) in a daemon thread, so the real `openai` client,
sync or async, talks to it exactly as it would to a server. A script is a list of steps, one used
per chat completion request, or a function of the request (its parsed JSON body) returning a step;
a list may hold such functions too.

    from gm.testing import call, fake_model, http_error, reply

    with fake_model([http_error(429, "Slow down.", headers={"Retry-After": "1"}),
                     call("roll_check", {"check": "attempt", "character": "Mara"}),
                     reply("The lock clicks open.")]) as fake:
        client = fake.client()  # or fake.async_client(); both with the client's own retries off
        ...                     # fake.base_url and fake.model for anything else
    # leaving the block checks that every step was used and nothing went wrong (fake.assert_done())

Steps: `reply(text)`, `call(name, arguments)` (a dict is sent as JSON text, a string as is, so
malformed arguments can be sent), `calls([...], content=...)` for several tool calls in one
message, `length(text)` (finish_reason "length"), `http_error(status, message, ...)`, and
`raw(body)` for a response sent verbatim, unchecked, to imitate servers that bend the spec;
`slow(step, seconds)` delays any step.
Answers carry usage estimated at about 4 characters a token unless a step says `usage=None` (no
usage, as some local servers send) or `usage=(prompt, completion)`.

Every request body is kept in `fake.requests`. Given OpenAI's published JSON Schemas
(`request_schema=`, `response_schema=`), the fake answers an invalid request with 400 and the
reason, and refuses to send an invalid answer of its own (500: a bug in the script or the fake).
Such failures, a request after the script ran out, streaming requests and unknown paths are
recorded in `fake.failures`, which `assert_done()` reports along with any unused steps.

Only non-streaming `POST /v1/chat/completions` and `GET /v1/models` are served.

>>> with fake_model([reply("Hello.")]) as fake:
...     answer = fake.client().chat.completions.create(model=fake.model, messages=[{"role": "user", "content": "Hi"}])
>>> answer.choices[0].message.content
'Hello.'
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias, TypeVar

import openai

from gm.openai_schemas import load_validator, problems

Request: TypeAlias = dict[str, Any]
UsageSpec: TypeAlias = tuple[int, int] | Literal["estimate"] | None
Arguments: TypeAlias = Mapping[str, Any] | str
Response: TypeAlias = tuple[int, dict[str, str], bytes]  # status, headers, body


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
    """A scripted response sent verbatim and never checked: a JSON value, or text as is."""

    body: Any
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Step: TypeAlias = Answer | HttpError | Raw
StepFunction: TypeAlias = Callable[[Request], Step]
Script: TypeAlias = Sequence[Step | StepFunction] | StepFunction
StepT = TypeVar("StepT", Answer, HttpError, Raw)


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
    """A response sent verbatim, unchecked: for servers that bend the spec (a str body is sent as text)."""
    return Raw(body, status, dict(headers or {}))


def slow(step: StepT, seconds: float) -> StepT:
    """The same step, answered only after `seconds` (to make a client time out)."""
    return replace(step, delay=seconds)


def estimate_tokens(text: str) -> int:
    """A token count guessed from text length, about 4 characters a token."""
    return (len(text) + 3) // 4


class FakeModel:
    """A scripted chat completion server on 127.0.0.1 for the real openai client; see the module docstring."""

    def __init__(
        self,
        script: Script,
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
        self._closing = threading.Event()
        self._request_validator = load_validator(request_schema) if request_schema else None
        self._response_validator = load_validator(response_schema) if response_schema else None
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeModel:
        """Start serving on an ephemeral port; returns the fake itself."""
        if self._closing.is_set():
            raise RuntimeError("a closed fake model cannot start again; make a new one")
        if self._server is None:
            self._server = _Server(("127.0.0.1", 0), _Handler)
            self._server.fake = self  # type: ignore[attr-defined]
            self._thread = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and wait for the server's threads; safe to call twice."""
        self._closing.set()  # ends any scripted delay at once
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, ending in /v1."""
        if self._server is None:
            raise RuntimeError("the fake model is not started; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def remaining(self) -> list[Step | StepFunction]:
        """The scripted steps not used yet (none for a function script, which never runs out)."""
        with self._lock:
            return [] if callable(self._script) else list(self._script[self._next_step :])

    def client(self, **options: Any) -> openai.OpenAI:
        """A synchronous OpenAI client for this fake, with the client's own retries off."""
        return openai.OpenAI(**{"base_url": self.base_url, "api_key": "fake-key", "max_retries": 0, **options})

    def async_client(self, **options: Any) -> openai.AsyncOpenAI:
        """An asynchronous OpenAI client for this fake, with the client's own retries off."""
        return openai.AsyncOpenAI(**{"base_url": self.base_url, "api_key": "fake-key", "max_retries": 0, **options})

    def assert_done(self) -> None:
        """Raise AssertionError listing unused steps and recorded failures, if there are any."""
        left, failures = self.remaining, list(self.failures)
        if left or failures:
            lines = [f"{len(left)} scripted step(s) not used:", *(f"  {step!r}" for step in left)] if left else []
            lines += [f"{len(failures)} failure(s):", *(f"  {failure}" for failure in failures)] if failures else []
            raise AssertionError("the fake model's script did not finish cleanly\n" + "\n".join(lines))

    def handle(self, method: str, path: str, body: bytes) -> Response:
        """The response (status, headers, body) to one HTTP request; the HTTP handler only transports it."""
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route == "/v1/models":
            models = {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "gm"}]}
            return 200, {}, _json(models)
        if method != "POST" or route != "/v1/chat/completions":
            return self._fail(404, f"{method} {route or '/'} is not served by the fake model", "not_found")
        try:
            request = json.loads(body)
        except ValueError as error:
            return self._fail(400, f"the request body is not JSON ({error})")
        if not isinstance(request, dict):
            return self._fail(400, "the request body is not a JSON object")
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        reasons = problems(self._request_validator, request)
        if reasons:
            return self._fail(400, f"request {number} does not match OpenAI's request schema: {reasons}")
        if request.get("stream"):
            return self._fail(400, f"request {number} asks for streaming, which the fake model does not serve")
        step = self._take(request, number)
        if isinstance(step, str):
            return self._fail(500, step, "server_error")
        if step.delay:
            self._closing.wait(step.delay)
        if isinstance(step, HttpError):
            kind = step.type or _ERROR_TYPES.get(
                step.status, "invalid_request_error" if step.status < 500 else "server_error"
            )
            error_body = {"error": {"message": step.message, "type": kind, "param": None, "code": step.code}}
            return step.status, dict(step.headers), _json(error_body)
        if isinstance(step, Raw):
            text = step.body.encode() if isinstance(step.body, str) else _json(step.body)
            return step.status, dict(step.headers), text
        answer = self._completion(step, request)
        reasons = problems(self._response_validator, answer)
        if reasons:
            message = f"bug in the script or fake: answer {number} breaks the response schema: {reasons}"
            return self._fail(500, message, "server_error")
        return 200, {}, _json(answer)

    def _take(self, request: Request, number: int) -> Step | str:
        """The step for this request, or the reason there is none."""
        with self._lock:
            if callable(self._script):
                item: Step | StepFunction = self._script
            elif self._next_step < len(self._script):
                item = self._script[self._next_step]
                self._next_step += 1
            else:
                return f"the fake model's script ran out: request {number} came after all {len(self._script)} step(s)"
        if not callable(item):
            return item
        try:
            step = item(request)
        except Exception as error:
            return f"the script's function raised {type(error).__name__} for request {number}: {error}"
        if not isinstance(step, Answer | HttpError | Raw):
            return f"the script's function returned {step!r} for request {number}, expected a step such as reply(...)"
        return step

    def _completion(self, step: Answer, request: Request) -> dict[str, Any]:
        """A chat.completion object for an Answer step."""
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
        return answer

    def _fail(self, status: int, message: str, kind: str = "invalid_request_error") -> Response:
        """Record a failure for assert_done() and answer it with an OpenAI-style error."""
        with self._lock:
            self.failures.append(message)
        return status, {}, _json({"error": {"message": message, "type": kind, "param": None, "code": None}})


@contextmanager
def fake_model(
    script: Script,
    *,
    check: bool = True,
    model: str = "fake-model",
    request_schema: Path | str | None = None,
    response_schema: Path | str | None = None,
) -> Iterator[FakeModel]:
    """A started FakeModel for a `with` block; with `check`, a block that ends normally also asserts it is done."""
    fake = FakeModel(script, model=model, request_schema=request_schema, response_schema=response_schema)
    with fake:
        yield fake
    if check:
        fake.assert_done()


# OpenAI's usual error types by status, for http_error steps that name none.
_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


class _Server(ThreadingHTTPServer):
    """The fake's HTTP server; a deep listen queue, so many clients at once are not turned away."""

    request_queue_size = 128  # socketserver's default of 5 drops connections under a load test
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    """Carries HTTP requests to FakeModel.handle and its answers back."""

    server: ThreadingHTTPServer
    timeout = 10  # a connection that never sends its request must not hold close() up for long

    def _serve(self) -> None:
        fake: FakeModel = self.server.fake  # type: ignore[attr-defined]
        size = int(self.headers.get("Content-Length") or 0)
        status, headers, body = fake.handle(self.command, self.path, self.rfile.read(size) if size else b"")
        try:
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nobody is left to answer

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read fake.requests, not an access log on stderr


def _prompt_text(request: Request) -> str:
    """The text of a request's messages (string contents only: enough for a rough estimate)."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return ""
    return "".join(m["content"] for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str))


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()
