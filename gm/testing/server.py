"""The scripted fake model served over real HTTP on 127.0.0.1, for the real `openai` client (see gm.testing)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

import openai

from gm.errors import UsageError
from gm.testing.script import Answer, HttpError, Raw, Request, Script, Scripted, Step

Response: TypeAlias = tuple[int, dict[str, str], bytes]  # status, headers, body


class FakeModel(Scripted):
    """A scripted chat completion server on 127.0.0.1 for the real openai client; see gm.testing."""

    def __init__(
        self,
        script: Script,
        *,
        model: str = "fake-model",
        request_schema: Path | str | None = None,
        response_schema: Path | str | None = None,
    ) -> None:
        super().__init__(script, model=model, request_schema=request_schema, response_schema=response_schema)
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeModel:
        """Start serving on an ephemeral port; returns the fake itself."""
        if self._closing.is_set():
            raise UsageError("a closed fake model cannot start again; make a new one")
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
            raise UsageError("the fake model is not started; use it as a context manager or call start()")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def client(self, **options: Any) -> openai.OpenAI:
        """A synchronous OpenAI client for this fake, with the client's own retries off."""
        return openai.OpenAI(**{"base_url": self.base_url, "api_key": "fake-key", "max_retries": 0, **options})

    def async_client(self, **options: Any) -> openai.AsyncOpenAI:
        """An asynchronous OpenAI client for this fake, with the client's own retries off."""
        return openai.AsyncOpenAI(**{"base_url": self.base_url, "api_key": "fake-key", "max_retries": 0, **options})

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
        number, invalid = self._record(request)
        if invalid:
            return self._fail(400, invalid)
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
            if isinstance(step.body, bytes):  # bytes as they are, valid UTF-8 or not
                text = step.body
            else:
                text = step.body.encode() if isinstance(step.body, str) else _json(step.body)
            return step.status, dict(step.headers), text
        answer, broken = self._completion(step, request, number)
        if broken:
            return self._fail(500, broken, "server_error")
        return 200, {}, _json(answer)

    def _take(self, request: Request, number: int) -> Step | str:
        """The step for this request, or the reason there is none."""
        item = self._next_item(number)
        if isinstance(item, str) or not callable(item):
            return item
        try:
            step = item(request)
        except Exception as error:
            return f"the script's function raised {type(error).__name__} for request {number}: {error}"
        if not isinstance(step, Answer | HttpError | Raw):
            return f"the script's function returned {step!r} for request {number}, expected a step such as reply(...)"
        return step

    def _fail(self, status: int, message: str, kind: str = "invalid_request_error") -> Response:
        """Record a failure for assert_done() and answer it with an OpenAI-style error."""
        self._failed(message)
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


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()
