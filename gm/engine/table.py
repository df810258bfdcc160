"""A shared table: several players, each their own character (a seat), in one story.

The store keeps seats and the messages they send (gm.store._seats); this module decides what a round makes of
them and what each viewer may see. Pure but for `TableTurn` carrying what the round is given.

How a round gathers its actions is the story's `rounds` setting:

- `free`: each message is its own round, in the order they arrive (one round at a time: the story's lease),
  played as today, with the seat's character named on it ("Mara: I pick the lock").
- `together`: a round collects one action from each seated player (gm.web.table gathers them), or closes when
  the owner says so or its timer has run out; the game master settles them all in one round, with a roll
  per attempt, and the referee holds each acting character to an outcome of its own and each outcome to its
  own character's rolls (gm.engine.referee). In combat (the story's `combat` setting, which the owner sets),
  where the world's dice.json has a check keyed `initiative`, the engine rolls it for each acting character
  before the game master is asked (as plain dice: the check's dice plus the character's modifier, so the audit
  recomputes it, and no outcome needs to name it) and orders the actions by it, highest first (ties keep
  the order the actions came in).

Who sees what (`Viewer`): a seat reads its own character's secrets (whispers to it, its secret check rolls);
the owner (the story's token) reads those of characters without a live seat, as today; nobody else does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gm import dice
from gm.engine.results import PlayerRoll
from gm.engine.tools.running import RoundTools
from gm.rules.checks import Check
from gm.transcript.shapes import RollPublic, RoundPublic
from gm.transcript.table import WhisperPublic
from gm.world.definition import World

INITIATIVE = "initiative"  # the key of the dice.json check that orders a together round in combat


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who reads a story: the owner (`seat` None) or one seat, with the characters that have a live seat."""

    seat: str | None = None
    character: str | None = None
    seated: frozenset[str] = frozenset()
    dice: str | None = None  # a seat's own Dice setting

    @property
    def is_owner(self) -> bool:
        return self.seat is None

    def sees(self, character: str | None) -> bool:
        """Whether this viewer may read `character`'s secrets: a seat its own; the owner those of unseated ones."""
        if character is None:
            return self.is_owner
        if self.seat is None:
            return character not in self.seated
        return character == self.character


OWNER = Viewer()


@dataclass(frozen=True, slots=True)
class TableAction:
    """One seat's message as a round takes it: its place in the table's chain, who sent it, and its `/roll`."""

    message: int
    seat: str | None
    character: str
    text: str
    roll: PlayerRoll | None = None


@dataclass(frozen=True, slots=True)
class TableTurn:
    """What a seated round is given: its actions in the order they came, whether it is a together round (and in
    combat), and the characters with a live seat (the game master may whisper to them)."""

    actions: tuple[TableAction, ...]
    together: bool = False
    combat: bool = False
    seated: frozenset[str] = field(default_factory=frozenset)

    @property
    def acting(self) -> tuple[str, ...]:
        """The characters who acted, each once (the referee wants an outcome for each in a together round)."""
        return tuple(dict.fromkeys(action.character for action in self.actions))


def initiative_check(world: World) -> Check | None:
    """The world's `initiative` check, if its dice.json has one."""
    if world.rules is None or INITIATIVE not in world.rules:
        return None
    return world.rules[INITIATIVE]


def initiative_notation(world: World, check: Check, character: str) -> dice.Expression:
    """The initiative dice of one character: the check's dice with the character's modifier added."""
    modifier = world.modifier_for(check, world.character(character))
    notation = check.dice if isinstance(check.dice, str) else check.dice.text
    return dice.parse(notation if not modifier else f"{notation}{modifier:+d}")


def ordered(actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Actions by initiative, highest first, where they have one; ties (and actions without) keep their order."""
    if not any(action.get("initiative") is not None for action in actions):
        return list(actions)
    return sorted(actions, key=lambda action: -(action.get("initiative") or 0))


def compose(actions: Sequence[dict[str, Any]], together: bool) -> str:
    """The round's player text from its actions: "Mara: I pick the lock." one a line, in the order given."""
    lines = []
    for action in actions:
        order = f" (initiative {action['initiative']})" if action.get("initiative") is not None else ""
        lines.append(f"{action['character']}{order}: {action['text']}")
    if together and len(lines) > 1:
        return "\n".join(lines)
    return lines[0] if lines else ""


TOGETHER_FACT = (
    "Several players act together this round, each as their own character: settle every action in this one "
    "round, with one outcome for each acting character ({names}); a roll settles only its own character's outcome."
)


def view_round(round_: RoundPublic, viewer: Viewer, sealed: set[int]) -> RoundPublic:
    """The round as `viewer` may see it: whispers to others without their text, sealed secret rolls left out
    (`sealed`: the ids this viewer may not see)."""
    changed: dict[str, Any] = {}
    if round_.whispers:
        changed["whispers"] = [
            whisper if viewer.sees(whisper.character) else WhisperPublic(character=whisper.character, text=None)
            for whisper in round_.whispers
        ]
    if sealed and any(roll.id in sealed for roll in round_.rolls):
        changed["rolls"] = [roll for roll in round_.rolls if roll.id not in sealed]
    return round_.model_copy(update=changed) if changed else round_


def sealed_for(viewer: Viewer, sealed: set[int], rolls: Sequence[RollPublic]) -> set[int]:
    """The secret rolls `viewer` may not see: those still sealed, less a seat's own character's."""
    if viewer.is_owner or not sealed:
        return sealed
    own = {roll.id for roll in rolls if roll.character == viewer.character}
    return sealed - own


def seated_turn(tools: RoundTools, world: World, turn: TableTurn) -> tuple[str, list[dict[str, Any]], list[str]]:
    """Set a seated round's tools up (who may be whispered to, who must get an outcome), roll initiative in a
    together round in combat, and each action's `/roll`; the round's player text, its actions as the round keeps
    them, and the facts for the game master."""
    tools.seated = turn.seated
    tools.acting = turn.acting if turn.together else ()
    actions = [{"message": a.message, "seat": a.seat, "character": a.character, "text": a.text} for a in turn.actions]
    facts: list[str] = []
    check = initiative_check(world) if turn.together and turn.combat else None
    if check is not None:
        rolled: dict[str, int] = {}
        for action in actions:
            who = str(action["character"])
            if who not in rolled:
                rolled[who] = tools.roll_initiative(initiative_notation(world, check, who), who).total
            action["initiative"] = rolled[who]
        actions = ordered(actions)
        order = ", ".join(f"{who} {value}" for who, value in sorted(rolled.items(), key=lambda item: -item[1]))
        facts.append(f"Combat: initiative was rolled ({check.name}); the actions act in this order: {order}.")
    for taken in turn.actions:
        if taken.roll is not None:
            facts.append(tools.roll_for_player(taken.roll.expression, taken.roll.purpose, taken.character))
    if turn.together and len(turn.acting) > 1:
        facts.append(TOGETHER_FACT.format(names=", ".join(turn.acting)))
    return compose(actions, turn.together), actions, facts
