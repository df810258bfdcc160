"""gm as an OpenAI-compatible model for chat front ends: reading their requests and writing gm's answers.

Pure (no I/O): `gm.web.compat.routes` serves it at `/v1`. A front end sends a chat's whole history on
every request; this module reads from it what gm needs and nothing more:

- the **model name** `gm/<world>` with an optional Dice suffix, `gm/<world>:shown` or `:hidden`;
- the **player's text**: the last `user` message (what comes after it, such as SillyTavern's
  post-history instructions or a prefill, is not the player's);
- the **player's notes**: every `system` and `developer` message (a front end's system prompt and
  character card), whitespace collapsed and cut to `NOTES_CHARS`, handed to the game master as one
  labelled fact below the world's own instructions;
- the **story marker**: gm ends every answer with a Markdown link reference definition, which Markdown
  renders as nothing (Open WebUI and SillyTavern both hide it), `[gm-story]: #gm-story-STORY-ROUNDS-SEAL`
  (the label comes twice: SillyTavern's Markdown converter hides a definition only if its label
  appears again in the message).
  ROUNDS is how many rounds the story had when that answer was written, which tells a swipe (the
  history stops before the newest round's answer) from a new round. SEAL is an HMAC of the story id
  and ROUNDS under the story's token hash, which never leaves the server: a marker cannot be made up
  or moved to another round, and it holds no secret, so a front end's edit box may show it and a
  player may copy it. Markers of the form gm wrote before, `<!-- gm-story STORY TOKEN ROUNDS -->`
  with the story's own token, are still read, so chats begun then go on. Only `assistant` messages
  are read for markers: a marker pasted into a player's message is not gm's answer;
- **`/start`**'s answer ends with `[gm-opening]: #gm-opening-WORLD`: the world's opening starts no story, so a
  chat that only asked for it (or regenerated it) leaves none behind;
- a **connection check**: SillyTavern's "Test Message" (a lone user message `Hi`, not streamed) is
  answered without a story;
- a **rewrite request**: Open WebUI's "Add Details" and "More Concise" send the button's words as a
  new user message right after gm's newest answer; gm tells that round again with the same dice.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gm._text import storable
from gm.engine.commands import Command, RollDice, Say, SetDice, Simple, parse_command
from gm.engine.prompt import notes_fact as notes_fact
from gm.engine.transcript import card, opened
from gm.errors import CompatError, GmError, NotFound
from gm.transcript.shapes import RollPublic
from gm.transcript.sheet_view import change_text, sheet_lines
from gm.transcript.sheets import ChangePublic

MODEL_PREFIX = "gm/"
NOTES_CHARS = 4000  # the front end's system prompt and character card, as the game master sees them
SEAL_CHARS = 16  # 96 bits of HMAC-SHA256, base64url
MARKER = re.compile(r"^\[gm-story\]: #gm-story-([0-9a-f]{32})-(\d{1,9})-([A-Za-z0-9_-]{16})[ \t]*$", re.MULTILINE)
OLD_MARKER = re.compile(r"<!--\s*gm-story ([0-9a-f]{32}) ([A-Za-z0-9_-]{16,64}) (\d{1,9})\s*-->")
OPENING_MARKER = re.compile(r"^\[gm-opening\]: #gm-opening-[a-z0-9][a-z0-9_-]{0,62}[ \t]*$", re.MULTILINE)
TASK_OPENING = "### Task:"  # Open WebUI's background tasks (title, tags, follow-ups) start so
CONNECTION_CHECK = "hi"  # SillyTavern's "Test Message": [{"role": "user", "content": "Hi"}], not streamed
CONNECTED = (
    "gm is connected: each world is a model. A new chat's first message starts its story "
    "(or send /start for the world's opening)."
)
# Open WebUI's regenerate menu: each sends its label as a new user message after the answer it rewrites.
REWRITES = {
    "add details": "with more details",
    "more concise": "more concisely",
}
LOST_MARKER = (
    "This chat has lost gm's story marker (the line [gm-story]: ... at the end of gm's answers), so gm cannot "
    "tell which story it belongs to; start a new chat to begin a new story."
)
EDITED_FIRST = (
    "This chat's first message was edited, and gm's story of this chat began with the first one: go back to "
    "that version to play on, or start a new chat for a new story."
)
FORKED = (
    "This chat was forked from another chat before gm's first answer there, so it has no story to fork; "
    "start a new chat for a new story"
)
NOTHING_TO_CONTINUE = (
    "gm's answers are whole, so there is nothing to continue; write what you do next, or swipe for a new telling."
)
EDITS_NOTICE = (
    "*(gm: an earlier message of this chat was edited, removed or swapped for another version; "
    "gm's story keeps what was played and rolled, and this is its round {rounds}.)*"
)

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
    """A story marker found in one of gm's earlier answers: sealed (`seal`), or of the older form with the
    story's token in it (`token`)."""

    story_id: str
    rounds: int
    seal: str | None = None
    token: str | None = None


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
    unmarked_texts: list[str] = field(default_factory=list)  # those answers
    after_marker: list[str] = field(default_factory=list)  # unmarked answers after the newest marked one
    is_task: bool = False  # an Open WebUI background task, not a player's message
    answered: bool = False  # gm's answer already follows the player's last message (a "continue")
    rewrite: str | None = None  # "Add Details" and the like: how to tell gm's newest answer again
    opening: str = ""  # a digest of the chat up to the player's last message, for a chat without a marker

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
        role == "assistant" and find_marker(texts[at]) for at, role in enumerate(roles) if at > last_user
    )
    before: str | None = None
    seen_player = False
    for at, role in enumerate(roles[:last_user]):
        if role == "user":
            before, seen_player = texts[at], True
        elif role == "assistant":
            mark = find_marker(texts[at])
            # A greeting before the first message is the front end's; an empty answer is one the player stopped.
            if mark is None and seen_player and texts[at].strip() and not _gm_without_story(texts[at]):
                request.unmarked_answers += 1
                request.unmarked_texts.append(texts[at])
            if mark is not None:
                request.markers.append(mark)
                request.told.append(Told(before, texts[at], mark))
                request.after_marker = []
            elif texts[at].strip() and seen_player:
                request.after_marker.append(texts[at])
            before = None
    wording = " ".join(request.player_text.lower().split()).rstrip(".!")
    if wording in REWRITES and last_user > 0 and roles[last_user - 1] == "assistant":
        newest = request.told[-1] if request.told else None
        if newest is not None and newest.answer == texts[last_user - 1]:
            request.rewrite = REWRITES[wording]
    if not request.markers:
        request.opening = opening_digest(roles[: last_user + 1], texts)
    return request


def opening_digest(roles: Sequence[str], texts: Sequence[str]) -> str:
    """A digest of how a chat began: its messages up to the first player message played as a round, leaving out
    system messages (SillyTavern trims its card's examples as a chat grows), gm's answers that belong to no
    story and the commands they answered. Taken when its story starts, and again from a later history that
    lost its markers, it is the same."""
    seen: list[str] = []
    for role, text in zip(roles, texts, strict=False):
        if role not in ("user", "assistant") or (role == "assistant" and _gm_without_story(text)):
            continue
        if role == "user" and _is_command_text(text):
            continue
        seen.append(f"{role}\x1f{' '.join(text.split())}")
        if role == "user":
            break
    return hashlib.sha256("\x1e".join(seen).encode("utf-8", "surrogatepass")).hexdigest()


def _is_command_text(text: str) -> bool:
    """A command that plays no round (`/start`, `/help`, ...), as opposed to words or a `/roll`."""
    line = player_command_text(text)
    return line.startswith("/") and not line.lower().startswith("/roll")


def find_marker(text: str) -> Marker | None:
    """The story marker gm wrote at the end of an answer (the last one, should a message hold several)."""
    found = MARKER.findall(text)
    if found:
        story_id, rounds, seal = found[-1]
        return Marker(story_id, int(rounds), seal=seal)
    old = OLD_MARKER.findall(text)
    if old:
        story_id, token, rounds = old[-1]
        return Marker(story_id, int(rounds), token=token)
    return None


def _gm_without_story(text: str) -> bool:
    """gm's answers that belong to no story: the world's opening (`/start`) and a connection check's."""
    return bool(OPENING_MARKER.search(text)) or text.strip() == CONNECTED


def is_connection_check(messages: Sequence[Any], stream: bool | None) -> bool:
    """SillyTavern's "Test Message": one user message saying `Hi`, not streamed; it starts no story."""
    if stream or len(messages) != 1 or not isinstance(messages[0], Mapping):
        return False
    message = messages[0]
    text = message.get("content")
    return message.get("role") == "user" and isinstance(text, str) and text.strip().lower() == CONNECTION_CHECK


def player_command_text(text: str) -> str:
    """`!roll ...` (for front ends that keep `/roll` for themselves) read as `/roll ...`."""
    stripped = text.strip()
    if stripped[:5].lower() == "!roll" and (len(stripped) == 5 or stripped[5].isspace()):
        return "/roll" + stripped[5:]
    return stripped


def same_text(one: str, other: str) -> bool:
    """Two player messages are the same up to spacing (front ends trim and re-wrap what they send back)."""
    return " ".join(player_command_text(one).split()) == " ".join(player_command_text(other).split())


def seal(token_hash: str, story_id: str, rounds: int) -> str:
    """The seal of a marker: an HMAC of the story and its round count under the story's token hash (kept only on
    the server), so it opens that story at that round and nothing else, and tells nothing of the token."""
    key = ("gm-story-marker\x00" + token_hash).encode()
    digest = hmac.new(key, f"{story_id}:{rounds}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode()[:SEAL_CHARS]


def marker_text(story_id: str, token_hash: str, rounds: int) -> str:
    """The story marker ending gm's answer: a Markdown link reference definition, which renders as nothing."""
    return f"[gm-story]: #gm-story-{story_id}-{rounds}-{seal(token_hash, story_id, rounds)}"


def opening_marker(world: str) -> str:
    """The line ending `/start`'s answer, so the chat's next message is read as a chat's first (no story yet)."""
    return f"[gm-opening]: #gm-opening-{world}"


def rewrite_fact(how: str) -> str:
    """What the game master is told of a rewrite request, as a player's note (never a roll)."""
    return notes_fact(f"tell the last round again {how}; it keeps its dice and outcomes")


def dice_card(roll: RollPublic, *, opened_now: bool = False) -> str:
    """One roll as a collapsed card in the HTML chat front ends render: the card line, opening to the dice.

    Everything in it is escaped: a reason or a name may come from the model or the world file.
    """
    summary = html.escape(card(roll), quote=False)
    detail = html.escape(opened(roll)[len(card(roll)) :].strip(" []"), quote=False)
    # Open WebUI reads a card only with a line break after <details> and after </summary>; SillyTavern takes both.
    return f"<details{' open' if opened_now else ''}>\n<summary>{summary}</summary>\n{detail}\n</details>"


def sheet_card(changes: Sequence[ChangePublic], sheet: Mapping[str, Any] | None, *, opened_now: bool = False) -> str:
    """The round's sheet changes as one collapsed card (`/sheet`: the sheets now, opened), from the database:
    the changes on the summary line, opening to every character's sheet. Escaped like a dice card."""
    told = "; ".join(change_text(change) for change in changes)
    summary = html.escape(f"Sheet: {told}" if told else "Sheets now", quote=False)
    detail = "\n".join(html.escape(line, quote=False) for line in sheet_lines(sheet))
    return f"<details{' open' if opened_now else ''}>\n<summary>{summary}</summary>\n{detail}\n</details>"


def answer_text(
    narration: str,
    rolls: Sequence[RollPublic],
    dice: str,
    marker: str,
    *,
    notice: str = "",
    changes: Sequence[ChangePublic] = (),
    sheet: Mapping[str, Any] | None = None,
) -> str:
    """gm's answer: a notice if any, the narration, the dice cards when shown, the sheet card when the round
    changed a sheet, and the marker last.

    The narration's `<`, `>` and `&` are escaped (front ends render them back as text): the model's
    words must not draw a dice card, or anything else, that the dice did not make.
    """
    parts = [notice] if notice else []
    parts.append(shown_narration(narration))
    if dice == "shown" and rolls:
        parts.append("\n\n".join(dice_card(roll) for roll in rolls))
    if changes:
        parts.append(sheet_card(changes, sheet))
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


def plays_no_round(command: Command | object) -> bool:
    """`/start`, `/dice ...` and the commands answered without the game master (all but `/regenerate`)."""
    if command is START or isinstance(command, SetDice):
        return True
    return isinstance(command, Simple) and command.name != "regenerate"


def is_command(text: str) -> bool:
    """A player's message that played no round of its own: a command, or a rewrite request ("Add Details")."""
    if " ".join(text.lower().split()).rstrip(".!") in REWRITES:
        return True
    try:
        return not isinstance(chat_command(text), Say | RollDice)
    except GmError:
        return True
