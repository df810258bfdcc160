"""Reading a request's whole body under a size limit, before any route, for the API's and the editor's guards.

A body is read here whatever its framing, so a chunked upload (or one that lies about its length) is
held to the limit as well as one that declares it; the route then reads the same bytes again.
"""

from __future__ import annotations

from typing import Literal

from starlette.types import Message, Receive

TOO_LARGE: Literal["too large"] = "too large"
GONE: Literal["gone"] = "gone"


async def read_body(receive: Receive, limit: int) -> bytes | Literal["too large", "gone"]:
    """The whole body, `TOO_LARGE` once it passes `limit` bytes, or `GONE` if the client disconnected."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return GONE
        body.extend(message.get("body", b""))
        if len(body) > limit:
            return TOO_LARGE
        if not message.get("more_body", False):
            return bytes(body)


def replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then whatever the client sends next."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
