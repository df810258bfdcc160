"""The editor's login over HTTP: a middleware that wants a session on every request, and the login page.

    GET  /login, POST /login    the token, typed once, for a session cookie (then back where you were)
    POST /logout                end this browser's session, on the server too (a copied cookie stops working)

Without a valid session every request but `/login` and `/static/...` gets the login page with a 401,
and nothing behind it runs. A form the author posted after their session ended (it carries this
process's form token, which only the editor's own pages hand out) is not lost: the login page keeps
it, and once logged in a button sends it again, as it was. The cookie is HttpOnly, SameSite=Strict,
Secure when the request came over HTTPS, and scoped to the path the editor is mounted at.
"""

from __future__ import annotations

import math
import re
import secrets
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from .pages import LOGGED_IN, MAX_FORM_FIELDS, Editor, editor_of, posted_form
from .security import CSRF_FIELD, MAX_BODY_BYTES, SAFE_METHODS
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


def session_cookies(headers: Headers) -> list[str]:
    """The values of every session cookie sent (two editors on one host name share the browser's cookie jar)."""
    return [
        value.strip('"')
        for cookie in headers.getlist("cookie")
        for name, _, value in (pair.strip().partition("=") for pair in cookie.split(";"))
        if name == COOKIE
    ]


def has_session(headers: Headers, login: Login) -> bool:
    """Whether any session cookie sent is valid."""
    return any(login.valid(value) for value in session_cookies(headers))


def login_page(
    request: Request,
    status: int,
    message: str | None,
    next_path: str,
    *,
    alarm: bool = True,
    carry: str | None = None,
) -> HTMLResponse:
    """The login form, with a message above it (in red when `alarm`) and the form to send again, if any."""
    lasts = lasting(login_of(request).lifetime)
    return editor_of(request).page(
        request,
        "login.html",
        status,
        message=message,
        alarm=alarm,
        next=safe_next(next_path),
        lasts=lasts,
        carry=carry,
    )


def carried_fields(editor: Editor, body: str | None) -> list[tuple[str, str]] | None:
    """The fields of a form posted while logged out, when it carries this process's form token; else None.

    Only the editor's own pages hand that token out, so a form that has it was the author's own work:
    the login keeps it to send again. Anything else a stranger posts is dropped.
    """
    if not body:
        return None
    try:
        fields = parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:
        return None
    tokens = [value for name, value in fields if name == CSRF_FIELD]
    if len(tokens) != 1 or not secrets.compare_digest(tokens[0].encode(), editor.csrf.token.encode()):
        return None
    return fields


async def posted_body(scope: Scope, receive: Receive) -> str | None:
    """A URL-encoded form's body as text, if it is one and within the body limit; else None (unread if possible)."""
    headers = Headers(scope=scope)
    kind = headers.get("content-type", "").partition(";")[0].strip().lower()
    length = headers.get("content-length")
    if kind != "application/x-www-form-urlencoded" or (length is not None and not length.isdigit()):
        return None
    if length is not None and int(length) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    while True:
        message = await receive()
        body.extend(message.get("body", b""))
        if len(body) > MAX_BODY_BYTES or message["type"] == "http.disconnect":
            return None
        if not message.get("more_body", False):
            break
    try:
        return body.decode("ascii")
    except UnicodeDecodeError:
        return None


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
        if has_session(headers, self.login):
            scope[LOGGED_IN] = True
            await self.app(scope, receive, send)
            return
        scope.pop(LOGGED_IN, None)  # only this middleware says who is logged in
        if path == "/login" or path.startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        expired = any(COOKIE in cookie for cookie in headers.getlist("cookie"))
        reading = scope["method"] in SAFE_METHODS
        carry = None
        if reading:
            message = "Your login has ended; log in again." if expired else "Log in to use the world editor."
        else:
            ended = "your login has ended" if expired else "you are not logged in"
            message = f"Nothing was changed: {ended}. Log in to go on."
            body = await posted_body(scope, receive) if path != "/logout" else None
            if carried_fields(editor_of(request), body) is not None:
                carry = body
                message = f"Nothing was saved yet: {ended}. Log in, and you can send your form again as it was."
        response = login_page(request, 401, message, path, alarm=expired or not reading, carry=carry)
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
    typed, next_path, carry = form.get("token"), form.get("next"), form.get("carry")
    next_path = next_path if isinstance(next_path, str) else "/"
    carry = carry if isinstance(carry, str) and carried_fields(editor_of(request), carry) is not None else None
    client = client_key(request.client.host if request.client else None)
    wait = login.failures.wait(client)
    if wait > 0:
        # Refused even when right: otherwise the limit would still tell a guesser which guess was right.
        seconds = math.ceil(wait)
        message = f"Too many wrong tokens from your address: try again in {seconds} second{'s' * (seconds != 1)}."
        refused = login_page(request, 429, message, next_path, carry=carry)
        refused.headers["retry-after"] = str(seconds)
        return refused
    if not isinstance(typed, str) or not typed.strip():
        return login_page(request, 400, "Type the editor's token to log in.", next_path, carry=carry)
    if not login.matches(typed):
        login.failures.failed(client)
        message = "That is not the editor's token. It is GM_EDITOR_TOKEN, or the one printed when the editor started."
        return login_page(request, 401, message, next_path, carry=carry)
    login.failures.forget(client)
    response: Response = editor_of(request).redirect(request, safe_next(next_path))
    fields = carried_fields(editor_of(request), carry)
    if fields is not None:
        # A button, not a script: the author sees that the form is about to be sent, and to where.
        response = editor_of(request).page(request, "resend.html", fields=fields, next=safe_next(next_path))
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
    login = login_of(request)
    for value in session_cookies(request.headers):
        login.revoke(value)
    response = editor_of(request).redirect(request, "/login")
    response.delete_cookie(
        COOKIE,
        path=request.scope.get("root_path", "") or "/",
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response
