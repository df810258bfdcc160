"""The play page of `gm serve`: a start page listing the worlds, and a chat page for one story.

The pages are plain HTML (Jinja2, autoescaped) with a small script each; the scripts talk to the
story API (`gm.web.api`) and never put data into the page as HTML. A story's secret token reaches
the play page in the URL fragment (`/play/{id}#token=...`), which browsers never send to a server;
the page keeps it in the browser's storage and sends it as `Authorization: Bearer` on each API call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response
from fastapi.templating import Jinja2Templates

from gm.engine.commands import MAX_LINE
from gm.web.api import ServiceDep, list_worlds

HERE = Path(__file__).parent
STATIC = HERE / "static"
STATIC_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*\.(css|js|svg)$")
MEDIA_TYPES = {"css": "text/css", "js": "text/javascript", "svg": "image/svg+xml"}

# Everything the pages load is their own: no inline script or style, no other origin, no framing.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

templates = Jinja2Templates(directory=HERE / "templates")
router = APIRouter(include_in_schema=False)


def _page(request: Request, name: str, context: dict[str, Any]) -> HTMLResponse:
    page = templates.TemplateResponse(request, name, context)
    page.headers.update(PAGE_HEADERS)
    return page


@router.get("/", response_class=HTMLResponse)
def start_page(request: Request, app: ServiceDep) -> HTMLResponse:
    """The worlds a story can be started from, each with its Dice setting and a start button."""
    return _page(request, "start.html", {"worlds": list_worlds(app), "needs_api_token": app.api_token is not None})


@router.get("/play/{story_id}", response_class=HTMLResponse)
def play_page(request: Request, story_id: str) -> HTMLResponse:
    """The chat page of a story; the same page for any id, since the token is checked by the API calls it makes."""
    return _page(request, "play.html", {"story_id": story_id, "max_line": MAX_LINE})


@router.get("/static/{name}")
def static_file(name: str) -> Response:
    """The pages' scripts and style sheet (a flat folder; names are checked, so nothing outside it is served)."""
    match = STATIC_NAME.match(name)
    path = STATIC / name
    if match is None or not path.is_file():
        return JSONResponse({"error": f"there is no static file '{name}'"}, status_code=404)
    return FileResponse(
        path,
        media_type=MEDIA_TYPES[match.group(1)],
        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
    )
