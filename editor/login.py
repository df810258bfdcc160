"""The editor's login over HTTP: a middleware that wants a session on every request, and the login page.

    GET  /login, POST /login    the token, typed once, for a session cookie (then back where you were)
    POST /logout                end this browser's session

Without a valid session every request but `/login` and `/static/...` gets the login page with a 401,
and nothing behind it runs (a form posted after the session ended saves nothing; the browser's Back
button still holds what was typed). The cookie is HttpOnly, SameSite=Strict, Secure when the request
came over HTTPS, and scoped to the path the editor is mounted at.
"""

from __future__ import annotations

import math
import re

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from .pages import editor_of, posted_form
from .security import SAFE_METHODS
from .sessions import Login, client_key

COOKIE = "gm_editor_session"
PUBLIC_PREFIXES = ("/static/",)  # the style sheet, script and icon: the login page needs them too
# Where a login may lead back to: the editor's own pages, never another site (`//evil.example`).
_NEXT = re.compile(r"(?:/[a-z0-9][a-z0-9.-]*)*/?")

router = APIRouter()


def login_of(request: Request) -> Login:
    login: Login = request.app.state.login
    return login


def route_path(scope: Scope) -> str:
    """The request's path inside the editor, whatever it is mounted under (`/editor/worlds/x` gives `/worlds/x`)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path or "/"


def safe_next(path: str | None) -> str:
    """`path` when it is one of the editor's own pages, else `/`: a login must not send anyone elsewhere."""
    return path if path and path != "/" and _NEXT.fullmatch(path) else "/"


def has_session(headers: Headers, login: Login) -> bool:
    """Whether any session cookie sent is valid (two editors on one host name share the browser's cookie jar)."""
    for cookie in headers.getlist("cookie"):
        for pair in cookie.split(";"):
            name, _, value = pair.strip().partition("=")
            if name == COOKIE and login.valid(value.strip('"')):
                return True
    return False


def login_page(
    request: Request, status: int, message: str | None, next_path: str, *, alarm: bool = True
) -> HTMLResponse:
    """The login form, with a message above it: in red (`alarm`) when something went wrong."""
    lasts = lasting(login_of(request).lifetime)
    return editor_of(request).page(
        request, "login.html", status, message=message, alarm=alarm, next=safe_next(next_path), lasts=lasts
    )


def lasting(seconds: int) -> str:
    """How long a session lasts, in words: `lasting(43200)` is '12 hours', `lasting(90)` '1 minute'."""
    hours, minutes = seconds // 3600, seconds // 60
    if hours:
        return f"{hours} hour{'s' * (hours != 1)}"
    return f"{minutes} minute{'s' * (minutes != 1)}" if minutes else f"{seconds} seconds"


class LoginMiddleware:
    """Answers the login page (401) to any request without a valid session, static files and /login aside."""

    def __init__(self, app: ASGIApp, login: Login) -> None:
        self.app = app
        self.login = login

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan; the editor has no websockets
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        headers = Headers(scope=scope)
        if path == "/login" or path.startswith(PUBLIC_PREFIXES) or has_session(headers, self.login):
            await self.app(scope, receive, send)
            return
        expired = any(COOKIE in cookie for cookie in headers.getlist("cookie"))
        reading = scope["method"] in SAFE_METHODS
        if reading:
            message = "Your login has ended; log in again." if expired else "Log in to use the world editor."
        else:
            # The body is never read: whoever is not logged in cannot make the editor parse anything.
            ended = "your login has ended" if expired else "you are not logged in"
            message = (
                f"Nothing was changed: {ended}. Log in, then go back to your form (your browser keeps what you"
                " typed) and send it again."
            )
        response = login_page(Request(scope), 401, message, path, alarm=expired or not reading)
        await response(scope, receive, send)


@router.get("/login")
async def show_login(request: Request, next: str = "/") -> Response:
    if has_session(request.headers, login_of(request)):
        return editor_of(request).redirect(request, safe_next(next))
    return login_page(request, 200, None, next)


@router.post("/login")
async def log_in(request: Request) -> Response:
    login = login_of(request)
    form = await request.form(max_files=0, max_fields=10)
    typed, next_path = form.get("token"), form.get("next")
    next_path = next_path if isinstance(next_path, str) else "/"
    client = client_key(request.client.host if request.client else None)
    wait = login.failures.wait(client)
    if wait > 0:
        # Refused even when right: otherwise the limit would still tell a guesser which guess was right.
        seconds = math.ceil(wait)
        message = f"Too many wrong tokens from your address: try again in {seconds} second{'s' * (seconds != 1)}."
        refused = login_page(request, 429, message, next_path)
        refused.headers["retry-after"] = str(seconds)
        return refused
    if not isinstance(typed, str) or not typed.strip():
        return login_page(request, 400, "Type the editor's token to log in.", next_path)
    if not login.matches(typed):
        login.failures.failed(client)
        message = "That is not the editor's token. It is GM_EDITOR_TOKEN, or the one printed when the editor started."
        return login_page(request, 401, message, next_path)
    login.failures.forget(client)
    response = editor_of(request).redirect(request, safe_next(next_path))
    response.set_cookie(
        COOKIE,
        login.issue(),
        max_age=login.lifetime,
        path=request.scope.get("root_path", "") or "/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


@router.post("/logout")
async def log_out(request: Request) -> RedirectResponse:
    await posted_form(request)  # its form token: another site cannot log the author out
    response = editor_of(request).redirect(request, "/login")
    response.delete_cookie(
        COOKIE,
        path=request.scope.get("root_path", "") or "/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response
