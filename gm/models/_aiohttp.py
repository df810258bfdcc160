"""The openai client's HTTP requests sent over aiohttp, whose connection pool and HTTP parser cost less than httpx's.

Why: a model call through the openai client's default transport (httpx over httpcore, anyio and
h11) spent more CPU in that stack than in the rest of the call, and httpcore's pool walks every
connection it holds on each request and each response. aiohttp keeps idle connections in a list
per host and parses HTTP in C: in `bench/client_bench.py` a call costs 0.55 to 0.76 times the CPU.

The openai package offers the same (`openai.DefaultAioHttpClient`, its `aiohttp` extra), but its
bundled transport maps a refused connection, and a server that hung up, to a connect *timeout*,
which gm would report as "no answer within N s". This adapter maps aiohttp's failures to the
httpx errors httpx itself raises for them, so the openai client turns them into the same
`APIConnectionError` or `APITimeoutError` as before, and gm's retry layer and sentences see no
difference. Everything above the transport is the openai client and its httpx client: headers,
authentication, redirects, cookies (aiohttp's own jar is off), timeouts, and a proxy from the
environment, which keeps httpx's own transport (`_init_proxy_transport` is not replaced).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import weakref
from typing import Any

import aiohttp
import httpx2
import openai

# aiohttp's failures, most specific first, and the httpx error httpx raises for the same cause.
_TIMEOUTS: tuple[tuple[type[BaseException], type[httpx2.TimeoutException]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx2.ConnectTimeout),
    (aiohttp.SocketTimeoutError, httpx2.ReadTimeout),
    (aiohttp.ServerTimeoutError, httpx2.ReadTimeout),
    (TimeoutError, httpx2.ReadTimeout),
)
_FAILURES: tuple[tuple[type[BaseException], type[httpx2.TransportError]], ...] = (
    (aiohttp.ClientConnectorError, httpx2.ConnectError),
    (aiohttp.ServerDisconnectedError, httpx2.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx2.ReadError),
    (aiohttp.ClientResponseError, httpx2.RemoteProtocolError),  # a malformed answer: aiohttp's parser refused it
    (aiohttp.InvalidURL, httpx2.UnsupportedProtocol),
    (aiohttp.ClientError, httpx2.ReadError),
    (OSError, httpx2.ReadError),
)


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """An httpx transport that sends each request through one aiohttp session and returns the whole answer."""

    def __init__(
        self,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        limits: httpx2.Limits | None = None,
    ) -> None:
        self._ssl = httpx2.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)
        self._limits = limits or httpx2.Limits()
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dropped: weakref.finalize[Any, AiohttpTransport] | None = None

    def _session_here(self) -> aiohttp.ClientSession:
        # A session belongs to the event loop it was opened on; a client used again under a new loop (a
        # library user calling asyncio.run twice) opens a new one rather than touch the old loop's sockets.
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            if self._session is not None:
                _let_go(self._session)
            connector = aiohttp.TCPConnector(
                limit=self._limits.max_connections or 0,
                limit_per_host=0,
                keepalive_timeout=self._limits.keepalive_expiry or 0,
                ssl=self._ssl,
            )
            self._session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False
            )
            self._loop = loop
            # A client dropped without being closed (a library user who never calls aclose) lets its
            # sockets go when it is collected, or at exit, instead of aiohttp warning of an unclosed session.
            if self._dropped is not None:
                self._dropped.detach()
            self._dropped = weakref.finalize(self, _let_go, self._session)
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send `request` and read its whole answer; aiohttp's failures become the httpx errors for the same cause."""
        timeout = request.extensions.get("timeout", {})
        content = await request.aread()
        try:
            async with self._session_here().request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=content or None,
                allow_redirects=False,  # the httpx client above follows them, as it would with its own transport
                compress=False,
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=timeout.get("pool"),
                    sock_connect=timeout.get("connect"),
                    sock_read=timeout.get("read"),
                ),
                server_hostname=request.extensions.get("sni_hostname"),
            ) as answer:
                body = await answer.read()
        except Exception as error:  # not CancelledError: a cancelled call is no transport failure
            raise _as_httpx(error, request) from error
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if answer.reason:
            extensions["reason_phrase"] = answer.reason.encode("latin-1", "replace")
        return httpx2.Response(
            answer.status, headers=answer.raw_headers, content=body, request=request, extensions=extensions
        )

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._loop is asyncio.get_running_loop():
            await session.close()


def _let_go(session: aiohttp.ClientSession) -> None:
    """Close a session's sockets at once, without awaiting: for a session whose transport or loop is gone."""
    connector = session.connector
    if connector is not None and not connector.closed:
        with contextlib.suppress(Exception):  # a loop already closed: its sockets went with it
            connector._close()  # what `close()` does before its awaitable, which no one is left to await
    session.detach()


def _as_httpx(error: Exception, request: httpx2.Request) -> Exception:
    """The httpx error for an aiohttp failure (the error itself when it is none of aiohttp's)."""
    for cause, timeout in _TIMEOUTS:
        if isinstance(error, cause):
            return timeout(str(error) or "timed out", request=request)
    # aiohttp words a malformed answer as `400, message="..."`: its parser's own code, not the server's status.
    text = error.message if isinstance(error, aiohttp.ClientResponseError) else str(error)
    for cause, failure in _FAILURES:
        if isinstance(error, cause):
            return failure(text or type(error).__name__, request=request)
    return error


class AiohttpClient(openai.DefaultAsyncHttpxClient):
    """The openai client's httpx client with its defaults, sending through `AiohttpTransport` (proxies: httpx's)."""

    def _init_transport(
        self,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx2.Limits | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> httpx2.AsyncBaseTransport:
        if transport is not None:
            return transport
        return AiohttpTransport(verify=verify, cert=cert, trust_env=trust_env, limits=limits)
