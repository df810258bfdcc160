"""Request guards for the web app, before any route: the Host header, the body's size, and its encoding.

- `HostGuard`: a server listening on a loopback address answers only loopback Host names (as the
  editor does, `gm._hosts`), so a web page whose DNS name is rebound to 127.0.0.1 cannot start
  stories and spend the model from a visitor's browser. Refused with 400.
- `BodyLimit`: a body over 64 KB is refused with 413, whether it declares its length or comes in
  chunks; it is read here, whole, before any route sees it. A JSON body that is not UTF-8 is refused
  with 422, the status of a body that is not JSON (FastAPI's own answer would be a 400).

Every refusal is `{"error": "<one sentence>"}`, as everywhere in the API, or OpenAI's error shape under /v1
(`gm.web._errors.error_body`). A chat front end sends a chat's whole history with every request, so
`POST /v1/chat/completions` may send up to `MAX_CHAT_BYTES` (8 MB).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from gm._asgi import GONE, TOO_LARGE, read_body, replaying
from gm.web._errors import error_body

MAX_BODY_BYTES = 64 * 1024
MAX_CHAT_BYTES = 8 * 1024 * 1024


class HostGuard:
    """Refuse a request whose Host header is not among `hosts` ("*" allows any) with a 400."""

    def __init__(self, app: ASGIApp, hosts: Sequence[str]) -> None:
        self.app = app
        self.hosts = frozenset(host.lower() for host in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or "*" in self.hosts:
            await self.app(scope, receive, send)
            return
        name = host_name(Headers(scope=scope).get("host", ""))
        if name not in self.hosts:
            shown = name[:60] or "(none)"
            message = f"this server does not answer to the Host {shown!r}; use {min(self.hosts)}"
            await send_error(send, 400, message, scope.get("path", ""))
            return
        await self.app(scope, receive, send)


def host_name(header: str) -> str:
    """The name in a Host header, as `gm._hosts` writes them: lower case, without the port, IPv6 in brackets.

    >>> host_name("127.0.0.1:8000"), host_name("LocalHost"), host_name("[::1]:8000"), host_name("")
    ('127.0.0.1', 'localhost', '[::1]', '')
    """
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        return header[: end + 1] if end != -1 else header
    return header.split(":", 1)[0]


class BodyLimit:
    """Read the whole body first: over `limit` bytes is a 413, a JSON body that is not UTF-8 a 422."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES, wider: Mapping[str, int] | None = None) -> None:
        self.app = app
        self.limit = limit
        self.wider = dict(wider or {})  # paths allowed a larger body (the chat endpoint's whole history)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path = scope.get("path", "")
        limit = self.wider.get(path, self.limit)
        too_large = f"the request body is over {limit // 1024} KB ({limit:,} bytes)"
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await send_error(send, 413, too_large, path)
            return
        body = await read_body(receive, limit)
        if body == GONE:
            return
        if body == TOO_LARGE:  # chunked, or lying about its length
            await send_error(send, 413, too_large, path)
            return
        assert isinstance(body, bytes)
        if "json" in headers.get("content-type", "").lower():
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as error:
                await send_error(send, 422, f"the request body is not UTF-8 text (byte {error.start + 1})", path)
                return
        await self.app(scope, replaying(body, receive), send)


async def send_error(send: Send, status: int, message: str, path: str = "") -> None:
    body = json.dumps(error_body(path, message, status)).encode()
    headers: list[Any] = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
