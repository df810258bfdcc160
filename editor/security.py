"""What keeps the editor to its folder and its own pages: safe world names, a body limit, and cross-site checks.

Every world is a folder directly inside WORLDS_DIR whose name matches `WORLD_NAME`; its resolved path
must stay inside WORLDS_DIR, so neither `..` nor a symbolic link leads elsewhere. State-changing
requests carry a per-process token in a hidden field and, when the browser sends an Origin header,
must come from the editor's own origin. Request bodies over `MAX_BODY_BYTES` get a 413.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from gm._asgi import GONE, TOO_LARGE, read_body, replaying

WORLD_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
MAX_BODY_BYTES = 1_000_000
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def valid_world_name(name: str) -> bool:
    """Whether `name` may name a world folder: lower-case letters, digits and hyphens, 1 to 63 of them."""
    return WORLD_NAME.fullmatch(name) is not None


def world_folder(root: Path, name: str) -> Path:
    """The folder of world `name` inside `root`, whether or not it exists yet; a 404 for any other name.

    A 404 rather than a 400: a name the editor cannot use names no world it could show.
    """
    if not valid_world_name(name):
        raise HTTPException(
            404, f"There is no world called {name!r} here: a world's name is lower-case letters, digits and hyphens."
        )
    folder = (root / name).resolve()
    if folder.parent != root.resolve():  # a symbolic link out of the folder
        raise HTTPException(404, f"The world {name!r} is not inside the editor's folder.")
    return folder


def world_file(folder: Path, filename: str) -> Path:
    """`filename` inside a world folder, refused when it is a symbolic link (it could point anywhere)."""
    path = folder / filename
    if path.is_symlink():
        raise HTTPException(403, f"{filename} in this world is a symbolic link, which the editor does not follow.")
    return path


class CsrfGuard:
    """The per-process token every form carries, and the checks a state-changing request must pass."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)

    def check_token(self, sent: str | None) -> None:
        """Refuse a form without this process's token (a page from another site cannot know it)."""
        if not sent or not secrets.compare_digest(sent.encode(), self.token.encode()):
            raise HTTPException(
                403,
                "This form is out of date or did not come from the editor (its security token is missing or"
                " wrong). Reload the page and try again.",
            )


def same_origin(headers: Headers, scheme: str) -> bool:
    """Whether a request's Origin (when the browser sent one) is the editor's own scheme, host and port."""
    origin = headers.get("origin")
    if origin is None:
        return True
    return origin == f"{scheme}://{headers.get('host', '')}"


class GuardMiddleware:
    """Refuses oversize bodies (413) and cross-origin writes (403) before any route reads the request."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if not same_origin(headers, scope.get("scheme", "http")):
            await _plain(send, 403, "Refused: this request came from another site.")
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _plain(send, 413, f"Refused: a request may carry at most {self.max_body:,} bytes.")
            return
        # Read the body here, whatever its framing, so that a chunked upload is held to the limit as well.
        body = await read_body(receive, self.max_body)
        if body == GONE:
            return
        if body == TOO_LARGE:
            await _plain(send, 413, f"Refused: a request may carry at most {self.max_body:,} bytes.")
            return
        assert isinstance(body, bytes)
        await self.app(scope, replaying(body, receive), send)


async def _plain(send: Send, status: int, text: str) -> None:
    body = f"{text}\n".encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
