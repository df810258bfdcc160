"""A story's transcript: every round with its player text, narration, outcomes, rolls and refusals.

`transcript()` is the stable JSON form that `gm show STORY --json` prints (and the web API will
serve); other tools can rely on its shape:

    {"story": {"id", "title", "created_at", "rounds", "settings": {"dice": "shown" | "hidden"}},
     "rounds": [{"number", "player_text", "narration", "refusals": [str],
                 "outcomes": [{"character", "result", "roll"}],
                 "rolls": [{"id", "kind", "character", "check", "check_name", "notation", "reason",
                            "target", "modifier", "faces", "total", "successes", "value",
                            "band", "result", "critical", "void", "dice"}]}]}

`kind` is `check` (roll_check), `dice` (roll_dice) or `player` (`/roll`); `dice` is the itemised
line, such as "1d20 (14) = 14"; check fields are null for the other kinds.
"""

from __future__ import annotations

from typing import Any, Protocol

from gm.store import Store, Story
from gm.worlddef import World, world_from_data

RESULT_WORDS = {"succeeded": "success", "partial": "partial success", "failed": "failure"}


def transcript(store: Store, story_id: str) -> dict[str, Any]:
    """The whole story as plain data (see the module docstring for its shape)."""
    story = store.story(story_id)
    world = world_from_data(story.world_data, story.dice_data)
    return {"story": story_json(story), "rounds": [round_json(record, world) for record in store.rounds(story_id)]}


def story_json(story: Story) -> dict[str, Any]:
    return {
        "id": story.id,
        "title": story.title,
        "created_at": story.created_at.isoformat(),
        "rounds": story.rounds,
        "settings": {"dice": story.settings.get("dice", "shown")},
    }


class PlayedRound(Protocol):
    """What a stored round (RoundRecord) and a just-played one (RoundResult) both have."""

    @property
    def number(self) -> int: ...
    @property
    def player_text(self) -> str: ...
    @property
    def narration(self) -> str: ...
    @property
    def outcomes(self) -> list[dict[str, Any]]: ...
    @property
    def rolls(self) -> list[dict[str, Any]]: ...
    @property
    def refusals(self) -> list[str]: ...


def round_json(record: PlayedRound, world: World) -> dict[str, Any]:
    """One round in the transcript's shape, whether read from the store or just played."""
    return {
        "number": record.number,
        "player_text": record.player_text,
        "narration": record.narration,
        "outcomes": record.outcomes,
        "rolls": [roll_json(roll, world) for roll in record.rolls],
        "refusals": record.refusals,
    }


def roll_json(roll: dict[str, Any], world: World) -> dict[str, Any]:
    """One stored roll in the transcript's shape."""
    check_key = roll.get("check_key")
    check_name = None
    if check_key and world.rules is not None and check_key in world.rules:
        check_name = world.rules[check_key].name
    return {
        "id": roll["id"],
        "kind": roll["kind"],
        "character": roll.get("character"),
        "check": check_key,
        "check_name": check_name,
        "notation": roll["notation"],
        "reason": roll.get("reason", ""),
        "target": roll.get("target"),
        "modifier": roll.get("modifier", 0),
        "faces": roll["faces"],
        "total": roll["total"],
        "successes": roll.get("successes"),
        "value": roll.get("value"),
        "band": roll.get("band"),
        "result": roll.get("result"),
        "critical": roll.get("critical", False),
        "void": roll.get("void", False),
        "dice": roll.get("line", ""),
    }


def card(roll: dict[str, Any]) -> str:
    """The one-line dice card of a roll in the transcript's shape: "Lockpicking - Mara: Partial success"."""
    who = roll["character"] or "the game master"
    if roll["kind"] == "check":
        told = "void (no band)" if roll["void"] else str(roll["band"])
        return f"{roll['check_name'] or roll['check']} - {who}: {told}"
    if roll["kind"] == "player":
        purpose = f" for {roll['reason']}" if roll["reason"] else ""
        return f"Roll - {who}: {roll['notation']}{purpose} = {roll['total']}"
    purpose = f" ({roll['reason']})" if roll["reason"] else ""
    return f"Dice{purpose}: {roll['notation']} = {roll['total']}"


def opened(roll: dict[str, Any]) -> str:
    """The card opened: the full dice line, and for a check how the value was read."""
    if roll["kind"] != "check":
        return f"{card(roll)}  [{roll['dice']}]"
    reading = f"{roll['dice']}"
    if roll["modifier"]:
        reading += f", {roll['modifier']:+d}"
    if roll["target"] is not None:
        reading += f", target {roll['target']}"
    reading += f" -> {roll['value']}"
    result = "" if roll["void"] else f", {RESULT_WORDS.get(str(roll['result']), roll['result'])}"
    critical = ", critical" if roll["critical"] else ""
    return f"{card(roll)}  [{reading}{result}{critical}]"


def render_transcript(data: dict[str, Any]) -> str:
    """The transcript as text for `gm show`."""
    story = data["story"]
    lines = [f"{story['title']} ({story['id']}), {story['rounds']} rounds, dice {story['settings']['dice']}"]
    for record in data["rounds"]:
        lines += ["", f"## Round {record['number']}", f"> {record['player_text']}", "", record["narration"]]
        for roll in record["rolls"]:
            lines.append(f"  [dice] {opened(roll)}")
        for outcome in record["outcomes"]:
            via = f" (roll {outcome['roll']})" if outcome.get("roll") is not None else ""
            lines.append(f"  [outcome] {outcome['character']}: {outcome['result']}{via}")
        for refusal in record["refusals"]:
            lines.append(f"  [refused] {refusal}")
    return "\n".join(lines)
