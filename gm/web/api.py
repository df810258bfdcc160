"""The story API: JSON endpoints (documented at /docs), and the same rounds as server-sent events.

Every story has an unguessable id and a secret token given once at creation; each request about a
story needs `Authorization: Bearer <token>`. With GM_API_TOKEN set, creating a story needs
`Authorization: Bearer <GM_API_TOKEN>`. Errors are JSON, `{"error": "<one sentence>"}`, with a 4xx
status for bad input; a round the model could not finish is 502, a story busy with another round 409
(the mapping is `gm.web.errors`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from gm.commands import MAX_LINE, RollDice, Say, SetDice, Simple, parse_command
from gm.errors import GmError, NotFound, UsageError
from gm.round import RoundEvents, RoundResult
from gm.transcript import story_public, transcript
from gm.web.service import Service

router = APIRouter(prefix="/api")


class StoryIn(BaseModel):
    """A story to start from one of the server's worlds."""

    world: str = Field(max_length=63, description="the world's folder name, as /api/worlds lists it")
    dice: Literal["shown", "hidden"] = "shown"
    judge: Literal["on", "off"] | None = Field(
        default=None,
        description="'off' plays the story without the narration judge (it then says so); "
        "by default, the server's choice. The judge's model is the server's.",
    )
    fair: bool = Field(default=False, description="provably fair dice: derived from a seed committed now (gm.fair)")
    player_seed: str | None = Field(
        default=None, max_length=200, description="with fair: the player's own seed, mixed into the dice"
    )


class MessageIn(BaseModel):
    """What the player typed: words for the game master, or a command such as `/roll 2d6+1 pick the lock`."""

    text: str = Field(min_length=1, max_length=MAX_LINE)


class SettingsIn(BaseModel):
    dice: Literal["shown", "hidden"]


def service(request: Request) -> Service:
    found: Service = request.app.state.service
    return found


def bearer(authorization: Annotated[str | None, Header()] = None) -> str | None:
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


ServiceDep = Annotated[Service, Depends(service)]
TokenDep = Annotated[str | None, Depends(bearer)]


@router.get("/worlds")
def list_worlds(app: ServiceDep) -> list[dict[str, Any]]:
    """The worlds a story can be started from."""
    listed = []
    for name in app.world_names():
        try:
            world = app.world(name)
        except NotFound:
            continue  # a world failing its check is not offered
        listed.append(
            {
                "name": name,
                "title": world.title,
                "premise": world.premise,
                "players": [character.name for character in world.players],
                "checks": len(world.rules.checks) if world.rules else 0,
            }
        )
    return listed


@router.post("/stories", status_code=201)
def start_story(body: StoryIn, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """Start a story; the answer holds the story's secret token, which is not shown again."""
    app.check_api_token(token)
    story_id, story_token = app.start(body.world, body.dice, body.judge, fair=body.fair, player_seed=body.player_seed)
    return {"story": _story(app, story_id), "token": story_token}


@router.get("/stories/{story_id}")
def get_story(story_id: str, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """The story with its whole transcript (the shape of `gm show --json`)."""
    app.story(story_id, token)
    return transcript(app.game.store, story_id).model_dump(mode="json")


@router.put("/stories/{story_id}/settings")
def change_settings(story_id: str, body: SettingsIn, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """Change the story's Dice setting."""
    app.story(story_id, token)
    app.game.store.update_settings(story_id, {"dice": body.dice})
    return _story(app, story_id)


@router.post("/stories/{story_id}/messages")
async def send_message(story_id: str, body: MessageIn, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """Play a round with what the player typed; the answer is the round, as in the transcript."""
    app.story(story_id, token)
    return await _play(app, story_id, body.text, None)


@router.post("/stories/{story_id}/regenerate")
async def regenerate(story_id: str, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """A new narration of the last round; its rolls are kept."""
    app.story(story_id, token)
    return await _play(app, story_id, "/regenerate", None)


@router.post("/stories/{story_id}/messages/stream")
async def stream_message(story_id: str, body: MessageIn, app: ServiceDep, token: TokenDep) -> StreamingResponse:
    """The same round as server-sent events: working, roll, refusal, narration, then done or failed."""
    app.story(story_id, token)
    parse_or_refuse(body.text)  # bad commands are a 400 before any stream starts
    return _stream(app, story_id, lambda events: _play(app, story_id, body.text, events))


@router.post("/stories/{story_id}/regenerate/stream")
async def stream_regenerate(story_id: str, app: ServiceDep, token: TokenDep) -> StreamingResponse:
    app.story(story_id, token)
    return _stream(app, story_id, lambda events: _play(app, story_id, "/regenerate", events))


def parse_or_refuse(text: str) -> Any:
    command = parse_command(text)  # a CommandError is the client's mistake too: a 400
    if command is None:
        raise UsageError("the message is empty")
    if isinstance(command, SetDice):
        raise UsageError("change the Dice setting with PUT /api/stories/{id}/settings")
    if isinstance(command, Simple) and command.name != "regenerate":
        raise UsageError(f"/{command.name} is a command of the terminal chat, not of the API")
    return command


async def _play(app: Service, story_id: str, text: str, events: RoundEvents | None) -> dict[str, Any]:
    command = parse_or_refuse(text)
    if isinstance(command, Simple):  # /regenerate
        result = await app.game.regenerate(story_id, events=events)
    elif isinstance(command, RollDice):
        result = await app.game.play(story_id, command.text, player_roll=command.roll, events=events)
    else:
        assert isinstance(command, Say)
        result = await app.game.play(story_id, command.text, events=events)
    return {"round": round_result_json(app, result)}


def round_result_json(app: Service, result: RoundResult) -> dict[str, Any]:
    """A just-played round in the transcript's shape, and whether it was played again."""
    return result.model_dump(mode="json", exclude={"story_id", "model_calls"})


def _story(app: Service, story_id: str) -> dict[str, Any]:
    return story_public(app.game.store, app.game.store.story(story_id)).model_dump(mode="json")


def _stream(app: Service, story_id: str, play: Callable[[RoundEvents], Awaitable[dict[str, Any]]]) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def tell(kind: str, data: dict[str, Any]) -> None:
            # A roll comes already in the transcript's shape, so a front end draws its card once.
            queue.put_nowait((kind, data))

        async def run() -> None:
            try:
                answer = await play(tell)
                tell("done", answer)
            except GmError as error:
                tell("failed", {"error": str(error)})
            finally:
                queue.put_nowait(None)

        task = asyncio.create_task(run())
        while (item := await queue.get()) is not None:
            kind, data = item
            yield f"event: {kind}\ndata: {json.dumps(data)}\n\n"
        await task

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})
