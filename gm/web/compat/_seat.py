"""A chat front end joining a seat (docs/table.md): the seat's token is the front end's API key.

The chat's last user message is the seat's message in its story, free or together, exactly as
`POST /api/stories/{id}/messages` with the seat's token plays it (gm.web._seated); the answer is the round's
narration as the seat reads it (with a whisper to its character below it), or, while a together round
gathers, one sentence saying whom it waits for. No story marker is written or read: the key names the story.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from gm.engine.table import Viewer
from gm.errors import GmError
from gm.store import SeatRecord
from gm.web._errors import openai_error, status_for
from gm.web.api import _play
from gm.web.compat.messages import read_request
from gm.web.service import Service


def seat_viewer(app: Service, seat: SeatRecord) -> Viewer:
    """The seat as the viewer its messages are played by (reads the database)."""
    return Viewer(seat.id, seat.character, app.seated(seat.story_id), seat.dice)


async def seat_answer(app: Service, seat: SeatRecord, messages: list[Any]) -> str:
    """Play the chat's last user message as the seat's, and the answer's text."""
    text = read_request(messages).player_text
    viewer = await app.game.store.off_loop(seat_viewer, app, seat)
    played = await _play(app, seat.story_id, text, None, viewer)
    if played.gathering is not None:
        waiting = ", ".join(played.gathering.waiting_for) or "the owner to close it"
        return f"({seat.character}'s action is taken; the round waits for {waiting}.)"
    if played.round is None:  # a check to roll at the table
        asking = played.asking
        return f"(Roll {asking.notation} for {asking.check_name} and send the faces.)" if asking else ""
    answer = played.round.narration
    for whisper in played.round.whispers or []:
        if whisper.text is not None and whisper.character == seat.character:
            answer += f"\n\n(Whispered to {seat.character}: {whisper.text})"
    return answer


async def seat_stream(app: Service, seat: SeatRecord, messages: list[Any], model: str) -> AsyncIterator[str]:
    """The same answer as chat.completion.chunk events, then `[DONE]`; a refusal as OpenAI's error event."""
    ident, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}
        return f"data: {json.dumps(data)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    try:
        answer = await seat_answer(app, seat, messages)
    except GmError as error:
        yield f"data: {json.dumps(openai_error(str(error), status_for(error)))}\n\n"
        return
    yield chunk({"content": answer})
    yield chunk({}, "stop")
    yield "data: [DONE]\n\n"
