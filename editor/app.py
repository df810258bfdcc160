"""The world editor's FastAPI app: `create_app(worlds_dir)` serves the worlds in one folder.

Routes (all pages are plain HTML forms; `static/editor.js` only adds the live preview):

    GET  /                                the worlds in WORLDS_DIR
    GET  /new, POST /new                  create a world (its folder and world.json)
    GET  /worlds/{name}, POST             world.json as a form: check, save, add/remove/move rows
    GET  /worlds/{name}/dice, POST        dice.json as a form, with problems and chance strips
    POST /worlds/{name}/dice/preview      the problems and strips of a posted form (for the script)
    GET  /worlds/{name}/dice/raw, POST    dice.json as JSON to copy, and a box to paste one in
    GET  /static/...                      the style sheet and the script
    GET  /login, POST /login, POST /logout  with a `login` only (editor/login.py)

Every POST needs the form's token (and a same-origin Origin header when one is sent); bodies are
limited to 1 MB; Host must be a loopback name unless `allowed_hosts` says otherwise (a page on
another site that rebinds its DNS name to 127.0.0.1 is refused). With a `login` (editor/sessions.py)
every request but the login page and static files needs its session cookie; answering any Host
name beyond loopback needs one, since the editor writes files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gm._hosts import LOOPBACK_HOSTS, is_loopback
from gm.errors import SettingsError, UsageError

from . import login as login_routes
from . import routes_dice, routes_world
from .pages import Editor, editor_of
from .security import GuardMiddleware
from .sessions import Login

STATIC = Path(__file__).with_name("static")
HEADERS = [
    # Styles may be inline only for the strips' widths; scripts come from the editor alone.
    (b"content-security-policy", b"default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
]


def create_app(
    worlds_dir: Path, *, allowed_hosts: Sequence[str] = LOOPBACK_HOSTS, login: Login | None = None
) -> FastAPI:
    """The editor over the world folders in `worlds_dir` (which must exist); mountable under any path.

    With `login`, every request needs a session from its login page. Host names beyond loopback
    (such as `*`) need one: the editor writes files, and must not write them for anyone who asks.
    """
    if not worlds_dir.is_dir():
        raise UsageError(f"there is no folder '{worlds_dir}' to edit worlds in")
    beyond = [host for host in allowed_hosts if not is_loopback(host)]
    if beyond and login is None:
        raise SettingsError(f"the editor needs a login to answer Host names beyond loopback, such as {beyond[0]!r}")
    app = FastAPI(title="gm world editor", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.editor = Editor(worlds_dir, needs_login=login is not None)
    app.state.login = login
    if login is not None:
        app.include_router(login_routes.router)
    app.include_router(routes_world.router)
    app.include_router(routes_dice.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _bad_request)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal_error)
    if login is not None:  # a stranger's request is answered with the login page before any route runs
        app.add_middleware(login_routes.LoginMiddleware, login=login)
    # Outside the login: a cross-site write is refused before the login page could keep it to send again.
    app.add_middleware(GuardMiddleware)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    app.add_middleware(SecurityHeaders)
    return app


class SecurityHeaders:
    """Adds the headers that keep pages from being framed, sniffed, or running scripts from elsewhere."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


_TITLES = {400: "Bad request", 403: "Refused", 404: "Not found", 405: "Not allowed", 413: "Too large"}


def _error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return editor_of(request).page(
        request, "error.html", status, heading=_TITLES.get(status, "Cannot do that"), message=message
    )


async def _http_error(request: Request, error: HTTPException) -> HTMLResponse:
    message = error.detail if error.detail and error.detail != "Not Found" else "There is no such page here."
    response = _error_page(request, error.status_code, str(message))
    if error.headers:
        response.headers.update(error.headers)
    return response


async def _bad_request(request: Request, error: RequestValidationError) -> HTMLResponse:
    return _error_page(request, 400, "The request could not be read; go back and try again.")


async def _internal_error(request: Request, error: Exception) -> HTMLResponse:
    message = f"Something went wrong in the editor ({type(error).__name__}). Please report it."
    return _error_page(request, 500, message)
