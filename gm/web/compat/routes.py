"""gm as an OpenAI-compatible model: `GET /v1/models` and `POST /v1/chat/completions`, plain and streamed.

Each world is a model, `gm/<world>` (`gm/<world>:hidden` for a chat whose dice stay hidden); the
model behind the game master is gm's own (`gm serve --model ...`), whatever the front end chose.
Access is the story API's: with GM_API_TOKEN set, `Authorization: Bearer <GM_API_TOKEN>` (the front
end's "API key"); otherwise any key, on the Host names `gm serve` answers to. How a chat becomes a
story, and stays one, is `gm.web.compat.messages`; what a request plays is `ChatPlay.run` below. Errors are
OpenAI's `{"error": {"message", "type", "param", "code"}}` (`gm.web._errors`). These routes are not in
gm's own OpenAPI description: their description is OpenAI's.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from gm.errors import BrokenWorld, CompatError, GmError, NotFound
from gm.store import SeatRecord
from gm.web._errors import openai_error, status_for
from gm.web.api import ServiceDep, TokenDep
from gm.web.compat._body import read_chat
from gm.web.compat._play import ChatPlay, Prepared
from gm.web.compat._seat import seat_answer, seat_stream
from gm.web.compat.messages import (
    CONNECTED,
    is_connection_check,
    model_id,
    parse_model,
    read_request,
)
from gm.web.service import Service, hash_token, wire_bytes

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", include_in_schema=False)
CHAT_PATH = "/v1/chat/completions"
KEEPALIVE_SECONDS = 10.0  # an SSE comment while a streamed round is played, so proxies keep the line open
DISCONNECT_POLL_SECONDS = 0.25  # how often a plain (not streamed) request asks whether its client went away
CHAT_ID_HEADERS = ("x-openwebui-chat-id",)
USER_ID_HEADERS = ("x-openwebui-user-id",)


@router.get("/models")
def list_models(app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    """Every playable world as a model, and again with `:hidden` for chats whose dice stay hidden."""
    app.check_api_token(token)
    data = []
    for name in app.world_names():
        try:
            app.world(name)
        except (NotFound, BrokenWorld):  # a world failing its check cannot be played, so it is no model
            continue
        data += [_model(model_id(name)), _model(model_id(name) + ":hidden")]
    return {"object": "list", "data": data}


@router.get("/models/{name:path}")
def get_model(name: str, app: ServiceDep, token: TokenDep) -> dict[str, Any]:
    app.check_api_token(token)
    app.world(parse_model(name).world)
    return _model(name)


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "gm"}


@router.post("/chat/completions", response_model=None)
async def chat_completions(request: Request, app: ServiceDep, token: TokenDep) -> dict[str, Any] | StreamingResponse:
    """Play the chat's last user message as a round of the chat's story (or a command), and answer as a model.

    The API token (or a seat's token, which plays the message as that seat's: gm.web.compat._seat) is checked
    before the body is parsed, and the body is parsed and read in a worker thread (`gm.web.compat._body`): a big
    chat's history must not hold up the server's other requests."""
    seat = await _seat_of(app, token)
    if seat is not None:
        body = await asyncio.to_thread(read_chat, await request.body())
        if body.stream:
            stream = seat_stream(app, seat, body.messages, body.model)
            return StreamingResponse(stream, media_type="text/event-stream", headers={"Cache-Control": "no-store"})
        return _completion(body.model, await seat_answer(app, seat, body.messages), "")
    app.check_api_token(token)
    body = await asyncio.to_thread(read_chat, await request.body())
    if body.n not in (None, 1):
        raise CompatError("gm answers one choice per request; set n to 1")
    name = parse_model(body.model)
    if is_connection_check(body.messages, body.stream):
        if name.world not in await app.game.store.off_loop(app.world_names):
            raise NotFound(f"there is no model '{model_id(name.world)}'; GET /v1/models lists gm's models")
        return _completion(body.model, CONNECTED, "Hi")
    peer = request.client.host if request.client is not None else ""
    chat = await asyncio.to_thread(read_request, body.messages)
    play = ChatPlay(app, name, chat, chat_hint(request.headers), peer=peer)
    usage = bool((body.stream_options or {}).get("include_usage"))
    target = await play.prepare()  # every refusal (a busy story's 409 too) comes before a stream starts
    if body.stream:
        return StreamingResponse(
            _streamed(play, target, body.model, usage),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )
    answer = await _unless_gone(request, play.run(target))
    return _completion(body.model, answer, play.chat.player_text)


async def _seat_of(app: Service, token: str | None) -> SeatRecord | None:
    """The live seat whose token is the request's API key; None for any other key (the server's API token too)."""
    if token is None or (app.api_token is not None and hmac.compare_digest(wire_bytes(token), app.api_token.encode())):
        return None
    return await app.game.store.off_loop(app.game.store.seat_by_token, hash_token(token))


def chat_hint(headers: Mapping[str, str]) -> str | None:
    """A digest of the chat id a front end sends (Open WebUI's `X-OpenWebUI-Chat-Id`, with its user id), if any.

    Only a hint: anyone with the API key can set a header, so it never opens a story by itself. It finds the
    story of a chat whose history has no marker yet (a swipe of its first answer), and it tells a forked chat
    from its parent."""
    chat = next((headers[name] for name in CHAT_ID_HEADERS if headers.get(name)), None)
    if not chat:
        return None
    user = next((headers[name] for name in USER_ID_HEADERS if headers.get(name)), "")
    return hashlib.sha256(f"{user}\x1f{chat}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


async def _unless_gone(request: Request, work: Awaitable[str]) -> str:
    """`work`'s answer, cancelled at once if the client goes away meanwhile (a plain request's "stop")."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_SECONDS)
            if done:
                return task.result()
            if await request.is_disconnected():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise asyncio.CancelledError
    finally:
        if not task.done():
            task.cancel()


def _completion(model: str, answer: str, prompt: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{secrets.token_hex(12)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": _usage(prompt, answer),
    }


def _usage(prompt: str, answer: str) -> dict[str, int]:
    """An estimate at about four characters a token: gm's own model calls are counted in each story."""
    prompt_tokens, completion_tokens = len(prompt) // 4 + 1, len(answer) // 4 + 1
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


async def _streamed(play: ChatPlay, prepared: Prepared, model: str, usage: bool) -> AsyncIterator[str]:
    """chat.completion.chunk events: the role, keep-alive comments while the round is played, the answer,
    the finish, usage if asked, then `[DONE]`; a round that fails mid-stream sends OpenAI's error event."""
    ident, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}
        return f"data: {json.dumps(data)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    task = asyncio.create_task(play.run(prepared))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=KEEPALIVE_SECONDS)
            if done:
                break
            yield ": gm is playing the round\n\n"
        answer = task.result()
    except GmError as error:
        yield f"data: {json.dumps(openai_error(str(error), status_for(error)))}\n\n"
        return
    except Exception:  # a bug: the client still gets an error event, and the log the traceback
        log.exception("internal error while streaming a chat completion")
        yield f"data: {json.dumps(openai_error('internal error; it has been logged', 500))}\n\n"
        return
    finally:
        if not task.done():  # the client went away: the round is not left running unowned
            task.cancel()
    yield chunk({"content": answer})
    yield chunk({}, "stop")
    if usage:
        data = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": _usage(play.chat.player_text, answer),
        }
        yield f"data: {json.dumps(data)}\n\n"
    yield "data: [DONE]\n\n"
