"""The story API: JSON endpoints (documented at /docs), and the same rounds as server-sent events.

Every story has an unguessable id and a secret token given once at creation; each request about a
story needs `Authorization: Bearer <token>`. With GM_API_TOKEN set, creating a story needs
`Authorization: Bearer <GM_API_TOKEN>`. Errors are JSON, `{"error": "<one sentence>"}`, with a 4xx
status for bad input; a round the model could not finish is 502, a story busy with another round 409
(the mapping is `gm.web._errors`; the shapes and the documented statuses are `gm.web.schemas`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gm.engine.commands import RollDice, Say, SetDice, Simple, parse_command
from gm.engine.results import RoundEvents, RoundPaused, RoundResult
from gm.engine.table import OWNER, Viewer
from gm.engine.transcript import sheets, story_public
from gm.engine.typed_dice import read_faces
from gm.errors import BrokenWorld, Conflict, Forbidden, GmError, RoundWaiting, UsageError
from gm.integrity.secret import refuse_if_ended
from gm.store import NOTHING_TO_REGENERATE, NOTHING_WAITING, Story, waiting_sentence
from gm.transcript.shapes import QuestionPublic, StoryPublic, TranscriptPublic
from gm.transcript.sheets import SheetsPublic
from gm.web._live import Relay
from gm.web._seated import play_seated, round_for
from gm.web._transcript_page import AFTER, LIMIT, MOST_PAGE_ROUNDS, MOST_ROUND, PAGE_ROUNDS, viewed_transcript
from gm.web.schemas import (
    EVENT_STREAM,
    AbandonedOut,
    FacesIn,
    GatheringOut,
    MessageIn,
    PlayedOut,
    RoundOut,
    SettingsIn,
    StartedOut,
    StoryIn,
    WorldOut,
    errors,
)
from gm.web.service import Service

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api")


# The dependencies are `async def` though they never wait: FastAPI runs a plain `def` dependency in its
# thread pool, two thread hand-offs for every request (measured in a profile of `gm serve` under load).
async def service(request: Request) -> Service:
    found: Service = request.app.state.service
    return found


# Documented as the HTTP bearer scheme (the Authorize button of /docs); a missing or other header is None here,
# and the route says what it needed.
_bearer = HTTPBearer(auto_error=False, description="a story's token, or the server's API token to start a story")


async def bearer(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> str | None:
    if credentials is None:
        return None
    return credentials.credentials.strip() or None


ServiceDep = Annotated[Service, Depends(service)]
TokenDep = Annotated[str | None, Depends(bearer)]


class EventStream(StreamingResponse):
    """A server-sent event stream (so the OpenAPI description says text/event-stream)."""

    media_type = "text/event-stream"


@router.get("/worlds", responses=errors(database=False))
def list_worlds(app: ServiceDep) -> list[WorldOut]:
    """The worlds of the server; a broken one is listed with the sentence saying why it cannot be played."""
    listed = []
    for name in app.world_names():
        try:
            world = app.world(name)
        except BrokenWorld as error:  # a world failing its check is listed, but not offered
            listed.append(WorldOut(name=name, title=name, premise="", players=[], checks=0, problem=str(error)))
            continue
        players = [character.name for character in world.players]
        checks = len(world.rules.checks) if world.rules else 0
        listed.append(
            WorldOut(name=name, title=world.title, premise=world.premise, players=players, checks=checks, problem=None)
        )
    return listed


@router.post("/stories", status_code=201, responses=errors(401, 404, 422))
def start_story(body: StoryIn, app: ServiceDep, token: TokenDep) -> StartedOut:
    """Start a story; the answer holds the story's secret token, which is not shown again."""
    app.check_api_token(token)
    story_id, story_token = app.start(
        body.world, body.dice, body.judge, fair=body.fair, player_seed=body.player_seed, dice_from=body.dice_from
    )
    return StartedOut(story=_story(app, story_id), token=story_token)


@router.get("/stories/{story_id}", responses=errors(401, 404, 422))
async def get_story(
    story_id: str,
    app: ServiceDep,
    token: TokenDep,
    after: Annotated[int | None, Query(ge=0, le=MOST_ROUND, description=AFTER)] = None,
    limit: Annotated[int, Query(ge=1, le=MOST_PAGE_ROUNDS, description=LIMIT)] = PAGE_ROUNDS,
) -> TranscriptPublic:
    """The story with a page of its transcript (the shape of `gm show --json`, with `page` saying which rounds it
    holds): by default its newest 200 rounds; `after` and `limit` ask for others. As its player sees it: a secret
    roll not yet revealed has no card, and is a sealed stub in the chain (gm.integrity.secret). A seat's token
    reads the seat's view: its own character's secret rolls and whispers, its own Dice setting (docs/table.md)."""
    viewer = await app.viewer(story_id, token)
    return await app.game.store.off_loop(viewed_transcript, app, story_id, viewer, limit, after)


@router.get("/stories/{story_id}/sheet", responses=errors(401, 404))
async def get_sheet(story_id: str, app: ServiceDep, token: TokenDep) -> SheetsPublic:
    """The characters' sheets now (null where the world's sheets cannot change), in words too, and every change
    the story's accepted rounds made, in order (gm.world.sheet, docs/sheets.md). A seat's token reads its own
    character's sheet and changes only (docs/table.md)."""
    viewer = await app.viewer(story_id, token)
    found = await app.game.store.off_loop(sheets, app.game.store, story_id)
    return found if viewer.seat is None else seat_sheet(found, viewer)


def seat_sheet(found: SheetsPublic, viewer: Viewer) -> SheetsPublic:
    """The part of the sheets a seat reads: its own character's (a band effect on another may tell a secret band)."""
    mine = {name: entry for name, entry in (found.sheet or {}).items() if viewer.sees(name)}
    return SheetsPublic(
        story=found.story,
        sheet=mine if found.sheet is not None else None,
        shown={name: words for name, words in found.shown.items() if viewer.sees(name)},
        changes=[change for change in found.changes if viewer.sees(change.character)],
    )


@router.post("/stories/{story_id}/end", responses=errors(401, 403, 404, 409))
async def end_story(story_id: str, app: ServiceDep, token: TokenDep) -> StoryPublic:
    """End the story: its secret rolls are shown, and it plays no more rounds (409 while a round waits for dice)."""
    await app.check_token(story_id, token)
    await app.game.end(story_id)
    await app.hub.publish(story_id, "ended", {})
    return await app.game.store.off_loop(_story, app, story_id)


@router.delete("/stories/{story_id}", status_code=204, responses=errors(401, 403, 404, 409))
async def delete_story(story_id: str, app: ServiceDep, token: TokenDep) -> None:
    """Delete the story and everything kept of it: its rounds, memory, model calls, and its dice record (rolls,
    hash chain, seeds), so it can no longer be audited here; a transcript exported before (`GET` this story, or
    `gm show STORY --json`) still can be, with `gm audit --file`. 409 while a round is being played."""
    await app.check_token(story_id, token)
    await app.forget(story_id)
    app.hub.wake(story_id)  # its streams here end (on PostgreSQL, every process's: gm.store._events)


@router.put("/stories/{story_id}/settings", responses=errors(401, 403, 404, 422))
def change_settings(story_id: str, body: SettingsIn, app: ServiceDep, token: TokenDep) -> StoryPublic:
    """Change the story's settings: its Dice setting, and at a shared table how rounds gather (docs/table.md)."""
    app.story(story_id, token)
    changed = body.model_dump(exclude_none=True)
    if changed.get("round_timer") == 0:
        changed["round_timer"] = None
    app.game.store.update_settings(story_id, changed)
    return _story(app, story_id)


@router.post("/stories/{story_id}/messages", responses=errors(401, 403, 404, 409, 422, 502))
async def send_message(story_id: str, body: MessageIn, app: ServiceDep, token: TokenDep) -> PlayedOut:
    """Play a round with what the player typed; the answer is the round, as in the transcript. A seat's message
    in a together story is gathered: `round` null and `gathering` until every seat has acted (docs/table.md)."""
    return await _play(app, story_id, body.text, None, await app.viewer(story_id, token))


@router.post("/stories/{story_id}/regenerate", responses=errors(401, 403, 404, 409, 502))
async def regenerate(story_id: str, app: ServiceDep, token: TokenDep) -> PlayedOut:
    """A new narration of the last round; its rolls are kept (409 before any round)."""
    await app.check_token(story_id, token)
    return await _play(app, story_id, "/regenerate", None)


@router.post("/stories/{story_id}/faces", responses=errors(401, 403, 404, 409, 422, 502))
async def send_faces(story_id: str, body: FacesIn, app: ServiceDep, token: TokenDep) -> PlayedOut:
    """The faces the player rolled at the table for the check its round waits on; the round then goes on
    (400 with one sentence for faces that do not answer the question, which stands; 409 if none waits).
    At a shared table, only the seat of the character the check is for (or the owner) types its faces."""
    viewer = await app.viewer(story_id, token)
    await app.game.store.off_loop(whose_faces, app, story_id, viewer)
    return await _answer(app, story_id, body.faces, None, viewer)


@router.post(
    "/stories/{story_id}/faces/stream",
    response_class=EventStream,
    responses={**EVENT_STREAM, **errors(401, 403, 404, 409, 422)},
)
async def stream_faces(story_id: str, body: FacesIn, app: ServiceDep, token: TokenDep) -> EventStream:
    """The faces, with the rest of the round as server-sent events; faces that do not answer are a 400 before it."""
    viewer = await app.viewer(story_id, token)
    question = await app.game.store.off_loop(whose_faces, app, story_id, viewer)
    if question is None:
        raise Conflict(NOTHING_WAITING)
    read_faces(body.faces, question)  # a wrong answer is a 400 before any stream starts
    return _stream(app, story_id, lambda events: _answer(app, story_id, body.faces, events, viewer))


def whose_faces(app: Service, story_id: str, viewer: Viewer) -> QuestionPublic | None:
    """The question a round waits on, if this viewer may answer it: a seat only its own character's check."""
    question = app.game.store.question(story_id)
    if question is not None and not viewer.is_owner and question.character != viewer.character:
        raise Forbidden(f"the round waits for {question.character}'s dice; only that character's seat types them")
    return question


@router.post("/stories/{story_id}/abandon", responses=errors(401, 403, 404, 409))
async def abandon(story_id: str, app: ServiceDep, token: TokenDep) -> AbandonedOut:
    """Drop the round waiting for the player's dice (409 if none waits); its rolls stay in the story."""
    await app.check_token(story_id, token)
    abandoned = await app.game.abandon(story_id)
    await app.hub.publish(story_id, "abandoned", {"round": abandoned})
    return AbandonedOut(round=abandoned)


@router.post(
    "/stories/{story_id}/messages/stream",
    response_class=EventStream,
    responses={**EVENT_STREAM, **errors(401, 403, 404, 409, 422)},
)
async def stream_message(story_id: str, body: MessageIn, app: ServiceDep, token: TokenDep) -> EventStream:
    """The same round as server-sent events: working, roll, refusal, narration, then done or failed
    (409 before any stream for a story that has ended, or whose round waits for the player's dice)."""
    viewer = await app.viewer(story_id, token)
    await app.game.store.off_loop(streamable, app, story_id, token, False, viewer)
    if viewer.is_owner:
        parse_or_refuse(body.text)  # bad commands are a 400 before any stream starts
    else:
        parse_command(body.text)
    return _stream(app, story_id, lambda events: _play(app, story_id, body.text, events, viewer))


@router.post(
    "/stories/{story_id}/regenerate/stream",
    response_class=EventStream,
    responses={**EVENT_STREAM, **errors(401, 403, 404, 409)},
)
async def stream_regenerate(story_id: str, app: ServiceDep, token: TokenDep) -> EventStream:
    """A new telling of the last round as server-sent events; 409 before any round, as without the stream."""
    await app.game.store.off_loop(streamable, app, story_id, token, True)
    return _stream(app, story_id, lambda events: _play(app, story_id, "/regenerate", events))


def streamable(
    app: Service, story_id: str, token: str | None, regenerating: bool = False, viewer: Viewer = OWNER
) -> Story:
    """The story, if the token opens it and a round of it could start now (it reads the database: run it off
    the loop). What would stop a round at its start is a 409 before a stream starts, not a `failed` event in it."""
    story = app.story(story_id, token) if viewer.is_owner else app.game.store.story(story_id)
    if regenerating and story.rounds == 0:
        raise Conflict(NOTHING_TO_REGENERATE)
    refuse_if_ended(story)
    if (question := app.game.store.question(story.id)) is not None:
        raise RoundWaiting(waiting_sentence(question))
    return story


def parse_or_refuse(text: str) -> Any:
    command = parse_command(text)  # a CommandError is the client's mistake too: a 400
    if command is None:
        raise UsageError("the message is empty")
    if isinstance(command, SetDice):
        raise UsageError("change the Dice setting with PUT /api/stories/{id}/settings")
    if isinstance(command, Simple) and command.name != "regenerate":
        raise UsageError(f"/{command.name} is a command of the terminal chat, not of the API")
    return command


async def _play(
    app: Service, story_id: str, text: str, events: RoundEvents | None, viewer: Viewer = OWNER
) -> PlayedOut:
    if not viewer.is_owner:  # a seat's message (gm.web._seated)
        relay = Relay(app.hub, story_id, text, character=viewer.character)
        told = both(events, relay)
        try:
            answer = await play_seated(app, story_id, text, told, viewer)
        except Exception as error:
            await _failed(relay, error)
            raise
        if isinstance(answer, GatheringOut):
            gathering = answer.model_dump(mode="json")  # who acted and who has yet to: no action's words
            if events is not None:
                events("gathering", gathering)
            relay.tell("gathering", gathering)
            return await _relayed(relay, PlayedOut(round=None, gathering=answer))
        return await _relayed(relay, played(answer, told))
    command = parse_or_refuse(text)
    said = command.text if isinstance(command, Say | RollDice) else ""
    relay = Relay(app.hub, story_id, said, regenerating=isinstance(command, Simple))
    told = both(events, relay)
    try:
        if isinstance(command, Simple):  # /regenerate
            result = await app.game.regenerate(story_id, events=told)
        elif isinstance(command, RollDice):
            result = await app.game.play(story_id, command.text, player_roll=command.roll, events=told)
        else:
            assert isinstance(command, Say)
            result = await app.game.play(story_id, command.text, events=told)
    except Exception as error:
        await _failed(relay, error)
        raise
    return await _relayed(relay, played(result, told))


async def _answer(
    app: Service, story_id: str, faces: str, events: RoundEvents | None, viewer: Viewer = OWNER
) -> PlayedOut:
    relay = Relay(app.hub, story_id, None)
    told = both(events, relay)
    try:
        result = await app.game.answer(story_id, faces, events=told)
    except Exception as error:
        await _failed(relay, error)
        raise
    return await _relayed(relay, played(round_for(result, viewer), told))


def both(events: RoundEvents | None, relay: Relay) -> RoundEvents:
    """The round's events told to the player's own stream (if any) and to the other viewers (gm.web._live)."""
    if events is None:
        return relay

    def tell(kind: str, data: dict[str, Any]) -> None:
        events(kind, data)
        relay(kind, data)

    return tell


async def _relayed(relay: Relay, answer: PlayedOut) -> PlayedOut:
    """The round, told to the other viewers once its events before are written; then answered."""
    if (
        answer.round is not None and not relay.round_told
    ):  # its number only: each viewer reads the round as it may see it (whispers)
        relay.tell("round", {"number": answer.round.number, "regenerated": bool(answer.round.regenerated)})
    await relay.settled()
    return answer


async def _failed(relay: Relay, error: BaseException) -> None:
    """A round that started (its action was told) and failed: the other viewers drop it."""
    if relay.started:
        message = str(error) if isinstance(error, GmError) else "internal error; it has been logged"
        relay.tell("failed", {"error": message})
    await relay.settled()


def played(result: RoundResult | RoundPaused, events: RoundEvents | None) -> PlayedOut:
    """The answer for a round: played to its end, or paused for the player's dice (told as `asking` too)."""
    if isinstance(result, RoundPaused):
        if events is not None:
            events("asking", result.asking.model_dump(mode="json"))
        return PlayedOut(round=None, asking=result.asking)
    return PlayedOut(round=round_out(result))


def round_out(result: RoundResult) -> RoundOut:
    """A just-played round in the transcript's shape, and whether it was played again.

    Built from the result's own fields, which were checked when it was made (a RoundResult is a
    RoundPublic too): dumping it and checking the dump again cost 2% of a server's event loop."""
    return RoundOut.model_construct(
        _fields_set=result.model_fields_set & _ROUND_OUT_FIELDS,
        **{name: getattr(result, name) for name in _ROUND_OUT_FIELDS},
    )


_ROUND_OUT_FIELDS = frozenset(RoundOut.model_fields)


def _story(app: Service, story_id: str) -> StoryPublic:
    return story_public(app.game.store, app.game.store.story(story_id))


def _stream(app: Service, story_id: str, play: Callable[[RoundEvents], Awaitable[PlayedOut]]) -> EventStream:
    async def events() -> AsyncIterator[str]:
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def tell(kind: str, data: dict[str, Any]) -> None:
            # A roll comes already in the transcript's shape, so a front end draws its card once.
            queue.put_nowait((kind, data))

        async def run() -> None:
            try:
                answer = await play(tell)
                tell("done", answer.model_dump(mode="json"))
            except GmError as error:
                tell("failed", {"error": str(error)})
            except Exception:  # a bug: the client still gets its `failed` event, and the log the traceback
                log.exception("internal error while streaming a round of story %s", story_id)
                tell("failed", {"error": "internal error; it has been logged"})
            finally:
                queue.put_nowait(None)

        task = asyncio.create_task(run())
        while (item := await queue.get()) is not None:
            kind, data = item
            yield f"event: {kind}\ndata: {json.dumps(data)}\n\n"
        await task

    return EventStream(events(), headers={"Cache-Control": "no-store"})
