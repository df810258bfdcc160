"""Each group of gm's errors as the HTTP status the API answers with: the one place that maps them.

A client's mistake is a 4xx (400, or 401/404/409 where more precise); a round the game master
could not finish, or a model gm cannot reach, is 502 (the server behind this one failed). The body
is always `{"error": "<one sentence>"}`.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse

from gm.errors import Conflict, GmError, NotFound, OperatorError, PlayError, StoryBusy, Unauthorized, UsageError

# Looked up along the error's class hierarchy, most precise first.
STATUS: dict[type[GmError], int] = {
    Unauthorized: 401,
    NotFound: 404,
    Conflict: 409,
    UsageError: 400,
    StoryBusy: 409,
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
    return JSONResponse({"error": str(error)}, status_code=status_for(error))
