"""A story's transcript, read from the store in the public shapes, and its dice cards in words.

`transcript()` gives what `gm show STORY --json` prints and the web API serves; its shape is
described in `gm.public`. `card()` and `opened()` are the dice cards the terminal chat and `gm show`
print (the play page draws the same words in play.js).
"""

from __future__ import annotations

from gm.public import RollPublic, RoundPublic, StoryPublic, TranscriptPublic
from gm.store import Store
from gm.worlddef import world_from_data

RESULT_WORDS = {"succeeded": "success", "partial": "partial success", "failed": "failure"}


def transcript(store: Store, story_id: str) -> TranscriptPublic:
    """The whole story in its public shape."""
    story = store.story(story_id)
    world = world_from_data(story.world_data, story.dice_data)
    rounds = [RoundPublic.from_record(record, world) for record in store.rounds(story_id)]
    return TranscriptPublic(story=StoryPublic.from_record(story), rounds=rounds)


def card(roll: RollPublic) -> str:
    """The one-line dice card of a roll: "Lockpicking - Mara: Partial success"."""
    who = roll.character or "the game master"
    if roll.kind == "check":
        told = "void (no band)" if roll.void else str(roll.band)
        return f"{roll.check_name or roll.check} - {who}: {told}"
    if roll.kind == "player":
        purpose = f" for {roll.reason}" if roll.reason else ""
        return f"Roll - {who}: {roll.notation}{purpose} = {roll.total}"
    purpose = f" ({roll.reason})" if roll.reason else ""
    return f"Dice{purpose}: {roll.notation} = {roll.total}"


def opened(roll: RollPublic) -> str:
    """The card opened: the full dice line, and for a check how the value was read."""
    if roll.kind != "check":
        return f"{card(roll)}  [{roll.dice}]"
    reading = roll.dice
    if roll.modifier:
        reading += f", {roll.modifier:+d}"
    if roll.target is not None:
        reading += f", target {roll.target}"
    reading += f" -> {roll.value}"
    result = "" if roll.void else f", {RESULT_WORDS.get(str(roll.result), roll.result)}"
    critical = ", critical" if roll.critical else ""
    return f"{card(roll)}  [{reading}{result}{critical}]"


def render_transcript(data: TranscriptPublic) -> str:
    """The transcript as text for `gm show`."""
    story = data.story
    lines = [f"{story.title} ({story.id}), {story.rounds} rounds, dice {story.settings.dice}"]
    lines += [f"Note: {notice}." for notice in story.notices]
    for record in data.rounds:
        lines += ["", f"## Round {record.number}", f"> {record.player_text}", "", record.narration]
        for roll in record.rolls:
            lines.append(f"  [dice] {opened(roll)}")
        for outcome in record.outcomes:
            via = f" (roll {outcome.roll})" if outcome.roll is not None else ""
            lines.append(f"  [outcome] {outcome.character}: {outcome.result}{via}")
        if record.judge is not None:
            for verdict in record.judge.verdicts:
                quote = f" ('{verdict.quote}')" if verdict.quote else ""
                lines.append(
                    f"  [judged by {record.judge.model}] {verdict.character}: told as {verdict.told_as}{quote}"
                )
        for refusal in record.refusals:
            lines.append(f"  [refused] {refusal}")
    return "\n".join(lines)
