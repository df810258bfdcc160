"""The memory keeper: what is recorded after each round, and what the game master is shown of the past.

After an accepted round, a second model call writes a short summary of it; the round's rolls and
outcomes are attached by code from the database, never from the model's paraphrase. In a world with
a calendar, code also starts the summary with the date and time the round ended at ("On Fireday,
12 Rainmoon 311 AL, 19:30 (dusk): ..."), and keeps that time beside it (`MemoryEntry.clock`), so the
game master, and the folds that follow, know when each thing happened. The game
master's prompt (written by `gm.prompt`) holds the world, the characters, the checks, the running
summary, the summaries of rounds not yet folded into it, and the last few rounds verbatim. When
unfolded summaries pile up, the oldest are folded into the running summary by another call, so the
prompt stops growing with the story. Every stretch of model text shown again is capped in length,
so a wordy memory keeper cannot grow it either.

A memory-keeper answer with no usable text (an empty message, a tool call instead of text, or only
a reasoning block) is a failed memory call, never an empty memory: `EmptyMemory` is raised, the
round stays unremembered (or the summaries unfolded), and a later round's catch-up asks again, as
after any failed call. What is stored is the answer without its reasoning blocks (`summary_text`).
"""

from __future__ import annotations

from typing import Any

from gm.calendar import story_time
from gm.completion import strip_reasoning
from gm.model import ChatModel, Completion, ModelError
from gm.prompt import VERBATIM_ROUNDS, Past, dated_summary, fold_messages, keeper_round_messages
from gm.store import MemoryEntry, Store, Story, StoryState, model_call_from
from gm.text import storable

FOLD_AFTER = 8  # unfolded round summaries allowed before the oldest are folded
KEEP_AFTER_FOLD = 4  # summaries left unfolded after a fold


class EmptyMemory(ModelError):
    """The memory keeper answered with no usable text; the memory is left for a later round's catch-up."""


def summary_text(content: str | None) -> str:
    """A memory keeper's answer as it is stored: reasoning blocks and surrounding whitespace removed
    ("" when nothing is left)."""
    return strip_reasoning(content or "").strip()


def recall(store: Store, story: Story | StoryState, before: int) -> Past:
    """The running summary, unfolded summaries, and the last rounds verbatim, for a round numbered `before`."""
    recent, memories = store.past(story.id, story.summary_through, before, VERBATIM_ROUNDS)  # one transaction
    return Past(story.summary, memories, recent)


class MemoryKeeper:
    """Writes each accepted round's memory, and folds old ones into the running summary."""

    def __init__(self, store: Store, model: ChatModel) -> None:
        self.store = store
        self.model = model

    async def catch_up(self, story_id: str) -> None:
        """Remember every accepted round not yet remembered (earlier failures included), then fold."""
        # Database work goes through Store.off_loop, so a server's rounds go on meanwhile.
        unremembered = await self.store.off_loop(self.store.unremembered, story_id)
        world_data = (await self.store.off_loop(self.store.story, story_id)).world_data if unremembered else None
        for record in unremembered:
            summary = await self._ask(story_id, keeper_round_messages(record), f"round {record.number}")
            entry = MemoryEntry(
                story_id=story_id,
                round_number=record.number,
                summary=dated_summary(summary, story_time(world_data, record.clock)),
                rolls=record.rolls,
                outcomes=record.outcomes,
                clock=record.clock,
            )
            await self.store.off_loop(self.store.add_memory, entry)
        await self._fold(story_id)

    async def _fold(self, story_id: str) -> None:
        story = await self.store.off_loop(self.store.story, story_id)
        unfolded = await self.store.off_loop(self.store.memories, story_id, story.summary_through)
        if len(unfolded) <= FOLD_AFTER:
            return
        folding = unfolded[: len(unfolded) - KEEP_AFTER_FOLD]
        rounds = f"rounds {folding[0].round_number} to {folding[-1].round_number}"
        summary = await self._ask(story_id, fold_messages(story.summary, folding), f"the fold of {rounds}")
        await self.store.off_loop(self.store.fold_summary, story_id, summary, folding[-1].round_number)

    async def _ask(self, story_id: str, messages: list[dict[str, Any]], what: str) -> str:
        """The memory keeper's text for `what` (such as "round 3"), or `EmptyMemory` when it wrote none."""
        completion = await self.model.complete(messages)
        await self.store.off_loop(self.store.add_model_calls, [model_call_from(completion, "memory", story_id)])
        summary = storable(summary_text(completion.content))  # notes, not shown: a NUL is replaced, not refused
        if not summary:
            raise EmptyMemory(
                f"The memory keeper's answer for {what} was {_no_text(completion)}, so nothing was stored;"
                " it is asked again after a later round."
            )
        return summary


def _no_text(completion: Completion) -> str:
    """What the memory keeper sent instead of a summary, in words."""
    if completion.tool_calls:
        return "a tool call instead of text"
    if completion.reasoning or (completion.content or "").strip():
        return "reasoning with no summary after it"
    return "an empty message"
