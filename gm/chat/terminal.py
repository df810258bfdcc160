"""The terminal chat behind `gm play`: the narration, the round's dice as cards, and the player's commands.

In a world with a calendar it says the story's date and time when it opens, and, under each round's
narration, the time the round ended at. At a terminal it reads the player's lines with prompt_toolkit
(line editing, and the lines typed before under the up arrow, at the `>` prompt and at the
`faces of 1d20>` prompt of dice rolled at the table alike) and prints with rich (a spinner while the
model works, dimmed dice cards); Ctrl-C or Ctrl-D at the prompt leaves, saying how to go on.
Otherwise it reads one player line at a time from stdin and prints plain text, so it can be scripted
and tested. The memory keeper runs in the background while the player types.

Everything printed passes through `gm._text.visible`, so a control character a model or a world file
wrote is shown (ESC as U+241B) instead of obeyed by the terminal. A piped line that is not UTF-8 is
refused with one sentence, and the chat goes on. `rounds_failed` counts the rounds that could not be
played (`gm play` then exits 1).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, BinaryIO, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import InMemoryHistory
from rich.console import Console
from rich.markup import escape
from sqlalchemy.exc import SQLAlchemyError

from gm._text import counted, visible
from gm.engine.commands import HELP, RollDice, Say, SetDice, Simple, parse_command
from gm.engine.game import Game
from gm.engine.results import RoundPaused, RoundResult
from gm.engine.transcript import card, opened, opened_lines, transcript
from gm.errors import CommandError, GmError
from gm.integrity.secret import secret_checks
from gm.models.client import model_name
from gm.transcript.shapes import QuestionPublic, RollPublic, StoryPublic
from gm.transcript.sheet_view import NO_SHEET, change_text, sheet_lines


class Chat:
    """One player at a terminal (or a script on stdin) playing one story."""

    def __init__(
        self, game: Game, story_id: str, *, interactive: bool, out: TextIO | None = None, new: bool = False
    ) -> None:
        self.game = game
        self.story_id = story_id
        self.new = new  # started for this chat: not kept if the player leaves before its first round is played
        self.interactive = interactive
        self.out = out or sys.stdout
        self.console = Console(file=self.out, highlight=False, soft_wrap=not interactive)
        self.last_rolls: list[RollPublic] = []
        self.rounds_failed = 0
        self.lines_read = 0
        self._prompt: PromptSession[str] | None = None  # made at the first interactive prompt
        self.history = InMemoryHistory()  # the player's lines this session, under the up arrow

    @property
    def dice_setting(self) -> str:
        return str(self.game.store.story(self.story_id).settings.get("dice", "shown"))

    async def run(self) -> None:
        """Play until /quit or the end of input, then let the memory keeper finish."""
        story = self.game.store.story(self.story_id)
        played = counted(story.rounds, "round")
        self.say(f"{story.title}: story {story.id}, {played} so far. Type /help for the commands.")
        public = StoryPublic.from_record(story)
        for notice in public.notices:
            self.say(f"Note: {notice}.")
        if public.time is not None:
            self.say(f"It is {public.time}.")
        if (waiting := self.game.store.question(self.story_id)) is not None:
            self.ask(waiting)
        interrupted = False
        try:
            while True:
                try:
                    line = await (self.prompt_line() if self.interactive else asyncio.to_thread(self.read_line))
                except KeyboardInterrupt:  # Ctrl-C at the prompt: leave, as /quit does
                    interrupted = True
                    break
                if line is None or not await self.handle(line):
                    break
            await self.game.settle()
        finally:
            await self.game.aclose()  # before the event loop ends (gm.models._transport)
        self.say(await self.farewell(interrupted))

    async def farewell(self, interrupted: bool) -> str:
        """What the chat says as the player leaves: how to go on with the story, or that it has ended; a new story
        whose first round was never played (the model could not be reached, or the player left at once) is
        not kept."""
        story = self.game.store.story(self.story_id)
        left = "Interrupted. " if interrupted else ""
        if self.new and story.rounds == 0 and story.ended_at is None and await self._untouched():
            await self.game.delete(self.story_id, force=True)
            return f"{left}No round was played, so the story was not kept."
        if story.ended_at is not None:
            return f"{left}The story has ended; read it with: gm show {self.story_id}"
        return f"{left}The story is saved; continue it with: gm play --story {self.story_id}"

    async def _untouched(self) -> bool:
        """Whether nothing at all happened in the story: no roll, and no round waiting for the player's dice."""
        store = self.game.store
        rolls = await store.off_loop(store.story_rolls, self.story_id)
        waiting = await store.off_loop(store.question, self.story_id)
        return not rolls and waiting is None

    async def prompt_line(self) -> str | None:
        """The player's next line at a terminal, edited with prompt_toolkit; None at Ctrl-D."""
        waiting = await self.game.store.off_loop(self.game.store.question, self.story_id)
        # While a round waits for the player's dice, the prompt names them (and a line is their faces).
        prompt = "> " if waiting is None else f"faces of {waiting.notation}> "
        if self._prompt is None:
            self._prompt = PromptSession(history=self.history, output=None)
        try:
            return await self._prompt.prompt_async(FormattedText([("bold", visible(prompt))]))
        except EOFError:
            return None

    def read_line(self) -> str | None:
        """The next line of a script on stdin ("" for one that cannot be read), or None at the end of input."""
        stdin: BinaryIO | None = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # a text stream (as when gm.cli.main runs in process): already decoded
            text = sys.stdin.readline()
            return None if text == "" else text
        raw = stdin.readline()  # bytes: a line that is not UTF-8 is refused, not fatal
        if raw == b"":
            return None
        self.lines_read += 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            self.error(f"line {self.lines_read} is not UTF-8 text (byte {error.start + 1}); it was skipped")
            return ""

    async def handle(self, line: str) -> bool:
        """Act on one line; False when the player leaves."""
        try:
            command = parse_command(line)
        except CommandError as error:
            self.error(str(error))
            return True
        if command is None:
            return True
        if isinstance(command, Say) and self.game.store.question(self.story_id) is not None:
            await self.round(self.game.answer(self.story_id, command.text))  # the faces rolled at the table
            return True
        if isinstance(command, Simple):
            return await self.simple(command.name)
        if isinstance(command, SetDice):
            self.game.store.update_settings(self.story_id, {"dice": command.setting})
            self.say(f"Dice are now {command.setting}.")
        elif isinstance(command, RollDice):
            await self.round(self.game.play(self.story_id, command.text, player_roll=command.roll))
        elif isinstance(command, Say):
            await self.round(self.game.play(self.story_id, command.text))
        return True

    async def simple(self, name: str) -> bool:
        if name == "quit":
            return False
        if name == "help":
            self.say(HELP)
        elif name == "regenerate":
            await self.round(self.game.regenerate(self.story_id))
        elif name == "open":
            self.open_cards()
        elif name == "sheet":
            self.show_sheet()
        elif name == "end":
            await self.end()
        elif name == "abandon":
            try:
                number = await self.game.abandon(self.story_id)
            except GmError as error:
                self.error(str(error))
            else:
                self.say(f"Round {number} is abandoned; its rolls stay in the story.")
        return True

    async def round(self, playing: Any) -> None:
        try:
            if self.interactive:
                with self.console.status("The game master is thinking..."):
                    result = await playing
            else:
                result = await playing
        except GmError as error:  # the round failed, the story is busy, the model is unreachable...
            self.rounds_failed += 1
            self.error(str(error))
            return
        except SQLAlchemyError as error:  # a full disk, a server gone: the round ends once the database answers
            self.rounds_failed += 1
            reason = " ".join(str(getattr(error, "orig", None) or error).split())[:120].rstrip(".")
            self.error(f"the database cannot be used just now ({reason}); try again in a moment")
            return
        if isinstance(result, RoundPaused):
            self.ask(result.asking)
        else:
            self.show(result)

    async def end(self) -> None:
        """End the story, and show the cards of its secret rolls, now that they are revealed."""
        try:
            await self.game.end(self.story_id)
        except GmError as error:
            self.error(str(error))
            return
        self.say("The story has ended; it plays no more rounds.")
        if self.dice_setting != "shown":
            return
        keys = self.secret_keys
        for round_ in transcript(self.game.store, self.story_id, player=True).rounds:
            for roll in round_.rolls:
                if roll.kind == "check" and roll.check in keys:
                    self.say(f"[secret, round {round_.number}] {opened(roll)}")

    @property
    def secret_keys(self) -> set[str]:
        return secret_checks(self.game.world(self.story_id))

    def ask(self, question: QuestionPublic) -> None:
        """Put a check's question to the player, who rolls at the table and types the faces."""
        self.styled(f"[bold]\u2684 {escape(question.text)}[/bold]", f"[asking] {question.text}")
        self.styled("[dim](or /abandon this round)[/dim]", None)

    def show(self, result: RoundResult) -> None:
        self.last_rolls = result.rolls
        self.say("")
        self.say(result.narration)
        if result.time is not None:  # the world has a calendar: when the round ended, every round
            self.styled(f"[dim]\u231b {escape(result.time)}[/dim]", f"[time] {result.time}")
        if self.dice_setting == "shown" and self.last_rolls:
            self.say("")
            for roll in self.last_rolls:
                self.styled(f"[dim]\u2684 {escape(card(roll))}[/dim]", f"[dice] {card(roll)}")
            self.styled("[dim](/open shows the dice in full)[/dim]", None)
        for change in result.changes:  # what the round changed on the sheets, from the database
            line = change_text(change)
            self.styled(f"[dim]\u270e {escape(line)}[/dim]", f"[sheet] {line}")
        if result.judge is not None and model_name(self.game.judge.model) == "rehearsal":
            # A world's author rehearsing sees the judge's step too; players are not shown it.
            for verdict in result.judge.verdicts:
                line = f"(rehearsal) the judge read {verdict.character}'s outcome as {verdict.told_as}"
                self.styled(f"[dim]{escape(line)}[/dim]", f"[judge] {line}")

    def show_sheet(self) -> None:
        """`/sheet`: the characters' sheets as the story holds them now, player characters first."""
        players = [character.name for character in self.game.world(self.story_id).players]
        lines = sheet_lines(self.game.store.story(self.story_id).sheet, players)
        for line in lines or [NO_SHEET]:
            self.say(f"[sheet] {line}" if lines else line)

    def open_cards(self) -> None:
        if self.dice_setting == "hidden":
            self.say("The dice are hidden in this story; /dice shown shows them.")
        elif not self.last_rolls:
            self.say("No dice were rolled in the last round.")
        else:
            for roll in self.last_rolls:
                first, *more = opened_lines(roll)
                self.say(f"[dice] {first}")
                for line in more:
                    self.say(f"      {line}")

    def say(self, text: str) -> None:
        if self.interactive:
            self.console.print(escape(visible(text)))
        else:
            print(visible(text), file=self.out, flush=True)

    def styled(self, markup: str, plain: str | None) -> None:
        """Rich markup at a terminal; the plain form (if any) for scripts."""
        if self.interactive:
            self.console.print(visible(markup))
        elif plain is not None:
            print(visible(plain), file=self.out, flush=True)

    def error(self, message: str) -> None:
        if self.interactive:
            self.console.print(f"[red]error:[/red] {escape(visible(message))}")
        else:
            print(f"error: {visible(message)}", file=sys.stderr, flush=True)
