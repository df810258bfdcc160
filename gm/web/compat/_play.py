"""What one chat completion request plays: the story it belongs to, found or started, and the round, the
retelling, the command or the notice it asks for (how a chat's messages are read is gm.web.compat.messages)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gm.engine.commands import HELP, Command, RollDice, Say, SetDice, Simple
from gm.engine.results import RoundPaused, RoundResult
from gm.engine.transcript import player_sealed
from gm.errors import CompatError, Conflict, GmError, NotFound, StoryBusy
from gm.store import FORKED_FROM, Story
from gm.transcript.shapes import RoundPublic, as_utc
from gm.transcript.sheet_view import NO_SHEET
from gm.web.compat.messages import (
    EDITED_FIRST,
    EDITS_NOTICE,
    FORKED,
    LOST_MARKER,
    NOTHING_TO_CONTINUE,
    START,
    ChatRequest,
    Marker,
    ModelName,
    answer_text,
    chat_command,
    dice_card,
    find_marker,
    is_command,
    marker_text,
    model_id,
    notes_fact,
    opening_marker,
    plays_no_round,
    rewrite_fact,
    same_text,
    seal,
    sheet_card,
    shown_narration,
    task_answer,
    told_as_stored,
)
from gm.web.service import Service, hash_token

log = logging.getLogger(__name__)

NOTICE_WINDOW = 20  # gm's newest answers in a history compared with the story for edits
FREE_WAIT_SECONDS = 1.5  # how long a request waits for a story's lease to be let go before its 409
OPENING_WINDOW = timedelta(days=2)  # how far back a chat without a marker looks for the story it began
OPENING_CANDIDATES = 200  # newest stories of the world read for it
# Without a chat id (SillyTavern), a chat's first message swiped looks like a new chat that begins the same way;
# it is read as the swipe only while the story is this young (a player swipes a first answer at once).
FIRST_SWIPE_WINDOW = timedelta(minutes=15)
CHAT_HELP = HELP.replace(
    "  /roll NOTATION [what for]  roll your own dice, e.g. /roll 2d6+1 pick the lock",
    "  /roll NOTATION [what for]  roll your own dice, e.g. /roll 2d6+1 pick the lock (or !roll ...)",
).replace(
    "  /quit                      leave (the story is saved; continue with gm play --story ID)",
    "  Swipe or regenerate for a new telling with the same dice; a new chat is a new story.\n"
    "  /start                     (as a chat's first message) the world's opening, with no round played",
)


@dataclass
class Target:
    """What a request plays: the chat's story (None: a new one, started as its first round is played), how
    its marker is sealed, and what the history says of it."""

    story: Story | None
    token_hash: str = ""
    swipe: bool = False  # the history stops before the newest round's answer: tell that round again
    notice: str = ""  # one sentence put before the answer when the history is no longer the story's
    opening: str = ""  # a new story's chat digest, kept in its settings (`chat_opening`)


Prepared = Target | None  # None: an Open WebUI background task, which plays nothing


class ChatPlay:
    """One request of a chat: which story it plays, then the round or command it asks for."""

    def __init__(
        self, app: Service, name: ModelName, chat: ChatRequest, hint: str | None = None, *, peer: str = ""
    ) -> None:
        self.app = app
        self.name = name
        self.chat = chat
        self.hint = hint
        self.peer = peer  # the client's address: without a chat id, chats of other clients are never taken as this

    async def prepare(self) -> Prepared:
        """The chat's story: the one its newest marker opens, the one a chat without a marker began, or none yet
        (a new chat's story starts with its first round); None for an Open WebUI background task. A story whose
        round is being played is refused (409) once it has stayed busy for `FREE_WAIT_SECONDS`. Its work, the
        worlds folder's and the database's, runs off the event loop (`Store.off_loop`), as a round's does."""
        target = await self.app.game.store.off_loop(self._prepare)
        if target is not None and target.story is not None and self._plays_round():
            await self._wait_free(target.story.id)
        return target

    def _plays_round(self) -> bool:
        try:
            return not plays_no_round(chat_command(self.chat.player_text))
        except GmError:
            return False

    async def _wait_free(self, story_id: str) -> None:
        """Wait a moment for a round still letting its story go (a stopped one), then 409 if it is still busy."""
        deadline = time.monotonic() + FREE_WAIT_SECONDS
        store = self.app.game.store
        while True:
            story = await store.off_loop(store.story, story_id)
            expires = story.lease_expires
            if story.lease_holder is None or expires is None:
                return
            if as_utc(expires) <= datetime.now(UTC):
                return
            if time.monotonic() >= deadline:
                raise StoryBusy("a round of this chat's story is being played right now; try again when it is done")
            await asyncio.sleep(0.1)

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
            return self._without_marker()
        story = self._open(marker)
        known = story.settings.get("chat_hint")
        if self.hint is not None and known is not None and known != self.hint:
            return self._forked(story, marker)  # another chat's story: two chats never play one story in turns
        if self.hint is not None and known is None:  # a story begun before its front end sent chat ids
            self.app.game.store.update_settings(story.id, {"chat_hint": self.hint})
        if self.name.dice is not None and story.settings.get("dice") != self.name.dice:
            self.app.game.store.update_settings(story.id, {"dice": self.name.dice})
            story = self.app.game.store.story(story.id)
        assert story.token_hash is not None  # `_open` opens only stories with a token
        told = self._told_rounds(story, marker)
        swipe = self._is_swipe(story, told)
        return Target(story, story.token_hash, swipe=swipe, notice=self._notice(story, swipe, told))

    def _forked(self, parent: Story, marker: Marker) -> Target:
        """A chat forked from the chat of `parent` (its chat id differs from the one the story was begun in): its
        own story, forked from the parent's at the round its history holds, made by its first request
        (`Store.fork_story`). It shares the parent's rounds and rolls up to there and goes on alone."""
        store = self.app.game.store
        held = self._told_rounds(parent, marker)
        if held == 0:
            raise CompatError(FORKED)
        for story in store.recent_stories(parent.title, datetime.now(UTC) - OPENING_WINDOW, OPENING_CANDIDATES):
            forked = story.settings.get(FORKED_FROM) or {}
            if story.settings.get("chat_hint") == self.hint and forked.get("story") == parent.id:
                assert story.token_hash is not None
                last = store.round(story.id, story.rounds)
                again = story.rounds == held + 1 and last is not None
                swipe = again and last is not None and same_text(last.player_text, self.chat.player_text)
                return Target(story, story.token_hash, swipe=swipe)  # the fork's first request, once more
        token_hash = hash_token(secrets.token_urlsafe(32))
        try:
            fork = store.fork_story(parent.id, held, {"chat_hint": self.hint}, token_hash)
        except Conflict as refused:  # fair dice: no fork
            raise CompatError(f"{FORKED} ({refused})") from None
        return Target(fork, token_hash)

    def _told_rounds(self, story: Story, marker: Marker) -> int:
        """How many of the story's rounds the history holds: the newest marker's count, and one more for each
        answer after it that is the next round's narration (its marker cut out in an edit box)."""
        told = marker.rounds
        if not self.chat.after_marker:
            return told
        later = {record.number: record for record in self.app.game.store.rounds(story.id, after=told)}
        for answer in self.chat.after_marker:
            record = later.get(told + 1)
            if record is None or " ".join(shown_narration(record.narration).split()) not in " ".join(answer.split()):
                break
            told += 1
        return told

    def _open(self, marker: Marker) -> Story:
        """The story a marker opens: its seal (or, in an older marker, its token) must be the story's."""
        lost = CompatError("the story marker in this chat opens no story on this server; start a new chat")
        try:
            story = self.app.game.store.story(marker.story_id)
        except NotFound:
            raise lost from None
        if story.token_hash is None:
            raise lost
        if marker.token is not None:
            opens = hmac.compare_digest(story.token_hash, hash_token(marker.token))
        else:
            opens = hmac.compare_digest(seal(story.token_hash, story.id, marker.rounds), marker.seal or "")
        if not opens or marker.rounds > story.rounds:
            raise lost
        return story

    def _without_marker(self) -> Target:
        """A chat whose history holds no story marker: a new chat, the swipe of a chat's first answer, or a chat
        whose markers were deleted. Its opening (`chat_opening`, with Open WebUI's chat id as a hint) finds the
        story it began; the history's answers must then be the story's own."""
        opening = self._opening_key()
        story = self._begun(opening)
        if story is None:
            if self.chat.unmarked_answers:
                raise CompatError(LOST_MARKER)
            return Target(None, opening=opening)
        assert story.token_hash is not None
        if self.chat.unmarked_answers:  # the markers were cut out: the answers must still be the story's
            if not self._answers_are_the_story(story):
                raise CompatError(LOST_MARKER)
            return Target(story, story.token_hash)
        first = self.app.game.store.round(story.id, 1)
        young = self.hint is not None or as_utc(story.created_at) > datetime.now(UTC) - FIRST_SWIPE_WINDOW
        if story.rounds == 1 and first is not None and young and same_text(first.player_text, self.chat.player_text):
            return Target(story, story.token_hash, swipe=True)  # the first answer, told again with its dice
        if self.hint is None:  # no chat id to say it is this chat: a new chat that begins the same way
            return Target(None, opening=opening)
        # The chat's id names a story, but nothing in the history is that story's: the first message was edited
        # (or the id was set by hand). The id alone never opens a story, and this chat starts no second one.
        raise CompatError(EDITED_FIRST)

    def _opening_key(self) -> str:
        """The digest a chat without a marker is found by: its chat id where the front end sends one (Open WebUI),
        else the client's address and the history up to the player's first message (SillyTavern: the system
        prompt, the card, the greeting, the first words)."""
        basis = f"chat\x1f{self.hint}" if self.hint is not None else f"history\x1f{self.peer}\x1f{self.chat.opening}"
        return hashlib.sha256(f"{self.name.world}\x1f{basis}".encode()).hexdigest()[:32]

    def _begun(self, opening: str) -> Story | None:
        """The newest story this chat began (`chat_opening`), among the world's recent ones."""
        store = self.app.game.store
        world = self.app.world(self.name.world)
        since = datetime.now(UTC) - OPENING_WINDOW
        for story in store.recent_stories(world.title, since, OPENING_CANDIDATES):
            if story.settings.get("chat_opening") == opening and story.token_hash is not None and story.rounds > 0:
                return story
        return None

    def _answers_are_the_story(self, story: Story) -> bool:
        """Whether every answer of the history is a narration of the story's (a chat whose markers were removed)."""
        store = self.app.game.store
        told = [" ".join(shown_narration(record.narration).split()) for record in store.rounds(story.id)]
        answers = self.chat.unmarked_texts
        return bool(answers) and all(any(narration in " ".join(a.split()) for narration in told) for a in answers)

    async def run(self, target: Prepared) -> str:
        """The answer's text: a command's, or the round's narration with its cards, and the marker."""
        game = self.app.game
        command = chat_command(self.chat.player_text) if target is not None else None
        if target is None or plays_no_round(command):
            return await game.store.off_loop(self._answer_command, target, command)
        created = None
        if target.story is None:  # a new chat's story, started now that a round is played
            created = await game.store.off_loop(self._start, target.opening)
            target.story, target.token_hash = created, created.token_hash or ""
        story = target.story
        facts = (notes_fact(self.chat.notes),) if self.chat.notes else ()
        rewrite = self.chat.rewrite is not None and self.chat.marker is not None
        rewrite = rewrite and self.chat.marker is not None and self.chat.marker.rounds == story.rounds
        result: RoundResult | RoundPaused
        try:
            if rewrite:
                assert self.chat.rewrite is not None
                result = await game.regenerate(story.id, facts=(*facts, rewrite_fact(self.chat.rewrite)))
            elif isinstance(command, Simple) or target.swipe:
                result = await game.regenerate(story.id, facts=facts)
            elif isinstance(command, RollDice):
                result = await game.play(story.id, command.text, facts=facts, player_roll=command.roll)
            else:
                assert isinstance(command, Say)
                result = await game.play(story.id, command.text, facts=facts)
        except BaseException:
            if created is not None:  # a first round that never finished leaves no story behind
                await asyncio.shield(self._forget(created.id))
            raise
        if isinstance(result, RoundPaused):  # chat stories are started rolling by the engine (dice at the table: /api)
            raise Conflict("this story waits for dice rolled at the table, which a chat front end cannot send")
        dice = (await game.store.off_loop(game.store.story, story.id)).settings.get("dice", "shown")
        marker = marker_text(story.id, target.token_hash, result.number)
        return answer_text(
            result.narration,
            result.rolls,
            dice,
            marker,
            notice=target.notice,
            changes=result.changes,
            sheet=result.sheet,
        )

    def _start(self, opening: str) -> Story:
        """A new story for this chat, with the digest its later requests without a marker find it by."""
        settings = {"chat_opening": opening} | ({"chat_hint": self.hint} if self.hint else {})
        story_id, _token = self.app.start(self.name.world, self.name.dice or "shown", extra=settings)
        return self.app.game.store.story(story_id)

    async def _forget(self, story_id: str) -> None:
        try:
            await self.app.forget(story_id, force=True)
        except Exception:
            log.warning("story %s: its unfinished first round's story could not be removed", story_id, exc_info=True)

    def _answer_command(self, target: Prepared, command: Command | object) -> str:
        """The answer to a background task or to a command that plays no round (it reads the worlds folder or
        the database: run it off the loop)."""
        if target is None:
            return task_answer(self._task_title())
        story = target.story
        if command is START:
            return self._opening() + "\n\n" + opening_marker(self.name.world)
        if story is None:
            return self._before_story(command)
        marker = marker_text(story.id, target.token_hash, story.rounds)
        if isinstance(command, SetDice):
            self.app.game.store.update_settings(story.id, {"dice": command.setting})
            return f"Dice are {command.setting} from now on.\n\n" + marker
        assert isinstance(command, Simple)
        return self._simple(command.name, story) + "\n\n" + marker

    def _task_title(self) -> str:
        """The title a background task is answered with: the chat's story's, when the chat it quotes holds a marker
        that opens one (the chat may since have switched to another world's model), else the world's."""
        marker = find_marker(self.chat.player_text)
        if marker is not None:
            try:
                return self._open(marker).title
            except GmError:
                pass
        return self.app.world(self.name.world).title

    def _before_story(self, command: Command | object) -> str:
        """A command in a chat whose story has not started yet (it starts with the first round)."""
        if isinstance(command, Simple) and command.name == "help":
            return CHAT_HELP + "\n\n" + opening_marker(self.name.world)
        if isinstance(command, SetDice):
            return (
                "This chat's story starts with your first move; pick the model ending in :hidden for hidden dice, "
                "or send /dice again after the first round.\n\n" + opening_marker(self.name.world)
            )
        return "No round has been played yet: say what you do.\n\n" + opening_marker(self.name.world)

    def _is_swipe(self, story: Story, told: int) -> bool:
        """A swipe: the history stops before the newest round's answer and ends with that round's player text."""
        if story.rounds == 0 or told != story.rounds - 1:
            return False
        last = self.app.game.store.round(story.id, story.rounds)
        return last is not None and same_text(last.player_text, self.chat.player_text)

    def _opening(self) -> str:
        """`/start`: the world's title, premise and player characters, with no round played (and so no dice)."""
        world = self.app.world(self.name.world)
        players = ", ".join(character.name for character in world.players) or "nobody in particular"
        return f"**{world.title}**\n\n{world.premise}\n\nYou play {players}. Say what you do; /help lists the commands."

    def _simple(self, name: str, story: Story) -> str:
        if name == "help":
            return CHAT_HELP
        if name == "quit":
            return "There is nothing to leave here: this chat keeps its story; a new chat starts a new one."
        if name == "sheet":  # the sheets as the database holds them now
            sheet = self.app.game.store.story(story.id).sheet
            return sheet_card((), sheet, opened_now=True) if sheet else NO_SHEET
        last = self.app.game.store.round(story.id, story.rounds)  # /open
        if last is None or not last.rolls:
            return "The last round rolled no dice." if last else "No round has been played yet."
        world = self.app.game.world(story.id)
        sealed = player_sealed(self.app.game.store, story, world)  # a secret roll stays sealed here too
        rolls = [roll for roll in RoundPublic.from_record(last, world).rolls if roll.id not in sealed]
        if not rolls:
            return "The last round's dice are secret until they are revealed, or the story ends."
        return "\n\n".join(dice_card(roll, opened_now=True) for roll in rolls)

    def _notice(self, story: Story, swipe: bool, held: int) -> str:
        """One line, once per change, when the history no longer holds the story as gm told it."""
        store = self.app.game.store
        own = [told for told in self.chat.told if told.marker.story_id == story.id and told.marker.rounds > 0]
        own = own[-NOTICE_WINDOW:]  # a bound on the work per request, however long the chat
        after = min((told.marker.rounds for told in own), default=1) - 1
        rounds = {record.number: record for record in store.rounds(story.id, after=after)} if own else {}
        changed = []
        for told in own:
            record = rounds.get(told.marker.rounds)
            if told.player_text is None or is_command(told.player_text) or record is None:
                continue
            if not told_as_stored(told, record.player_text, record.narration):
                changed.append(f"{told.marker.rounds}:{told.player_text}:{told.answer}")
        if held < story.rounds and not swipe:  # gm's newer answers are gone
            changed.append(f"dropped after {held}")
        if not changed:
            return ""
        signature = hashlib.sha256("\n".join(changed).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        if story.settings.get("chat_edits") == signature:
            return ""
        store.update_settings(story.id, {"chat_edits": signature})
        return EDITS_NOTICE.format(rounds=story.rounds + 1)
