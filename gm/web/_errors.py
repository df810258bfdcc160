"""Each group of gm's errors as the HTTP status the API answers with: the one place that maps them.

A client's mistake is a 4xx (400, or 401/404/409 where more precise); a round the game master
could not finish, or a model gm cannot reach, is 502 (the server behind this one failed). The body
is always `{"error": "<one sentence>"}`, except under `/v1` (gm as an OpenAI-compatible model,
`gm.web.compat.routes`), where it is OpenAI's `{"error": {"message", "type", "param", "code"}}` so that chat
front ends show the sentence.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from gm.errors import (
    BrokenWorld,
    Conflict,
    Forbidden,
    GmError,
    NotFound,
    OperatorError,
    PlayError,
    ServerStopping,
    StoryBusy,
    Unauthorized,
    UsageError,
)

# Looked up along the error's class hierarchy, most precise first.
STATUS: dict[type[GmError], int] = {
    Unauthorized: 401,
    Forbidden: 403,
    NotFound: 404,
    BrokenWorld: 422,
    Conflict: 409,
    UsageError: 400,
    StoryBusy: 409,
    ServerStopping: 503,  # draining: gm.web._health answers the round's routes first, with Retry-After
    PlayError: 502,
    OperatorError: 502,
}


def status_for(error: GmError) -> int:
    """The status an error is answered with (502 for anything unforeseen, such as a stray ModelRetry)."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 502


async def answer_error(request: Request, error: Exception) -> JSONResponse:
    """The exception handler for every GmError the routes let through."""
    assert isinstance(error, GmError)
    message = str(error)
    service = getattr(request.app.state, "service", None)
    if service is not None:  # no server path reaches a client, whichever error carried it
        message = service.without_paths(message)
    return JSONResponse(error_body(request.url.path, message, status_for(error)), status_code=status_for(error))


DATABASE_DOWN = "the database cannot be used just now ({reason}); nothing was changed, try again in a moment"


def database_answer(path: str, error: Exception) -> JSONResponse:
    """The 503 for a database failure (a full disk, a server gone), with the database's reason in one sentence."""
    cause = getattr(error, "orig", None) or error
    reason = " ".join(str(cause).split())[:120].rstrip(".") or type(cause).__name__
    body = error_body(path, DATABASE_DOWN.format(reason=reason), 503)
    return JSONResponse(body, status_code=503, headers={"Retry-After": "5"})


# OpenAI's error `type` and `code` for each status gm answers under /v1.
OPENAI_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    409: ("invalid_request_error", "conflict"),
    413: ("invalid_request_error", "request_too_large"),
    422: ("invalid_request_error", "invalid_body"),
    500: ("server_error", None),
    502: ("server_error", "round_failed"),
    503: ("server_error", "unavailable"),  # a database that cannot be used, or a server draining
}


def is_openai_path(path: str) -> bool:
    """Whether a path belongs to the OpenAI-compatible endpoints, whose errors take OpenAI's shape."""
    return path == "/v1" or path.startswith("/v1/")


def openai_error(message: str, status: int) -> dict[str, Any]:
    """An error in OpenAI's shape, as its clients and the chat front ends read it."""
    kind, code = OPENAI_KINDS.get(status, ("invalid_request_error" if status < 500 else "server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error_body(path: str, message: str, status: int) -> dict[str, Any]:
    """The body of an error answered on `path`: the API's `{"error": sentence}`, or OpenAI's shape under /v1."""
    return openai_error(message, status) if is_openai_path(path) else {"error": message}
