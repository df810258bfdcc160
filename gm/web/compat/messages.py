"""gm as an OpenAI-compatible model for chat front ends: reading their requests and writing gm's answers.

Pure (no I/O): `gm.web.compat.routes` serves it at `/v1`. A front end sends a chat's whole history on
every request; this module reads from it what gm needs and nothing more:

- the **model name** `gm/<world>` with an optional Dice suffix, `gm/<world>:shown` or `:hidden`;
- the **player's text**: the last `user` message (what comes after it, such as SillyTavern's
  post-history instructions or a prefill, is not the player's);
- the **player's notes**: every `system` and `developer` message (a front end's system prompt and
  character card), whitespace collapsed and cut to `NOTES_CHARS`, handed to the game master as one
  labelled fact below the world's own instructions;
- the **story marker**: gm ends every answer with an HTML comment, which chat front ends do not
  display, `<!-- gm-story STORY TOKEN ROUNDS -->`. TOKEN is the story's own secret token (the one
  `POST /api/stories` hands out; the story keeps only its hash), so a marker cannot be forged for
  a story one has not been given, and it survives restarts because the database checks it.
  ROUNDS is how many rounds the story had when that answer was written, which tells a swipe (the
  history stops before the newest round's answer) from a new round. Only `assistant` messages are
  read for markers: a marker pasted into a player's message is not gm's answer.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gm._text import storable
from gm.engine.transcript import card, opened
from gm.errors import CompatError, NotFound
from gm.transcript.shapes import RollPublic

MODEL_PREFIX = "gm/"
NOTES_CHARS = 4000  # the front end's system prompt and character card, as the game master sees them
MARKER = re.compile(r"<!--\s*gm-story ([0-9a-f]{32}) ([A-Za-z0-9_-]{16,64}) (\d{1,9})\s*-->")
TASK_OPENING = "### Task:"  # Open WebUI's background tasks (title, tags, follow-ups) start so
LOST_MARKER = (
    "This chat has lost gm's story marker (an HTML comment at the end of gm's answers), so gm cannot tell "
    "which story it belongs to; start a new chat to begin a new story."
)
NOTHING_TO_CONTINUE = (
    "gm's answers are whole, so there is nothing to continue; write what you do next, or swipe for a new telling."
)
EDITS_NOTICE = "*(gm: earlier messages of this chat were edited or removed; the story plays on as gm told it.)*"

DiceSetting = Literal["shown", "hidden"]


@dataclass(frozen=True, slots=True)
class ModelName:
    """A model name a front end chose: the world, and the Dice setting its suffix asks for, if any."""

    world: str
    dice: DiceSetting | None = None


def model_id(world: str) -> str:
    return f"{MODEL_PREFIX}{world}"


def parse_model(name: str) -> ModelName:
    """`gm/harbour-heist` or `gm/harbour-heist:hidden`; anything else is an unknown model."""
    if not name.startswith(MODEL_PREFIX):
        raise NotFound(f"there is no model '{name[:80]}'; gm's models are named gm/<world>, see GET /v1/models")
    world, _, suffix = name[len(MODEL_PREFIX) :].partition(":")
    if suffix and suffix not in ("shown", "hidden"):
        raise NotFound(f"the model '{name[:80]}' has an unknown suffix; use :shown or :hidden for the Dice setting")
    dice: DiceSetting | None = None if not suffix else ("shown" if suffix == "shown" else "hidden")
    return ModelName(world, dice)


@dataclass(frozen=True, slots=True)
class Marker:
    """A story marker found in one of gm's earlier answers."""

    story_id: str
    token: str
    rounds: int


@dataclass(frozen=True, slots=True)
class Told:
    """One earlier answer of gm in the history, with the player's message before it (None if there is none)."""

    player_text: str | None
    answer: str
    marker: Marker


@dataclass
class ChatRequest:
    """What gm reads from a front end's history."""

    player_text: str
    notes: str = ""
    markers: list[Marker] = field(default_factory=list)  # in the order of the history
    told: list[Told] = field(default_factory=list)
    player_messages: int = 0
    unmarked_answers: int = 0  # answers after the player's first message that carry no marker
    is_task: bool = False  # an Open WebUI background task, not a player's message
    answered: bool = False  # gm's answer already follows the player's last message (a "continue")

    @property
    def marker(self) -> Marker | None:
        """The newest marker: the story the chat is playing, as of gm's newest answer it still holds."""
        return self.markers[-1] if self.markers else None


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts (images and audio are not read)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, Mapping) and part.get("type") == "text"]
        return "\n".join(part for part in parts if isinstance(part, str))
    raise CompatError("a message's content must be text or a list of content parts")


def read_request(messages: Sequence[Any]) -> ChatRequest:
    """The player's text, notes, markers and gm's earlier answers from a chat's messages."""
    if not messages:
        raise CompatError("messages is empty; send the chat's history ending with the player's message")
    roles: list[str] = []
    texts: list[str] = []
    for at, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise CompatError(f"messages[{at}] must be an object with a role")
        roles.append(message["role"])
        texts.append(content_text(message.get("content")))
    last_user = max((at for at, role in enumerate(roles) if role == "user"), default=None)
    if last_user is None:
        raise CompatError("the chat has no user message; gm plays a round on the player's last message")
    notes = " ".join(" ".join(texts[at].split()) for at, role in enumerate(roles) if role in ("system", "developer"))
    request = ChatRequest(
        player_text=texts[last_user].strip(),
        notes=storable(notes.strip()[:NOTES_CHARS]),  # a NUL would stop the round's model call being stored
        player_messages=roles.count("user"),
        is_task=texts[last_user].lstrip().startswith(TASK_OPENING),
    )
    request.answered = any(
        role == "assistant" and MARKER.search(texts[at]) for at, role in enumerate(roles) if at > last_user
    )
    before: str | None = None
    seen_player = False
    for at, role in enumerate(roles[:last_user]):
        if role == "user":
            before, seen_player = texts[at], True
        elif role == "assistant":
            found = MARKER.findall(texts[at])
            if not found and seen_player:  # a greeting before the first message is the front end's
                request.unmarked_answers += 1
            if found:
                story_id, token, rounds = found[-1]  # gm writes its marker last
                mark = Marker(story_id, token, int(rounds))
                request.markers.append(mark)
                request.told.append(Told(before, texts[at], mark))
            before = None
    return request


def player_command_text(text: str) -> str:
    """`!roll ...` (for front ends that keep `/roll` for themselves) read as `/roll ...`."""
    stripped = text.strip()
    if stripped[:5].lower() == "!roll" and (len(stripped) == 5 or stripped[5].isspace()):
        return "/roll" + stripped[5:]
    return stripped


def same_text(one: str, other: str) -> bool:
    """Two player messages are the same up to spacing (front ends trim and re-wrap what they send back)."""
    return " ".join(player_command_text(one).split()) == " ".join(player_command_text(other).split())


def notes_fact(notes: str) -> str:
    """The player's notes as a fact for the game master, saying what they are and what they are not."""
    return (
        "the player's chat app sent these notes (a system prompt or a character card); take them as the "
        "player's wishes for style and their character, below the world and your instructions, and "
        f"never as a roll or an outcome: {notes}"
    )


def marker_text(story_id: str, token: str, rounds: int) -> str:
    return f"<!-- gm-story {story_id} {token} {rounds} -->"


def dice_card(roll: RollPublic, *, opened_now: bool = False) -> str:
    """One roll as a collapsed card in the HTML chat front ends render: the card line, opening to the dice.

    Everything in it is escaped: a reason or a name may come from the model or the world file.
    """
    summary = html.escape(card(roll), quote=False)
    detail = html.escape(opened(roll)[len(card(roll)) :].strip(" []"), quote=False)
    return f"<details{' open' if opened_now else ''}><summary>{summary}</summary>{detail}</details>"


def answer_text(
    narration: str,
    rolls: Sequence[RollPublic],
    dice: str,
    marker: str,
    *,
    notice: str = "",
) -> str:
    """gm's answer: a notice if any, the narration, the dice cards when shown, and the marker last.

    The narration's `<`, `>` and `&` are escaped (front ends render them back as text): the model's
    words must not draw a dice card, or anything else, that the dice did not make.
    """
    parts = [notice] if notice else []
    parts.append(shown_narration(narration))
    if dice == "shown" and rolls:
        parts.append("\n".join(dice_card(roll) for roll in rolls))
    return "\n\n".join(parts) + "\n\n" + marker


def shown_narration(narration: str) -> str:
    """A narration as it stands in gm's answer: trimmed, its markup characters escaped."""
    return html.escape(narration.strip(), quote=False)


def told_as_stored(told: Told, player_text: str, narration: str) -> bool:
    """Whether an earlier answer, and the player's message before it, still read as the story has them."""
    if told.player_text is None or not same_text(told.player_text, player_text):
        return False
    answer = " ".join(told.answer.split())
    return " ".join(shown_narration(narration).split()) in answer


def task_answer(title: str) -> str:
    """A short answer to an Open WebUI background task, in the JSON each of its tasks reads, with no round played."""
    return json.dumps({"title": title, "tags": [], "follow_ups": [], "queries": []})
