"""`gm serve`: one FastAPI app with the story API, the play page, and the world editor mounted at /editor."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from gm._hosts import LOOPBACK_HOSTS
from gm.engine.game import Game
from gm.errors import GmError
from gm.web import _pages as pages
from gm.web._api_integrity import router as integrity_router
from gm.web._api_live import router as live_router
from gm.web._errors import answer_error, database_answer, error_body
from gm.web._fast_messages import FastMessages
from gm.web._limits import MAX_BODY_BYTES, MAX_CHAT_BYTES, BodyLimit, HostGuard
from gm.web._live import StoryChanges
from gm.web.api import router
from gm.web.compat.routes import CHAT_PATH
from gm.web.compat.routes import router as compat_router
from gm.web.schemas import tidy_openapi
from gm.web.service import Service
from gm.web.table import router as table_router

if TYPE_CHECKING:
    from gm.editor.sessions import Login

log = logging.getLogger(__name__)
DOCS_ASSETS = "/docs-assets"  # where the script and styles of /docs are served


def create_app(
    game: Game,
    worlds_dir: Path,
    *,
    api_token: str | None = None,
    editor: bool = True,
    editor_hosts: Sequence[str] = LOOPBACK_HOSTS,
    editor_login: Login | None = None,
    api_hosts: Sequence[str] = LOOPBACK_HOSTS,
) -> FastAPI:
    """The whole web app around one Game; everything a round needs lives in the game's database.

    The app answers only to the Host names `api_hosts` (`gm serve` passes `gm._hosts.allowed_hosts` of
    its address: loopback names on a loopback address, any elsewhere), so a page whose DNS name is
    rebound to 127.0.0.1 cannot play stories from a visitor's browser. The editor writes world files,
    so it answers only to `editor_hosts`, and asks for `editor_login` when given one (which any Host
    name beyond loopback needs).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.service.hub.end_streams_on_exit()  # a stopping server ends its live streams (gm.web._live)
        yield
        await app.state.service.hub.aclose()  # the live streams' listening connection (gm.web._live)
        await game.aclose()  # the models' connections, before the server's event loop ends

    # The API's description at /docs (Swagger UI), its script and styles served from this app (fastapi-offline
    # ships them), so the page works where the server has no internet. ReDoc is left out: its page fetches
    # its logo from Redocly's site.
    app = FastAPIOffline(
        title="gm",
        summary="A game master whose dice are rolled by code: the story API.",
        lifespan=lifespan,
        static_url=DOCS_ASSETS,
        redoc_url=None,
    )
    app.state.service = Service(game, worlds_dir, api_token)
    app.include_router(router)
    app.include_router(integrity_router)
    app.include_router(live_router)
    app.include_router(table_router)
    app.include_router(pages.router)
    app.include_router(compat_router)
    app.add_exception_handler(GmError, answer_error)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(SQLAlchemyError, _database_error)
    app.add_exception_handler(Exception, _internal_error)
    app.openapi = lambda: app.openapi_schema or _described(app)  # type: ignore[method-assign]
    app.add_middleware(StoryChanges, hub=app.state.service.hub)  # gm.web._live
    app.add_middleware(FastMessages, service=app.state.service)  # inside the two guards below (gm.web._fast_messages)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES, wider={CHAT_PATH: MAX_CHAT_BYTES})
    app.add_middleware(HostGuard, hosts=api_hosts)  # added last, so it runs first
    if editor:
        from gm.editor.app import create_app as create_editor

        app.mount("/editor", create_editor(worlds_dir, allowed_hosts=editor_hosts, login=editor_login))
    return app


def _described(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI description, made once, with the API's own error shape (see `tidy_openapi`)."""
    app.openapi_schema = tidy_openapi(FastAPI.openapi(app))
    return app.openapi_schema


async def _http_error(request: Request, error: Any) -> JSONResponse:
    """Starlette's own errors (an unknown path, a wrong method) in the API's `{"error": ...}` shape."""
    messages = {404: f"there is no {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
    message = messages.get(error.status_code, str(error.detail))
    if error.status_code == 400 and error.detail == FASTAPI_UNREADABLE_BODY:
        return _unreadable_body(request.url.path, error.__cause__)
    body = error_body(request.url.path, message, error.status_code)
    return JSONResponse(body, status_code=error.status_code, headers=getattr(error, "headers", None))


# FastAPI's detail when reading a JSON body fails otherwise than by a JSONDecodeError; the cause is chained.
FASTAPI_UNREADABLE_BODY = "There was an error parsing the body"


def _unreadable_body(path: str, cause: BaseException | None) -> JSONResponse:
    """A body FastAPI could not read, as one sentence saying why: JSON nested too deeply is invalid JSON (422)."""
    if isinstance(cause, RecursionError):
        return _not_json(path, "it is nested too deeply")
    if isinstance(cause, ValueError) and "digits" in str(cause):  # Python's limit on converting a long integer
        return _not_json(path, f"a number in it has more than {sys.get_int_max_str_digits():,} digits")
    # No request found reaches this (bodies that are not UTF-8 are refused before, with their byte).
    return JSONResponse(error_body(path, "the request body could not be read", 400), status_code=400)


def _not_json(path: str, reason: str) -> JSONResponse:
    """The 422 for a body that is not valid JSON, with why in brackets."""
    return JSONResponse(error_body(path, f"the request body is not valid JSON ({reason})", 422), status_code=422)


# Pydantic's words for a few problems, as a player's client would rather read them.
WORDING = {"string_pattern_mismatch": "must hold more than spaces"}


async def _invalid_request(request: Request, error: Any) -> JSONResponse:
    """The first problem with a request body, as one sentence (FastAPI would send a list of dicts)."""
    path = request.url.path
    problems = error.errors()
    if not problems:
        return JSONResponse(error_body(path, "the request is not valid", 422), status_code=422)
    first = problems[0]
    if first.get("type") == "json_invalid":
        reason = str(first.get("ctx", {}).get("error", "")).lower() or "it cannot be parsed"
        position = first.get("loc", ())[-1:]  # json's error message ends "... at"; where is the index FastAPI kept
        if position and isinstance(position[0], int):
            reason = f"{reason.removesuffix(' at')} at character {position[0] + 1}"
        return _not_json(path, reason)
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "the body"
    message = WORDING.get(str(first.get("type")), first.get("msg", "is not valid"))
    return JSONResponse(error_body(path, f"{where}: {message}", 422), status_code=422)


async def _database_error(request: Request, error: Exception) -> JSONResponse:
    """A database failure in any route (a full disk, a server gone): a 503 with one sentence, never a 500."""
    log.warning("database failure on %s %s: %s", request.method, request.url.path, error)
    return database_answer(request.url.path, error)


async def _internal_error(request: Request, error: Exception) -> JSONResponse:
    log.exception("internal error on %s %s", request.method, request.url.path)
    return JSONResponse(error_body(request.url.path, "internal error; it has been logged", 500), status_code=500)
