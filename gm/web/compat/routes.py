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
import hashlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from gm.engine.commands import HELP, Command, RollDice, Say, SetDice, Simple, parse_command
from gm.engine.results import RoundPaused, RoundResult
from gm.errors import BrokenWorld, CompatError, Conflict, GmError, NotFound
from gm.store import Story
from gm.transcript.shapes import RoundPublic
from gm.web._errors import openai_error, status_for
from gm.web.api import ServiceDep, TokenDep
from gm.web.compat.messages import (
    EDITS_NOTICE,
    LOST_MARKER,
    NOTHING_TO_CONTINUE,
    ChatRequest,
    ModelName,
    answer_text,
    dice_card,
    marker_text,
    model_id,
    notes_fact,
    parse_model,
    player_command_text,
    read_request,
    same_text,
    task_answer,
    told_as_stored,
)
from gm.web.service import Service

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", include_in_schema=False)
CHAT_PATH = "/v1/chat/completions"
Prepared = tuple[Story, str] | None  # the chat's story and its token; None for a front end's background task
NOTICE_WINDOW = 20  # gm's newest answers in a history compared with the story for edits
KEEPALIVE_SECONDS = 10.0  # an SSE comment while a streamed round is played, so proxies keep the line open
CHAT_HELP = HELP.replace(
    "  /roll NOTATION [what for]  roll your own dice, e.g. /roll 2d6+1 pick the lock",
    "  /roll NOTATION [what for]  roll your own dice, e.g. /roll 2d6+1 pick the lock (or !roll ...)",
).replace(
    "  /quit                      leave (the story is saved; continue with gm play --story ID)",
    "  Swipe or regenerate for a new telling with the same dice; a new chat is a new story.\n"
    "  /start                     (as a chat's first message) the world's opening, with no round played",
)


class ChatIn(BaseModel):
    """The parts of a chat completion request gm reads; every other field (temperature, top_p, top_k, stop,
    max_tokens, presence_penalty, logit_bias, and the front ends' own) is accepted and not used: the game
    master's model is gm's, with gm's settings."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(max_length=200)
    messages: list[Any]
    stream: bool | None = False
    n: int | None = 1
    stream_options: dict[str, Any] | None = None


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
async def chat_completions(body: ChatIn, app: ServiceDep, token: TokenDep) -> dict[str, Any] | StreamingResponse:
    """Play the chat's last user message as a round of the chat's story (or a command), and answer as a model."""
    app.check_api_token(token)
    if body.n not in (None, 1):
        raise CompatError("gm answers one choice per request; set n to 1")
    play = ChatPlay(app, parse_model(body.model), read_request(body.messages))
    usage = bool((body.stream_options or {}).get("include_usage"))
    if body.stream:
        prepared = await play.prepare()  # every refusal before the stream starts is a plain error
        return StreamingResponse(
            _streamed(play, prepared, body.model, usage),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )
    answer = await play.run(await play.prepare())
    return _completion(body.model, answer, play.chat.player_text)


class ChatPlay:
    """One request of a chat: which story it plays, then the round or command it asks for."""

    def __init__(self, app: Service, name: ModelName, chat: ChatRequest) -> None:
        self.app = app
        self.name = name
        self.chat = chat

    async def prepare(self) -> Prepared:
        """The chat's story and its token: the one its newest marker opens, or a new one for a new chat
        (None for an Open WebUI background task, which plays nothing). Its work, the worlds folder's and
        the database's, runs off the event loop (`Store.off_loop`), as a round's does."""
        return await self.app.game.store.off_loop(self._prepare)

    def _prepare(self) -> Prepared:
        if self.name.world not in self.app.world_names():  # a 404 before anything is written
            raise NotFound(f"there is no model '{model_id(self.name.world)}'; GET /v1/models lists gm's models")
        if self.chat.is_task:
            return None
        if self.chat.answered:
            raise CompatError(NOTHING_TO_CONTINUE)
        chat_command(self.chat.player_text)  # bad commands are refused before a story starts
        marker = self.chat.marker
        if marker is None:
            if self.chat.unmarked_answers:
                raise CompatError(LOST_MARKER)
            story_id, token = self.app.start(self.name.world, self.name.dice or "shown")
        else:
            try:
                self.app.story(marker.story_id, marker.token)
            except NotFound:
                raise CompatError(
                    "the story marker in this chat opens no story on this server; start a new chat"
                ) from None
            story_id, token = marker.story_id, marker.token
        story = self.app.game.store.story(story_id)
        if self.name.dice is not None and story.settings.get("dice") != self.name.dice:
            self.app.game.store.update_settings(story_id, {"dice": self.name.dice})
            story = self.app.game.store.story(story_id)
        return story, token

    async def run(self, prepared: Prepared) -> str:
        """The answer's text: a command's, or the round's narration with its cards, and the marker."""
        game = self.app.game
        command = chat_command(self.chat.player_text) if prepared is not None else None
        if prepared is None or _plays_no_round(command):
            return await game.store.off_loop(self._answer_command, prepared, command)
        story, token = prepared
        facts = (notes_fact(self.chat.notes),) if self.chat.notes else ()
        swipe, notice = await game.store.off_loop(self._swipe_and_notice, story)
        result: RoundResult | RoundPaused
        if isinstance(command, Simple) or swipe:
            result = await game.regenerate(story.id, facts=facts)
        elif isinstance(command, RollDice):
            result = await game.play(story.id, command.text, facts=facts, player_roll=command.roll)
        else:
            assert isinstance(command, Say)
            result = await game.play(story.id, command.text, facts=facts)
        if isinstance(result, RoundPaused):  # chat stories are started rolling by the engine (dice at the table: /api)
            raise Conflict("this story waits for dice rolled at the table, which a chat front end cannot send")
        dice = (await game.store.off_loop(game.store.story, story.id)).settings.get("dice", "shown")
        return answer_text(
            result.narration, result.rolls, dice, marker_text(story.id, token, result.number), notice=notice
        )

    def _answer_command(self, prepared: Prepared, command: Command | object) -> str:
        """The answer to a background task or to a command that plays no round (it reads the worlds folder or
        the database: run it off the loop)."""
        if prepared is None:
            return task_answer(self.app.world(self.name.world).title)
        story, token = prepared
        if command is START:
            return self._opening(story) + "\n\n" + marker_text(story.id, token, story.rounds)
        if isinstance(command, SetDice):
            self.app.game.store.update_settings(story.id, {"dice": command.setting})
            return f"Dice are {command.setting} from now on.\n\n" + marker_text(story.id, token, story.rounds)
        assert isinstance(command, Simple)
        return self._simple(command.name, story) + "\n\n" + marker_text(story.id, token, story.rounds)

    def _swipe_and_notice(self, story: Story) -> tuple[bool, str]:
        """Whether the request is a swipe, and the notice of an edited history to put before the answer."""
        swipe = self._is_swipe(story)
        return swipe, self._notice(story, swipe)

    def _is_swipe(self, story: Story) -> bool:
        """A swipe: the history stops before the newest round's answer and ends with that round's player text."""
        marker = self.chat.marker
        if marker is None or story.rounds == 0 or marker.rounds != story.rounds - 1:
            return False  # a chat without a marker is a new story, whatever it says
        last = self.app.game.store.round(story.id, story.rounds)
        return last is not None and same_text(last.player_text, self.chat.player_text)

    def _opening(self, story: Story) -> str:
        """`/start`: the world's title, premise and player characters, with no round played (and so no dice)."""
        world = self.app.game.world(story.id)
        players = ", ".join(character.name for character in world.players) or "nobody in particular"
        return f"**{world.title}**\n\n{world.premise}\n\nYou play {players}. Say what you do; /help lists the commands."

    def _simple(self, name: str, story: Story) -> str:
        if name == "help":
            return CHAT_HELP
        if name == "quit":
            return "There is nothing to leave here: this chat keeps its story; a new chat starts a new one."
        last = self.app.game.store.round(story.id, story.rounds)  # /open
        if last is None or not last.rolls:
            return "The last round rolled no dice." if last else "No round has been played yet."
        rolls = RoundPublic.from_record(last, self.app.game.world(story.id)).rolls
        return "\n".join(dice_card(roll, opened_now=True) for roll in rolls)

    def _notice(self, story: Story, swipe: bool) -> str:
        """One line, once per change, when the history no longer holds the story as gm told it."""
        store = self.app.game.store
        own = [told for told in self.chat.told if told.marker.story_id == story.id and told.marker.rounds > 0]
        own = own[-NOTICE_WINDOW:]  # a bound on the work per request, however long the chat
        after = min((told.marker.rounds for told in own), default=1) - 1
        rounds = {record.number: record for record in store.rounds(story.id, after=after)} if own else {}
        changed = []
        for told in own:
            record = rounds.get(told.marker.rounds)
            if told.player_text is None or _is_command(told.player_text) or record is None:
                continue
            if not told_as_stored(told, record.player_text, record.narration):
                changed.append(f"{told.marker.rounds}:{told.player_text}:{told.answer}")
        marker = self.chat.marker
        if marker is not None and marker.rounds < story.rounds and not swipe:  # gm's newer answers are gone
            changed.append(f"dropped after {marker.rounds}")
        if not changed:
            return ""
        signature = hashlib.sha256("\n".join(changed).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if story.settings.get("chat_edits") == signature:
            return ""
        store.update_settings(story.id, {"chat_edits": signature})
        return EDITS_NOTICE


START = object()  # `/start` (or `/begin`): a chat's first answer without a round, so every answer has a marker


def chat_command(text: str) -> Command | object:
    """What the player's message asks for: a command of the terminal chat, `/start`, or words (`!roll` is `/roll`)."""
    line = player_command_text(text)
    if line.lower() in ("/start", "/begin"):
        return START
    command = parse_command(line)
    if command is None:
        raise CompatError("the player's message is empty")
    return command


def _plays_no_round(command: Command | object) -> bool:
    """`/start`, `/dice ...` and the commands answered without the game master (all but `/regenerate`)."""
    if command is START or isinstance(command, SetDice):
        return True
    return isinstance(command, Simple) and command.name != "regenerate"


def _is_command(text: str) -> bool:
    try:
        return not isinstance(chat_command(text), Say | RollDice)
    except GmError:
        return True


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
