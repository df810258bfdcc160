"""The memory keeper: what is recorded after each round, and what the game master is shown of the past.

After an accepted round, a second model call writes a short summary of it; the round's rolls and
outcomes are attached by code from the database, never from the model's paraphrase. The game
master's prompt holds the world, the characters, the checks, the running summary, the summaries
of rounds not yet folded into it, and the last few rounds verbatim. When unfolded summaries pile
up, the oldest are folded into the running summary by another call, so the prompt stops growing
with the story. Every stretch of model text shown again is capped in length, so a wordy memory
keeper cannot grow it either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gm.model import ChatModel
from gm.store import MemoryEntry, RoundRecord, Store, Story, model_call_from
from gm.worlddef import World

VERBATIM_ROUNDS = 3  # the newest rounds, shown as they were played
FOLD_AFTER = 8  # unfolded round summaries allowed before the oldest are folded
KEEP_AFTER_FOLD = 4  # summaries left unfolded after a fold
SUMMARY_CHARS = 600  # cap on one round's summary as shown again
RUNNING_SUMMARY_CHARS = 2000  # cap on the running summary as shown again
VERBATIM_CHARS = 3000  # cap on one verbatim narration or player text


def prompt(name: str) -> str:
    """One of the model's instructions, shipped as a text file in gm/prompts."""
    return resources.files("gm").joinpath(f"prompts/{name}.txt").read_text(encoding="utf-8").strip()


@dataclass(frozen=True, slots=True)
class Past:
    """What the game master is shown of the story so far."""

    summary: str
    memories: Sequence[MemoryEntry]
    recent: Sequence[RoundRecord]


def recall(store: Store, story: Story, before: int) -> Past:
    """The running summary, unfolded summaries, and the last rounds verbatim, for a round numbered `before`."""
    recent = [record for record in store.rounds(story.id, last=VERBATIM_ROUNDS) if record.number < before]
    first_verbatim = recent[0].number if recent else before
    memories = [
        entry for entry in store.memories(story.id, after=story.summary_through) if entry.round_number < first_verbatim
    ]
    return Past(story.summary, memories, recent)


def game_master_messages(world: World, past: Past, player_text: str, facts: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The whole conversation the game master is given for one round."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompt("game_master") + "\n\n" + describe_world(world)}
    ]
    remembered = describe_past(past)
    if remembered:
        messages.append({"role": "system", "content": remembered})
    for record in past.recent:
        messages.append({"role": "user", "content": _cap(record.player_text, VERBATIM_CHARS)})
        messages.append({"role": "assistant", "content": _cap(record.narration, VERBATIM_CHARS)})
    text = player_text if not facts else player_text + "\n\n" + "\n".join(f"(Fact: {fact})" for fact in facts)
    messages.append({"role": "user", "content": text})
    return messages


def describe_world(world: World) -> str:
    lines = [f"# World: {world.title}", world.premise]
    if world.instructions:
        lines += ["", "## Tone and instructions", world.instructions]
    lines += ["", "## Characters"]
    for character in world.characters:
        variables = ", ".join(f"{name} {value}" for name, value in character.variables.items())
        lines.append(
            f"- {character.name} ({character.role}): {character.description}" + (f" [{variables}]" if variables else "")
        )
    if world.rules is not None and world.rules.checks:
        lines += ["", "## Checks (call roll_check with the key)"]
        for check in world.rules.checks:
            target = {
                "over": " Needs a target: the difficulty to beat.",
                "under": " Needs a target: the number to roll under.",
            }.get(check.compare, "")
            modifier = f" Adds the character's {check.modifier}." if check.modifier else ""
            lines.append(f"- {check.key} ({check.name}): {check.use}{target}{modifier}")
    return "\n".join(lines)


def describe_past(past: Past) -> str:
    parts: list[str] = []
    if past.summary:
        parts.append("# The story so far\n" + _cap(past.summary, RUNNING_SUMMARY_CHARS))
    if past.memories:
        parts.append("# Earlier rounds")
        for entry in past.memories:
            parts.append(
                f"Round {entry.round_number}: {_cap(entry.summary, SUMMARY_CHARS)}" + describe_rolls(entry.rolls)
            )
    return "\n".join(parts)


def describe_rolls(rolls: Sequence[dict[str, Any]]) -> str:
    """The settled rolls of a round in words, from the database copy: band and result, never a roll id."""
    settled = []
    for roll in rolls:
        if roll.get("kind") == "check" and not roll.get("void"):
            critical = ", critical" if roll.get("critical") else ""
            settled.append(f"{roll['check_key']} for {roll['character']}: {roll['band']} ({roll['result']}{critical})")
        elif roll.get("kind") == "player":
            settled.append(f"{roll.get('character') or 'the player'} rolled {roll['line']}")
    return f" [Dice: {'; '.join(settled)}]" if settled else ""


def round_for_keeper(record: RoundRecord) -> str:
    outcomes = "; ".join(f"{outcome['character']}: {outcome['result']}" for outcome in record.outcomes) or "none"
    return (
        f"Player: {_cap(record.player_text, VERBATIM_CHARS)}\n\nNarration: {_cap(record.narration, VERBATIM_CHARS)}\n\n"
        f"Outcomes: {outcomes}{describe_rolls(record.rolls)}"
    )


class MemoryKeeper:
    """Writes each accepted round's memory, and folds old ones into the running summary."""

    def __init__(self, store: Store, model: ChatModel) -> None:
        self.store = store
        self.model = model

    async def catch_up(self, story_id: str) -> None:
        """Remember every accepted round not yet remembered (earlier failures included), then fold."""
        # Database work goes through Store.off_loop, so a server's rounds go on meanwhile.
        for record in await self.store.off_loop(self.store.unremembered, story_id):
            summary = await self._ask(story_id, "memory_keeper", round_for_keeper(record))
            entry = MemoryEntry(
                story_id=story_id,
                round_number=record.number,
                summary=summary,
                rolls=record.rolls,
                outcomes=record.outcomes,
            )
            await self.store.off_loop(self.store.add_memory, entry)
        await self._fold(story_id)

    async def _fold(self, story_id: str) -> None:
        story = await self.store.off_loop(self.store.story, story_id)
        unfolded = await self.store.off_loop(self.store.memories, story_id, story.summary_through)
        if len(unfolded) <= FOLD_AFTER:
            return
        folding = unfolded[: len(unfolded) - KEEP_AFTER_FOLD]
        rounds = "\n".join(
            f"Round {entry.round_number}: {entry.summary}{describe_rolls(entry.rolls)}" for entry in folding
        )
        text = f"The story so far:\n{story.summary or '(nothing yet)'}\n\nThe rounds that followed:\n{rounds}"
        summary = await self._ask(story_id, "memory_fold", text)
        await self.store.off_loop(self.store.fold_summary, story_id, summary, folding[-1].round_number)

    async def _ask(self, story_id: str, instructions: str, text: str) -> str:
        messages = [{"role": "system", "content": prompt(instructions)}, {"role": "user", "content": text}]
        completion = await self.model.complete(messages)
        await self.store.off_loop(self.store.add_model_calls, [model_call_from(completion, "memory", story_id)])
        return str(completion.content or "").strip()


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
