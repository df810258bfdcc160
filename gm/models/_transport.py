"""How requests reach a model server, and what an HTTP failure from one means.

`Clients` is the openai clients a `gm.models.client.ModelClient` sends through, and each request's body
posted through one of them. The rest says whether retrying a failure may help, the wait it asks
for, and its reason as part of one sentence for a person (gm.models.client retries, in one place).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, cast

import openai

from gm.models._aiohttp import AiohttpClient
from gm.models._textcalls import refuses_tools

RETRIED_STATUSES = frozenset({408, 409, 429})  # and every 5xx

# The openai client's marker for "give me the HTTP response, not a parsed object" (what `with_raw_response` sets).
_RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}

SHARD_LOAD = 16  # requests in flight on every client before another client is opened
MAX_SHARDS = 32  # beyond SHARD_LOAD x MAX_SHARDS requests in flight, the clients' pools just grow (a client: ~1 MB)
KEPT_IDLE = 2 * SHARD_LOAD  # idle connections a client keeps: room for a burst past SHARD_LOAD, without churn


@dataclass(eq=False)
class _Shard:
    """One openai client, how many requests are in flight on it, and its request once built (see `_Prepared`)."""

    client: openai.AsyncOpenAI
    in_flight: int = 0
    prepared: _Prepared | None = None
    prepare: bool = True  # False once the client proved unfit for `_Prepared` (see `_Prepared.of`)


class _Prepared:
    """A chat completion request as the openai client built it, rebuilt around each new body for a fraction of the CPU.

    Why: the openai client's `request()` rebuilds the same request every time (options copied
    twice, headers merged and validated, the URL merged with the base URL and parsed again, a
    response wrapper built), about as much CPU as the HTTP exchange itself. A shard's first
    request takes that path; its request (URL, headers, timeout) is then kept, and each later
    request is that one with a new body (and, where the client has them, a fresh idempotency key
    and the cookies its jar holds now), sent through the same client's own `_send_request` and so
    its httpx client, its connection pool and its timeouts. Failures become the errors the
    client's `request()` raises (`APITimeoutError`, `APIConnectionError`, and its own
    `_make_status_error_from_response` for any answer that is not 2xx), from the same causes, so
    gm's retry layer and its sentences see no difference. The openai client's own retries are off
    either way (`max_retries=0`: `request()` would not have retried either).
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        sent: Any,
        timeouts: tuple[type[BaseException], ...],
        request_errors: tuple[type[BaseException], ...],
    ) -> None:
        self._send = client._send_request
        self._status_error = client._make_status_error_from_response
        self._cookies = client._client.cookies
        self._idempotency_header = client._idempotency_header
        self._idempotency_key = client._idempotency_key
        self._timeouts, self._request_errors = timeouts, request_errors  # as `request()` maps them
        self._request_class = type(sent)
        self._url = sent.url
        self._extensions = dict(sent.extensions)
        self._headers = sent.headers.copy()
        for name in ("content-length", "cookie"):  # set again for each request: its body, and the jar as it is then
            self._headers.pop(name, None)

    @classmethod
    def of(cls, client: openai.AsyncOpenAI, sent: Any) -> _Prepared | None:
        """The request `client` sent (`sent`), ready to be sent again; None when the client may change it per request.

        A client authenticating otherwise than by one fixed API key (a key provider, workload
        identity, a provider's runtime, custom httpx auth) writes a request anew each time, and
        keeps the openai client's full path; so does an openai package without these parts.
        """
        try:
            from openai._httpx2 import request_exceptions, timeout_exceptions

            per_request = (
                getattr(client, "_api_key_provider", None),
                getattr(client, "_workload_identity_auth", None),
                getattr(client, "_provider_runtime", None),
                client.custom_auth,
            )
            if any(part is not None for part in per_request) or sent.method != "POST":
                return None
            return cls(client, sent, timeout_exceptions(), request_exceptions())
        except (ImportError, AttributeError):
            return None

    async def post(self, body: bytes) -> Any:
        """POST `body` as the prepared request's; the HTTP response (2xx), or the openai client's error."""
        request = self._request_class(
            "POST", self._url, headers=self._headers, content=body, extensions=self._extensions
        )
        if self._idempotency_header:
            request.headers[self._idempotency_header] = self._idempotency_key()
        if self._cookies:
            self._cookies.set_cookie_header(request)
        try:
            response = await self._send(request, stream=False)
        except self._timeouts as error:
            raise openai.APITimeoutError(request=request) from error
        except openai.OpenAIError:
            raise
        except self._request_errors as error:
            raise openai.APIConnectionError(request=request) from error
        if not response.is_success:
            raise self._status_error(response) from None
        return response


class Clients:
    """The openai clients one model endpoint is reached through, opened as the requests in flight grow.

    Why several: each openai client keeps its connections in one httpx pool, and that pool walks
    every connection it holds on each request and on each response (httpcore checks each for
    expiry, polling the idle ones' sockets). With a hundred stories waiting on the model at once,
    one pool of a hundred connections spent more of the event loop than the rest of the client.
    So a request goes to the first client with fewer than SHARD_LOAD requests in flight, each pool
    keeps at most KEPT_IDLE idle connections, and when every client is full one more is opened (in
    a worker thread: building an openai client loads TLS certificates, tens of milliseconds the
    event loop must not wait), up to MAX_SHARDS; past that, the least loaded client takes it.
    The first client is opened the same way, the first request waiting for it (its modules' first
    import reads files too). Only the event loop's thread uses this (the counts need no lock); every
    client has the same settings, retries off. That walk was httpx's pool; the clients now send over
    aiohttp (`gm.models._aiohttp`), whose pool does not walk its connections and ignores KEPT_IDLE,
    so the split may no longer pay: it is kept as measured until a bench says otherwise.
    """

    def __init__(self, make: Callable[..., openai.AsyncOpenAI]) -> None:
        self._make = make
        self._shards: list[_Shard] = []  # the first is opened by the first request, and again after `aclose`
        self._opening: asyncio.Task[None] | None = None

    def _open_one(self) -> _Shard:
        # The openai client's own defaults, but fewer idle connections: it is a surplus of them that each
        # request's walk of the pool polls. The Limits class is the one the installed openai uses.
        limits = type(openai.DEFAULT_CONNECTION_LIMITS)(
            max_connections=openai.DEFAULT_CONNECTION_LIMITS.max_connections,
            max_keepalive_connections=KEPT_IDLE,
            keepalive_expiry=openai.DEFAULT_CONNECTION_LIMITS.keepalive_expiry,
        )
        return _Shard(self._make(http_client=AiohttpClient(limits=limits)))

    @property
    def count(self) -> int:
        """How many clients are open."""
        return len(self._shards)

    async def post(self, body: bytes) -> Any:
        """POST one chat completion request body; its raw HTTP response, or the openai client's error.

        This is the openai client's own request path (headers, authentication, timeout, error
        classes) without its request transform: `chat.completions.create` walks every message and
        tool schema against the request's TypedDicts, which cost as much CPU as the rest of a call
        and changes nothing in a body gm already builds as plain JSON. After a client's first
        request, its later ones are that request with a new body (`_Prepared`).
        """
        while not self._shards:  # the first client, opened off the loop as every other (and again after `aclose`)
            await asyncio.shield(self._opened())
        shard = next((shard for shard in self._shards if shard.in_flight < SHARD_LOAD), None)
        if shard is None:
            shard = min(self._shards, key=_load)
            if len(self._shards) < MAX_SHARDS:
                self._opened()
        shard.in_flight += 1
        try:
            if shard.prepared is not None:
                return await shard.prepared.post(body)
            raw = await shard.client.post(
                "/chat/completions",
                cast_to=object,
                content=body,
                options={"headers": _RAW_RESPONSE, "max_retries": 0, "security": {"bearer_auth": True}},
            )
        finally:
            shard.in_flight -= 1
        response = cast(Any, raw).http_response
        if shard.prepare and not response.history:  # a request redirected elsewhere is not the one to repeat
            shard.prepared = _Prepared.of(shard.client, response.request)
            shard.prepare = False
        return response

    def _opened(self) -> asyncio.Task[None]:
        """The client being opened, or one more opening now (in a worker thread: see the class)."""
        if self._opening is None:
            self._opening = asyncio.get_running_loop().create_task(self._open())
        return self._opening

    async def _open(self) -> None:
        try:
            self._shards.append(await asyncio.to_thread(self._open_one))
        finally:
            self._opening = None

    async def aclose(self) -> None:
        """Close every client's connections (and one being opened); a later request opens a new client."""
        if self._opening is not None:
            await asyncio.gather(self._opening, return_exceptions=True)
        shards, self._shards = self._shards, []
        for shard in shards:
            await shard.client.close()


def _load(shard: _Shard) -> int:
    return shard.in_flight


def is_retryable(error: BaseException) -> bool:
    """Whether retrying may help: connection errors, timeouts, HTTP 408/409/429/5xx, but not an exhausted quota."""
    if isinstance(error, openai.APIConnectionError):
        return True
    if not isinstance(error, openai.APIStatusError):
        return False
    if "insufficient_quota" in (error.code, error.type):
        return False
    if refuses_tools(error.status_code, server_message(error)):
        return False  # llama.cpp's server says "tools param requires --jinja flag" with a 500: retrying cannot help
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


def reason(error: openai.APIError, timeout: float) -> str:
    """Why a request failed, as part of a sentence: a timeout, an HTTP status and message, a connection error."""
    if isinstance(error, openai.APITimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code} ({server_message(error)})"
    cause = error.__cause__
    return (
        f"a connection error ({sentence_part(str(cause) or type(cause).__name__)})" if cause else "a connection error"
    )


def server_message(error: openai.APIStatusError) -> str:
    """What the server said in its error answer, fit to sit inside a sentence."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"].strip():
        return sentence_part(body["message"])
    text = error.response.text if body is None else str(body)
    return sentence_part(text) or "no reason given"


def sentence_part(text: str, limit: int = 300) -> str:
    """Text fit to sit inside one sentence: one line, no final full stop, not too long."""
    flat = " ".join(text.split()).rstrip(".")
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"
