"""GET /api/stories/{id}/events: a story's events as they happen, as server-sent events (gm.web._live).

The stream opens with `ready`, whose id is the story's newest event: a page opens the stream, then
reads the story (GET /api/stories/{id}), then applies what the stream sends after `ready`, so nothing
falls between the two. Each event after it carries its `id` (the story's event seq); a client that
lost its connection sends the last id it had as `Last-Event-ID` and gets every event after it, or,
when those are no longer kept (gm.store._events.KEEP_EVENTS), `reset`: read the story again. The
stream ends with `gone` when the story is deleted, and with `revoked` when the token it was opened
with opens the story no more; a comment line every few seconds keeps it open through proxies.

Who sees what: every event is written in a form any holder of the story's token may see (a roll as the
player's transcript shows it, never a sealed secret roll), and an event meant for some seats only (a
whisper) names them in its audience; each stream sends only the events its viewer may see, checked
per stream at every read.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Request

from gm.engine.table import Viewer
from gm.errors import NotFound, Unauthorized, UsageError
from gm.store import OWNER_AUDIENCE, READ_AT_MOST, EventsRead
from gm.web import _live as live
from gm.web.api import EventStream, ServiceDep, TokenDep
from gm.web.schemas import EVENT_STREAM, errors
from gm.web.service import Service, hash_token

router = APIRouter(prefix="/api")


def audience_of(viewer: Viewer) -> str:
    """What a viewer is called in an event's audience: its seat's id, or `owner` for the story's own token."""
    return viewer.seat or OWNER_AUDIENCE


@router.get(
    "/stories/{story_id}/events",
    response_class=EventStream,
    responses={**EVENT_STREAM, **errors(400, 401, 404, 409)},
)
async def story_events(
    story_id: str,
    request: Request,
    app: ServiceDep,
    token: TokenDep,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> EventStream:
    """The story's events as they happen, for every page watching it: `action` (a player's words, as their
    round starts), `roll`, `asking` (a round waits for dice), `round` (the accepted round, as in the
    transcript), `failed`, `abandoned`, `ended`; `ready` first, `reset`, `gone` and `revoked` as said above.
    `Last-Event-ID` resumes after that event; 409 when the story has as many streams here as one server keeps."""
    viewer = await app.viewer(story_id, token)
    assert token is not None
    resume = _event_id(last_event_id)
    app.hub.admit(story_id)  # refused before the stream starts, as a 409
    stream = _follow(app, story_id, (token, audience_of(viewer)), resume, request)
    return EventStream(stream, headers=STREAM_HEADERS)


STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}  # nginx: pass each event on at once


def _event_id(given: str | None) -> int | None:
    if given is None or not given.strip():
        return None
    text = given.strip()
    if not text.isdigit() or len(text) > 18:
        raise UsageError(f"Last-Event-ID must be the id of an event this stream sent, a whole number, not {text!r}")
    return int(text)


def sse(kind: str, data: object, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data)}\n\n"


async def _follow(
    app: Service, story_id: str, viewer: tuple[str, str], resume: int | None, request: Request
) -> AsyncIterator[str]:
    token, audience = viewer
    store, hub = app.game.store, app.hub
    with hub.watching(story_id) as woken:
        left = asyncio.create_task(_left(request, woken))  # a viewer who leaves ends the stream at once
        try:
            if resume is None:
                newest = await store.off_loop(store.newest_event, story_id)
                yield sse("ready", {"newest": newest}, newest)
                last = newest
            else:
                last = resume
            heartbeat = False
            while not left.done() and not hub.closing:
                woken.clear()  # before the read: news arriving during it wakes the next wait at once
                read = await store.off_loop(store.events_after, story_id, last)
                if not read.exists:
                    yield sse("gone", {"story": story_id})
                    return
                if not await _still_opens(app, story_id, token, read):
                    yield sse("revoked", {"story": story_id})
                    return
                if read.missed:
                    yield sse("reset", {"newest": read.newest}, read.newest)
                    last = read.newest
                    continue
                for event in read.events:
                    if event.seen_by(audience):
                        yield sse(event.kind, event.data, event.seq)
                    last = event.seq
                if len(read.events) >= READ_AT_MOST:
                    continue  # more than one read's worth waiting
                if heartbeat:
                    yield ": keep-alive\n\n"
                try:
                    await asyncio.wait_for(woken.wait(), live.HEARTBEAT_SECONDS)
                    heartbeat = False
                except TimeoutError:
                    heartbeat = True
        finally:
            left.cancel()


async def _left(request: Request, woken: asyncio.Event) -> None:
    """Returns when the client closes its connection, waking its stream to end."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    woken.set()


async def _still_opens(app: Service, story_id: str, token: str, read: EventsRead) -> bool:
    """Whether the stream's token opens the story still: the owner's (its hash, just read), or a live seat's (read
    from the database: a revoked seat opens nothing from the moment of its revoke, in every process)."""
    if read.token_hash is not None and hmac.compare_digest(read.token_hash, hash_token(token)):
        return True
    try:
        await app.viewer(story_id, token)
    except (NotFound, Unauthorized):
        return False
    return True
