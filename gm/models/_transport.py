"""How a request reaches a model server, and what an HTTP failure from one means.

`Endpoint` is gm's own HTTP client for one OpenAI-compatible server: it posts the JSON body gm built
and returns the answer's bytes, over aiohttp. The rest says whether retrying a failure may help, the
wait it asks for, and its reason as part of one sentence for a person (gm.models.client retries, in
one place, and reads the answer, in gm.models.completion).

Why a client of its own: gm builds each body itself, retries itself and reads each answer itself, so
all it took from the openai client was the HTTP exchange, and that client's request path (options
copied twice, headers merged and validated, the URL merged and parsed again, a response wrapper)
cost as much CPU as the exchange. aiohttp keeps idle connections in a list per host and parses HTTP
in C (bench/client_bench.py measures a model call's CPU side by side with the code before).

What a server sees is what the openai client sent it: `POST {base_url}/chat/completions` with the
body as `application/json`, `Authorization: Bearer <key>`, `OpenAI-Organization` and `OpenAI-Project`
where they are set; redirects followed, cookies kept, the proxy `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`
name (`proxy`, from gm.config.proxy_for), the system's certificates (or `SSL_CERT_FILE`). Only the
`User-Agent` says gm. A failure is one of three, worded as the openai client's errors were
(tests/models/model_failures.json holds what they said): an answer that is not 2xx
(`StatusFailure`, its body read as that client read it), no answer in time (`TimedOut`), or no
answer at all (`ConnectionFailure`, with aiohttp's reason).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import weakref
from collections.abc import Awaitable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp

from gm.models._textcalls import refuses_tools

RETRIED_STATUSES = frozenset({408, 409, 429})  # and every 5xx
MAX_CONNECTIONS = 1000  # requests in flight to one server at most; the rest wait for a connection
KEEPALIVE_SECONDS = 5.0  # how long an idle connection is kept for the next call


class HttpFailure(Exception):
    """A request that got no 2xx answer. Never leaves gm.models: `ModelClient` words it as a `ModelError`."""


class StatusFailure(HttpFailure):
    """The server answered with a status that is not 2xx; `body` is its error object, read as the openai client
    read one (the JSON's `error` member, the JSON itself, or the text when it is not JSON)."""

    def __init__(self, status: int, headers: Mapping[str, str], text: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers
        self.text = text
        body: object = text.strip()
        with contextlib.suppress(ValueError, RecursionError):
            body = json.loads(text)
        self.body = body.get("error", body) if isinstance(body, dict) else body
        found = self.body if isinstance(self.body, dict) else {}
        self.code = None if found.get("code") is None else str(found["code"])
        self.type = found.get("type") if isinstance(found.get("type"), str) else None


class ConnectionFailure(HttpFailure):
    """No answer: the connection was refused or broke, or what came back was not HTTP; the message says which."""


class TimedOut(ConnectionFailure):
    """No whole answer within the timeout: one deadline for connecting, sending and reading, however the bytes come."""


# aiohttp's failures, most specific first: a timeout, or a connection failure with aiohttp's reason.
_TIMEOUTS = (aiohttp.ConnectionTimeoutError, aiohttp.SocketTimeoutError, aiohttp.ServerTimeoutError, TimeoutError)
_FAILURES = (aiohttp.ClientError, OSError, ValueError)  # ValueError: a base URL that is not one


class Endpoint:
    """One model server, reached through one aiohttp session per event loop (opened by the first request on it)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout: float,
        *,
        organization: str | None = None,
        project: str | None = None,
        proxy: str | None = None,
    ) -> None:
        self._base = base_url.rstrip("/")
        self._proxy = proxy
        self._headers = {"Accept": "application/json", "User-Agent": _user_agent()}
        self._headers["Authorization"] = f"Bearer {api_key}"
        if organization:
            self._headers["OpenAI-Organization"] = organization
        if project:
            self._headers["OpenAI-Project"] = project
        self._json = {**self._headers, "Content-Type": "application/json"}
        # One deadline for the whole exchange (`_send`): a server that trickles its answer a byte at a time
        # never waits long between reads, so a per-read timeout alone would not bound the call.
        self._deadline = timeout
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout, sock_read=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dropped: weakref.finalize[Any, Endpoint] | None = None

    async def post(self, path: str, body: bytes) -> bytes:
        """POST `body` (JSON) to `path` under the base URL; the answer's body, or an `HttpFailure`."""
        return await self._send("POST", path, body, self._json)

    async def get(self, path: str) -> bytes:
        """GET `path` under the base URL; the answer's body, or an `HttpFailure`."""
        return await self._send("GET", path, None, self._headers)

    async def _send(self, method: str, path: str, body: bytes | None, headers: Mapping[str, str]) -> bytes:
        try:
            async with asyncio.timeout(self._deadline):  # connecting, sending and reading the whole answer
                request = self._session_here().request(method, self._base + path, data=body, headers=headers)
                async with request as answer:
                    content = await answer.read()
                    status, answer_headers, charset = answer.status, answer.headers, answer.charset
        except _TIMEOUTS as error:
            raise TimedOut(str(error) or "timed out") from error
        except _FAILURES as error:
            # aiohttp words a malformed answer as `400, message="..."`: its parser's own code, not the server's status.
            text = error.message if isinstance(error, aiohttp.ClientResponseError) else str(error)
            raise ConnectionFailure(text or type(error).__name__) from error
        if not 200 <= status < 300:
            raise StatusFailure(status, answer_headers, _decoded_text(content, charset))
        return content

    def _session_here(self) -> aiohttp.ClientSession:
        # A session belongs to the event loop it was opened on; a client used again under a new loop (a
        # library user calling asyncio.run twice) opens a new one rather than touch the old loop's sockets.
        loop = asyncio.get_running_loop()
        session = self._session
        if session is not None and self._loop is loop and not session.closed:
            return session
        if session is not None and self._loop is not None:
            _let_go(session, self._loop)
        connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, limit_per_host=0, keepalive_timeout=KEEPALIVE_SECONDS)
        # Cookies as httpx keeps them (a load balancer's, say), also from a server named by its IP address.
        jar = aiohttp.CookieJar(unsafe=True)
        # The proxy is the one the environment named when the client was made (gm.config.proxy_for), as httpx chose
        # its own: aiohttp's `trust_env` would look it up again for every request, in a worker thread.
        session = aiohttp.ClientSession(connector=connector, cookie_jar=jar, timeout=self._timeout, proxy=self._proxy)
        self._session, self._loop = session, loop
        # A client dropped without being closed (a library user who never calls aclose) lets its sockets go
        # when it is collected, instead of aiohttp warning of an unclosed session.
        if self._dropped is not None:
            self._dropped.detach()
        self._dropped = weakref.finalize(self, _let_go, session, loop)
        return session

    async def aclose(self) -> None:
        """Close the connections; a later request opens new ones."""
        session, loop, self._session = self._session, self._loop, None
        if self._dropped is not None:
            self._dropped.detach()
            self._dropped = None
        if session is None or loop is None:
            return
        if loop is asyncio.get_running_loop():
            await session.close()
        else:
            _let_go(session, loop)


@functools.cache
def _user_agent() -> str:
    from importlib import metadata

    try:
        return f"gm/{metadata.version('gm')}"
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return "gm"


def _decoded_text(content: bytes, charset: str | None) -> str:
    try:
        return content.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return content.decode("utf-8", errors="replace")


def _let_go(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop) -> None:
    """Close a session from where it cannot be awaited: a finalizer, or a call made on another event loop."""
    if session.closed:
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if loop is running:
        loop.create_task(session.close())
    elif loop.is_running():  # another thread's loop
        asyncio.run_coroutine_threadsafe(session.close(), loop)
    elif not loop.is_closed() and running is None:
        loop.run_until_complete(session.close())
    elif session.connector is not None:
        # Its loop is closed (or stopped under a loop that runs now): nothing can be awaited there. Closing
        # the connector marks it closed, so neither it nor the session warns when collected; its sockets
        # close with their transports.
        _finish(session.connector.close())


def _finish(awaitable: Awaitable[Any]) -> None:
    """Run an awaitable that completes without waiting (aiohttp's close of a connector whose loop is gone)."""
    steps = awaitable.__await__()
    try:
        steps.send(None)
    except StopIteration:
        return
    steps.close()


def is_retryable(error: BaseException) -> bool:
    """Whether retrying may help: connection errors, timeouts, HTTP 408/409/429/5xx, but not an exhausted quota."""
    if isinstance(error, ConnectionFailure):
        return True
    if not isinstance(error, StatusFailure):
        return False
    if "insufficient_quota" in (error.code, error.type):
        return False
    if refuses_tools(error.status, server_message(error)):
        return False  # llama.cpp's server says "tools param requires --jinja flag" with a 500: retrying cannot help
    return error.status in RETRIED_STATUSES or error.status >= 500


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


def reason(error: HttpFailure, timeout: float) -> str:
    """Why a request failed, as part of a sentence: a timeout, an HTTP status and message, a connection error."""
    if isinstance(error, TimedOut):
        return f"no answer within {timeout:g} s"
    if isinstance(error, StatusFailure):
        return f"HTTP {error.status} ({server_message(error)})"
    return f"a connection error ({sentence_part(str(error))})"


def server_message(error: StatusFailure) -> str:
    """What the server said in its error answer, fit to sit inside a sentence."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"].strip():
        return sentence_part(body["message"])
    return sentence_part(str(body)) or "no reason given"


def sentence_part(text: str, limit: int = 300) -> str:
    """Text fit to sit inside one sentence: one line, no final full stop, not too long."""
    flat = " ".join(text.split()).rstrip(".")
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
