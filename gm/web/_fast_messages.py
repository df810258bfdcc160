"""`POST /api/stories/{id}/messages` answered without FastAPI's per-request machinery, when the request is well formed.

Why: it is the request a server answers most, one a round, and FastAPI spends on it about a sixth
of a loaded server's event loop (bench/serve_bench.py under `py-spy --gil`): its middleware stack,
routing, dependency solving, the body parsed to Python and validated, the answer validated again and
encoded. Here the body is validated straight from its bytes (`MessageIn.model_validate_json`), the
token read as FastAPI's `HTTPBearer` reads it, the round played by the route's own code
(`gm.web.api._play`), and the answer encoded once (`PlayedOut.model_dump_json`).

What it answers is what the FastAPI route answers: the same JSON for the round, and for every
`GmError` the same status and `{"error": ...}` sentence (`gm.web._errors`). Anything else goes on to
the FastAPI app with its body as read, which answers it as the documented route does: a body that is not valid JSON
or not a valid message (so its 422 keeps FastAPI's and `gm.web.app`'s wording), a content type other
than JSON, a root path, a path that only looks like this one. An unforeseen exception propagates as
from the route, to the app's handler for it. The route stays declared in FastAPI, so /docs describes
it, and it serves whatever is handed on.

It sits inside `HostGuard` and `BodyLimit` (`gm.web.app.create_app`), so the Host check and the body's
size and encoding are settled before it runs.
"""

from __future__ import annotations

import re

from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gm._asgi import GONE, read_body, replaying
from gm.errors import GmError
from gm.web._errors import database_answer, error_body, status_for
from gm.web._limits import MAX_BODY_BYTES
from gm.web.api import _play
from gm.web.schemas import MessageIn
from gm.web.service import Service

# Starlette's own pattern for `/api/stories/{story_id}/messages`: a path parameter is anything but "/".
MESSAGES_PATH = re.compile(r"/api/stories/(?P<story_id>[^/]+)/messages")


class FastMessages:
    """The ASGI middleware that answers well-formed `POST /api/stories/{id}/messages` itself (see the module)."""

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service
        self.answered = 0  # requests answered here rather than handed on (for tests and a debugger)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        story_id = _story_of(scope)
        if story_id is None:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive, MAX_BODY_BYTES)  # whole already: `BodyLimit` read it and replays it
        if body == GONE:
            return
        assert isinstance(body, bytes)
        try:
            message = MessageIn.model_validate_json(body)
        except ValidationError:  # FastAPI says what is wrong, in the API's words (gm.web.app._invalid_request)
            await self.app(scope, replaying(body, receive), send)
            return
        self.answered += 1
        try:
            viewer = await self.service.viewer(story_id, _bearer_token(scope))  # the owner, or a seat (docs/table.md)
            played = await _play(self.service, story_id, message.text, None, viewer)
        except GmError as error:
            status = status_for(error)
            await JSONResponse(error_body(scope["path"], str(error), status), status_code=status)(scope, receive, send)
            return
        except SQLAlchemyError as error:  # as FastAPI's routes answer it (gm.web.app): a 503, not a 500
            await database_answer(scope["path"], error)(scope, receive, send)
            return
        await Response(played.model_dump_json(), media_type="application/json")(scope, receive, send)


def _story_of(scope: Scope) -> str | None:
    """The story id of a request this middleware answers; None for any other request."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    matched = MESSAGES_PATH.fullmatch(scope["path"])
    if matched is None or not _is_json(scope):
        return None
    return matched["story_id"]


def _is_json(scope: Scope) -> bool:
    """Whether FastAPI would read the body as JSON: no content type, or application/json (with parameters)."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bool(value.split(b";", 1)[0].strip().lower() == b"application/json")
    return True


def _bearer_token(scope: Scope) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, as `gm.web.api.bearer` reads it; None otherwise."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not credentials:
                return None
            return credentials.strip() or None
    return None
