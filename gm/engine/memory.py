"""The memory keeper: what is recorded after each round, and what the game master is shown of the past.

After accepted rounds, a second model writes a short summary of each; the round's rolls and
outcomes are attached by code from the database, never from the model's paraphrase. In a world with
a calendar, code also starts the summary with the date and time the round ended at ("On Fireday,
12 Rainmoon 311 AL, 19:30 (dusk): ..."), and keeps that time beside it (`MemoryEntry.clock`), so the
game master, and the folds that follow, know when each thing happened. The game
master's prompt (written by `gm.engine.prompt` from the past the store reads, `PAST_WINDOW`) holds the
world, the characters, the checks, the running
summary, the summaries of rounds not yet folded into it, and the last few rounds verbatim. When
unfolded summaries pile up, the oldest are folded into the running summary by another call, so the
prompt stops growing with the story. Every stretch of model text shown again is capped in length,
so a wordy memory keeper cannot grow it either.

Batches. A round's summary is first needed when the round leaves the verbatim window of the past a round
is shown (`PAST_WINDOW`: the last `VERBATIM_ROUNDS` rounds), so the keeper need not run after every
round: it waits until `batch` rounds are unremembered (`GM_MEMORY_BATCH`, or `Game(memory_batch=...)`;
by default `VERBATIM_ROUNDS + 1` = 4, the oldest of them then just leaving the window) and asks for all
of them in one call, each round still getting its own entry, all written with the call's record in one
transaction. Nothing the game master sees is lost meanwhile: the past a round reads shows any round
older than the window whose memory is not written yet (a batch not yet due, a failed call, a crash)
verbatim in its place, so there is never a gap. Rounds are remembered oldest first and a later round
never before an earlier one, so the remembered rounds are always the story's first ones; whatever was
not written is read back from the database by the next catch-up, in this process or another.
`Game.settle()` writes a batch not yet due too, so a program that settles before it exits leaves nothing
waiting; a server that stops without settling leaves it to the story's next rounds.

A memory-keeper answer with no usable text (an empty message, a tool call instead of text, or only
a reasoning block) is a failed memory call, never an empty memory: `EmptyMemory` is raised, the
rounds stay unremembered (or the summaries unfolded), and a later round's catch-up asks again, as
after any failed call. An answer with text that leaves some rounds of a batch without their
`Round N:` line (a model that does not follow the format) is used for the rounds it does name, and
each missing round is asked for alone. What is stored is the answer without its reasoning blocks
(`summary_text`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from gm._lru import LRU
from gm._text import storable
from gm.config import MEMORY_BATCH_DEFAULT, MEMORY_BATCH_MAX, Settings
from gm.engine._model_calls import model_call_from
from gm.engine.prompt import VERBATIM_ROUNDS, dated_summary, fold_messages, keeper_rounds_messages
from gm.errors import EmptyMemory, ModelError, UsageError
from gm.models.client import ChatModel, Completion
from gm.models.completion import strip_reasoning
from gm.store import PastWindow, Store
from gm.store.records import MemoryEntry, ModelCall, RoundRecord
from gm.world.calendar import calendar_time

log = logging.getLogger(__name__)

FOLD_AFTER = 8  # unfolded round summaries allowed before the oldest are folded
KEEP_AFTER_FOLD = 4  # summaries left unfolded after a fold
# VERBATIM_ROUNDS + 1 (gm.config keeps the number, as GM_MEMORY_BATCH's default): written as the oldest round of the
# batch leaves the verbatim window.
DEFAULT_BATCH = MEMORY_BATCH_DEFAULT
MAX_BATCH = MEMORY_BATCH_MAX  # rounds in one memory call at most (each round's text is up to 6,000 characters)
UNLABELLED_LIMIT = 3  # batch answers in a row naming no round, after which rounds are asked for one a call
COUNTED_STORIES = 4096  # stories whose waiting rounds a keeper counts without reading (MemoryKeeper.due)
LATE_ROUNDS = 2 * MAX_BATCH  # unremembered rounds older than the verbatim window shown verbatim, at most
# What a round's game master is shown of the past, read as the round opens (gm.store._memory's `read_past`).
PAST_WINDOW = PastWindow(VERBATIM_ROUNDS, LATE_ROUNDS)


def memory_batch(value: int | None = None) -> int:
    """The rounds the memory keeper summarises in one call: `value`, else `GM_MEMORY_BATCH` (gm.config), else
    `DEFAULT_BATCH`.

    Anything but a whole number from 1 to `MAX_BATCH` is one clear error (`UsageError` for `value`,
    `SettingsError` for the variable).
    """
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BATCH:
            raise UsageError(f"memory_batch is a whole number of rounds from 1 to {MAX_BATCH}, not {value!r}")
        return value
    return Settings.from_env().memory_batch


def summary_text(content: str | None) -> str:
    """A memory keeper's answer as it is stored: reasoning blocks and surrounding whitespace removed
    ("" when nothing is left)."""
    return strip_reasoning(content or "").strip()


# "Round 7: ...", also as models dress it: "**Round 7:** ...", "- Round 7 - ...", "### Round 7".
# At most 9 digits: a longer number is no round of a story, and int() refuses one of thousands.
_ANSWER_LINE = re.compile(r"^[ \t>*#_=-]*round[ \t]+(\d{1,9})\b[ \t*_=]*[:.)\u2013\u2014-]?[ \t*_]*", re.I | re.M)


def read_summaries(text: str, numbers: Sequence[int]) -> dict[int, str]:
    """Each asked-for round's summary in a memory keeper's answer (`text`, reasoning already removed).

    A summary runs from its `Round N:` line to the next such line; rounds not named are left out, and
    the first summary of a round named twice is kept. An answer for one round may leave out the label.
    """
    text = storable(text)  # notes, not shown: a NUL is replaced, not refused
    marks = list(_ANSWER_LINE.finditer(text))
    if not marks and len(numbers) == 1:
        return {numbers[0]: text} if text else {}
    found: dict[int, str] = {}
    for at, mark in enumerate(marks):
        number = int(mark.group(1))
        end = marks[at + 1].start() if at + 1 < len(marks) else len(text)
        summary = text[mark.end() : end].strip()
        if number in numbers and summary and number not in found:
            found[number] = summary
    return found


class MemoryKeeper:
    """Writes accepted rounds' memories, `batch` rounds a call, and folds old ones into the running summary."""

    def __init__(self, store: Store, model: ChatModel, *, batch: int | None = None) -> None:
        self.store = store
        self.model = model
        self.batch = memory_batch(batch)
        # Batch answers in a row that named no round (a model, or an edited prompt from before batches,
        # that writes one summary); past `UNLABELLED_LIMIT` rounds are asked for one a call, not twice over.
        self.unlabelled = 0
        # Per story, as this keeper last counted: (rounds waiting for their batch, the newest round's number).
        # Lets `due` answer without reading the database (see there). Bounded: a story dropped is read again.
        self._counted: LRU[str, tuple[int, int]] = LRU(COUNTED_STORIES)

    def due(self, story_id: str, number: int) -> bool:
        """Whether round `number`, just accepted, may fill the story's batch, so the database must be read.

        False only when this keeper counted the story's rounds up to `number - 1` itself and they leave the
        batch short by more than this round: the round then joins the count, and nothing is read. Anything
        it did not see - a round played by another process (its number skips one), a regenerated round (its
        number repeats), a story it never counted, a failed catch-up - makes it True. A round waiting here is
        still shown to the game master verbatim (`PAST_WINDOW`), so skipping the read never leaves a gap.
        """
        counted = self._counted.get(story_id)
        if counted is None:
            return True
        waiting, newest = counted
        if number != newest + 1 or waiting + 1 >= self.batch:
            return True
        self._counted.put(story_id, (waiting + 1, number))
        return False

    async def catch_up(self, story_id: str, *, flush: bool = True) -> bool:
        """Remember the story's rounds not yet remembered (earlier failures and crashes included), oldest
        first, `batch` a call, then fold. Without `flush`, fewer than `batch` rounds left over wait for
        later rounds; the answer says whether any do.

        Raises the first failed call's error (`ModelError`), after writing what came before it.
        """
        # Database work goes through Store.off_loop, so a server's rounds go on meanwhile: one hand-off to read,
        # one a batch to write (and read what a fold needs), and one a fold. None of it is synced by itself
        # (`durable=False`): a power cut may lose a batch's notes, which then stay unremembered and are written
        # again, as after any failure (a round is marked remembered in the transaction that writes its note).
        self._counted.pop(story_id)  # until this catch-up ends well, `due` reads the database
        unremembered, calendar = await self.store.off_loop(self.store.keeper_rounds, story_id, durable=False)
        newest = unremembered[-1].number if unremembered else None
        unfolded: tuple[str, list[MemoryEntry]] | None = None
        wrote = 0
        while unremembered and (flush or len(unremembered) >= self.batch):
            batch, unremembered = unremembered[: self.batch], unremembered[self.batch :]
            unfolded = await self._remember(story_id, batch, calendar)
            wrote = len(batch)
        if newest is not None:
            self._counted.put(story_id, (len(unremembered), newest))
        if wrote or flush:
            await self._fold(story_id, max(wrote, 1), unfolded)
        return bool(unremembered)

    def started(self, story_id: str) -> None:
        """Count a story just started in this process: it has no round yet, so its first rounds need no read."""
        self._counted.put(story_id, (0, 0))

    async def _remember(
        self, story_id: str, records: Sequence[RoundRecord], calendar: dict[str, Any] | None
    ) -> tuple[str, list[MemoryEntry]]:
        """Ask for `records`' summaries in one call (each round missing from the answer alone, after it), and
        write them with the calls' records in one transaction; then read what `_fold` needs, in the same hand-off.
        """
        calls: list[ModelCall] = []
        summaries: dict[int, str] = {}
        failure: ModelError | None = None
        try:
            if len(records) == 1 or self.unlabelled < UNLABELLED_LIMIT:
                summaries = await self._ask(story_id, records, calls)
                if len(records) > 1:
                    self.unlabelled = 0 if summaries else self.unlabelled + 1
                    if self.unlabelled == UNLABELLED_LIMIT:
                        log.warning("the memory keeper's answers name no round; each is asked for alone from now on")
            for record in records:
                if record.number not in summaries:
                    summaries |= await self._ask(story_id, [record], calls)
        except ModelError as error:
            failure = error
        remembered: list[tuple[str, MemoryEntry]] = []
        for record in records:
            if record.number not in summaries:
                break  # a later round is never remembered before an earlier one
            when = calendar_time(calendar, record.clock)
            entry = MemoryEntry(
                story_id=story_id,
                round_number=record.number,
                summary=dated_summary(summaries[record.number], when),
                rolls=record.rolls,
                outcomes=record.outcomes,
                clock=record.clock,
            )
            remembered.append((record.attempt_id, entry))
        if failure is not None:
            if remembered or calls:
                await self.store.off_loop(self.store.add_memories, remembered, calls, durable=False)
            raise failure
        return await self.store.off_loop(
            _write_then_read_unfolded, self.store, story_id, remembered, calls, durable=False
        )

    async def _ask(self, story_id: str, records: Sequence[RoundRecord], calls: list[ModelCall]) -> dict[int, str]:
        """The summaries the memory keeper wrote for `records` (its call's record added to `calls`).

        `EmptyMemory` when it wrote no text, or, asked for one round, nothing usable for it."""
        completion = await self.model.complete(keeper_rounds_messages(records))
        calls.append(model_call_from(completion, "memory", story_id))
        numbers = [record.number for record in records]
        summaries = read_summaries(summary_text(completion.content), numbers)
        if not summaries and (len(records) == 1 or not summary_text(completion.content)):
            raise EmptyMemory(
                f"The memory keeper's answer for {_rounds(numbers)} was {_no_text(completion)}, so nothing was"
                " stored; it is asked again after a later round."
            )
        return summaries

    async def _fold(self, story_id: str, arrived: int, unfolded: tuple[str, list[MemoryEntry]] | None = None) -> None:
        """Fold the oldest unfolded summaries into the running summary, once more than `FOLD_AFTER` pile up
        (fewer when the last `arrived` together), keeping the newest `KEEP_AFTER_FOLD`.

        `unfolded` is the running summary and the summaries not folded yet, as read after the last write
        (read here if not given). The remembered rounds are always the story's first ones (see the module's
        docstring), so a fold never passes over a round still to remember."""
        if unfolded is None:
            unfolded = await self.store.off_loop(self.store.unfolded, story_id, durable=False)
        summary, entries = unfolded
        # Summaries that arrived `arrived` at a time (a batch) are folded `arrived - 1` earlier: the game
        # master's prompt then carries no more of them than with one call a round.
        if len(entries) <= max(FOLD_AFTER - (arrived - 1), KEEP_AFTER_FOLD):
            return
        folding = entries[: len(entries) - KEEP_AFTER_FOLD]
        numbers = [entry.round_number for entry in folding]
        completion = await self.model.complete(fold_messages(summary, folding))
        call = model_call_from(completion, "memory", story_id)
        folded = storable(summary_text(completion.content))
        if not folded:
            await self.store.off_loop(self.store.add_model_calls, [call], durable=False)
            raise EmptyMemory(
                f"The memory keeper's answer for the fold of {_rounds(numbers)} was {_no_text(completion)},"
                " so nothing was stored; it is asked again after a later round."
            )
        await self.store.off_loop(
            self.store.fold_summary, story_id, folded, folding[-1].round_number, [call], durable=False
        )


def _write_then_read_unfolded(
    store: Store, story_id: str, remembered: Sequence[tuple[str, MemoryEntry]], calls: Sequence[ModelCall]
) -> tuple[str, list[MemoryEntry]]:
    """A batch's memories written (one transaction), then what a fold needs read: one hand-off to the database."""
    store.add_memories(remembered, calls)
    return store.unfolded(story_id)


def _rounds(numbers: Sequence[int]) -> str:
    """ "round 3", or "rounds 3 to 6"."""
    return f"round {numbers[0]}" if len(numbers) == 1 else f"rounds {numbers[0]} to {numbers[-1]}"


def _no_text(completion: Completion) -> str:
    """What the memory keeper sent instead of a summary, in words."""
    if completion.tool_calls:
        return "a tool call instead of text"
    if completion.reasoning or (completion.content or "").strip():
        return "reasoning with no summary after it"
    return "an empty message"
