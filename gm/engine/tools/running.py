"""The tools the model sees (roll_check, roll_dice, reveal_roll, advance_time, narrate): what calling them does.

Each tool declares where it runs (`TOOLS`): on the database's worker thread, for a tool that writes or
looks up a roll, or on the event loop. The round (gm.engine._machine) runs a model message's calls in
order, off the loop when any of them needs the database. narrate only proposes an ending: the
referee (gm.engine.referee) and the judge decide on it, as states of the round of their own.

advance_time is offered only in a world with a calendar (see `gm.world.calendar`): it moves the round's
clock on, which the round stores as the time it ended at.

The model learns a check roll's band, never its number. A bad call (malformed JSON, an unknown
tool, check or character, a missing or unwanted target, a check whose outcome is certain at the
target given, the referee's refusals) raises `ModelRetry` with a sentence the model can act on; the
round loop sends it back as `{"error": "..."}` and counts it as a refusal. A roll whose value falls
in a band gap is no one's mistake: it is an ordinary result marked `void`, with a message.
Their schemas, and the validators of their arguments, are in `gm.engine.tools.offered`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gm import dice
from gm.dice.result import Roll
from gm.engine._earlier_rolls import EARLIER_FACT, EARLIER_NOTE, INITIATIVE_REASON, EarlierRolls
from gm.engine._sheets import RoundSheet, band_effects, earlier_against
from gm.engine.referee import Outcome, Refusal, acting_refusals, referee
from gm.engine.tools._facts import check_content, check_fact, player_fact, round_roll
from gm.engine.tools.offered import argument_checks, read_arguments
from gm.engine.tools.tabletop import against_of, edge_asked, opponent_of
from gm.engine.tools.whisper import WHISPER, whisper
from gm.engine.typed_dice import FacesNeeded, question_for
from gm.errors import CharacterCannotRoll, CheckRollError, ModelRetry
from gm.models.completion import strip_reasoning
from gm.problems import shown
from gm.rules.chances import certain, refusal
from gm.rules.checks import opposed_modifier, read_value
from gm.rules.naturals import read_roll
from gm.store import RollRecord
from gm.world.calendar import advance, duration_text
from gm.world.definition import World

MAX_TOOL_CALLS = 32  # tool calls run from one model message; a message with more is refused whole (gm.engine._machine)
MAX_ROLLS = 64  # rolls one attempt at a round may make; the next is refused, and the model told to narrate
SECRET_NOTE = "a secret check: the player sees no card of this roll until you call reveal_roll or the story ends"


@dataclass(frozen=True, slots=True)
class Narration:
    """An ending the game master proposed (narrate, or a plain answer): the narration and its outcomes."""

    text: str
    outcomes: tuple[Outcome, ...]


@dataclass(frozen=True, slots=True)
class ToolReply:
    """What one tool call gave back: the JSON the model reads, or, for narrate, the ending it proposes (its
    answer is the referee's and the judge's to give)."""

    content: dict[str, Any]
    proposed: Narration | None = None


class RollLedger(Protocol):
    """Where a round's tools write and look up rolls: the store, as the round binds it (gm.engine._attempt)."""

    def write(self, record: RollRecord) -> RollRecord:
        """Write a roll at once, as the next link of its story's chain, and tell whoever listens."""
        ...

    def find(self, roll_id: int) -> RollRecord | None:
        """A roll of this story by its id."""
        ...

    def reveal(self, roll_id: int) -> None:
        """Write that a secret roll was revealed, at once."""
        ...


@dataclass
class RoundTools:
    """The tools bound to one attempt at one round: they roll, write each roll at once, and referee.

    `earlier` holds the rolls of an earlier version of this round (when it is played again): asking
    for the same check and character returns that roll instead of rolling anew. `retried` offers every
    roll made for this round before this attempt began (gm.engine._earlier_rolls), so retrying never re-rolls.
    """

    world: World
    ledger: RollLedger
    story_id: str
    attempt_id: str
    round_number: int
    source: dice.DiceSource | None = None
    earlier: Sequence[RollRecord] = ()
    rolls: list[RollRecord] = field(default_factory=list)
    retried: EarlierRolls = field(default_factory=EarlierRolls)
    told: set[int] = field(default_factory=set)  # rolls whose results the model was given in an earlier message
    clock: int | None = None  # the story's time (gm.world.calendar), moved on by advance_time; None without a calendar
    dice_from: str = "engine"  # "player": checks are rolled at the table, their faces typed in (gm.engine.typed_dice)
    typed_faces: list[int] | None = None  # the faces the player typed for the check the round paused at
    bound: set[int] = field(default_factory=set)  # failed attempts' check rolls in play, not yet asked for again
    sheet: RoundSheet | None = None  # the characters' sheets as this attempt changes them (gm.engine._sheets)
    # A shared table (gm.engine.table): the characters with a live seat (the game master may whisper to them), the
    # characters of a together round who must each get an outcome, and the whispers of this attempt.
    seated: frozenset[str] = frozenset()
    acting: tuple[str, ...] = ()
    whispers: list[dict[str, Any]] = field(default_factory=list)

    def next_message(self) -> None:
        """A new message of the model's begins: it has now read the result of every roll so far."""
        self.told.update(record.id for record in self.rolls if record.id is not None)

    def call(self, name: str, raw_arguments: Any) -> ToolReply:
        """Run one tool call; anything wrong with what the model sent raises `ModelRetry`, nothing else."""
        if name == WHISPER and self.seated:
            return ToolReply(whisper(self.seated, self.whispers, raw_arguments))
        checks = argument_checks(self.world)
        if name not in checks:
            raise ModelRetry(f"there is no tool {shown(name)}; the tools are {', '.join(checks)}")
        return TOOLS[name].run(self, read_arguments(name, raw_arguments, checks[name]))

    @property
    def checks_rolled(self) -> bool:
        """Whether a check settled something this round (a void roll settles nothing, so it does not count)."""
        return any(roll.kind == "check" and not roll.void for roll in self.rolls)

    def roll_check(self, arguments: dict[str, Any]) -> ToolReply:
        self._room_for_a_roll()
        rules = self.world.rules
        assert rules is not None  # roll_check is only offered, and so only accepted, with rules
        if arguments["check"] not in rules:
            raise ModelRetry(
                f"there is no check '{arguments['check']}'; the checks are {', '.join(c.key for c in rules.checks)}"
            )
        check = rules[arguments["check"]]
        try:
            character = self.world.character(arguments["character"])
            sheets = self.sheet.sheets if self.sheet is not None else None  # a modifier reads the sheet of the moment
            modifier = self.world.modifier_for(check, character, sheets)
            target = None if arguments.get("target") is None else int(arguments["target"])  # 12.0 is 12
            read_value(check, 0, target, 0)  # a missing or unwanted target is refused before rolling
            edge = edge_asked(check, arguments.get("edge"))
            opponent, against = opponent_of(self.world, check, character.name, arguments.get("opponent"), sheets)
            hurt = against_of(self.world, check, character.name, arguments.get("against"))
        except (KeyError, CharacterCannotRoll, CheckRollError) as error:
            raise ModelRetry(str(error.args[0]) if error.args else str(error)) from None
        net = opposed_modifier(modifier, against) if opponent is not None else modifier
        for roll in [*self.rolls, *self.earlier]:
            if roll.kind == "check" and roll.check_key == check.key and roll.character == character.name:
                if roll.id in self.bound:  # a failed attempt's roll, asked for here the first time: told in full
                    self.bound.discard(roll.id)
                    return ToolReply({**check_content(roll, repeated=False), "earlier_attempt": EARLIER_NOTE})
                if roll not in self.rolls:
                    self.rolls.append(roll)
                return ToolReply(check_content(roll, repeated=True))
        if (again := self.retried.check(check.key, character.name)) is not None:
            self.rolls.append(again)
            content = {**check_content(again, repeated=False), "earlier_attempt": EARLIER_NOTE}
            return ToolReply(self._effects(again, hurt, content))
        settled = certain(check, target, net, edge)
        if settled is not None:  # the dice would decide nothing, so nothing is rolled
            raise ModelRetry(refusal(settled, character.name))
        source, typed = dice.for_one_roll(self.source), False
        rolled = check.rolled(edge)
        # Rolled at the table: the round pauses for the faces, then comes back here. Not a secret check,
        # whose dice the player must not see: the engine rolls those, at the table or not (gm.integrity.secret).
        if self.dice_from == "player" and not check.secret:
            if self.typed_faces is None:
                raise FacesNeeded(question_for(self.round_number, check.key, check.name, character.name, rolled))
            source, typed, self.typed_faces = dice.GivenFaces(self.typed_faces), True, None
        result = dice.roll(rolled, source, hit=check.hit_read)
        value, reading = read_roll(check, result, edge, target, net)
        band = reading.band
        record = self._write(
            "check",
            result,
            str(arguments.get("reason", "")),
            character=character.name,
            check_key=check.key,
            target=target,
            modifier=modifier,
            successes=result.successes,
            value=value,
            band=band.label if band else None,
            result=band.result if band else None,
            critical=band.critical if band else False,
            void=band is None,
            edge=edge,
            opponent=opponent,
            opponent_modifier=against if opponent is not None else None,
            natural_text=reading.natural,
            stepped_from=reading.stepped_from,
            typed=typed,
            salt=secrets.token_hex(16)
            if check.secret
            else None,  # so the sealed roll's hash hides it (gm.integrity.secret)
        )
        content = check_content(record, repeated=False)
        if check.secret:
            content["secret"] = SECRET_NOTE
        return ToolReply(self._effects(record, hurt, content))

    def _effects(self, record: RollRecord, against: str | None, content: dict[str, Any]) -> dict[str, Any]:
        """The check's answer with what its band's effects changed (gm.rules.effects), once applied."""
        effects = band_effects(self.world, record)
        if effects and self.sheet is not None:
            opponent = record.opponent or against
            content["changes"] = self.sheet.effects(effects, str(record.character), opponent, self._amount)
        return content

    def change_sheet(self, arguments: dict[str, Any]) -> ToolReply:
        """Change the characters' sheets: every change checked, all made or none (gm.engine._sheets)."""
        assert self.sheet is not None  # only offered, and so only accepted, where a sheet can change
        return ToolReply(self.sheet.change(list(arguments["changes"]), self._amount))

    def _amount(self, notation: str, reason: str) -> RollRecord:
        """A sheet change's amount rolled and written, or the same roll of an earlier attempt at the round."""
        if (again := self.retried.amount(notation, reason)) is not None:
            self.rolls.append(again)
            return again
        return self._write("dice", dice.roll(dice.parse(notation), dice.for_one_roll(self.source)), reason)

    def _room_for_a_roll(self) -> None:
        """Refuse a roll past `MAX_ROLLS` in this round, with what the model can do instead."""
        if len(self.rolls) >= MAX_ROLLS:
            raise ModelRetry(
                f"this round has made {len(self.rolls)} rolls, the most one round may; nothing more was rolled."
                " Narrate the round with the rolls it has"
            )

    def roll_dice(self, arguments: dict[str, Any]) -> ToolReply:
        self._room_for_a_roll()
        try:
            expression = dice.parse(arguments["notation"])
            dice.require_dice(expression)  # a "roll" of a bare number would be a number nobody rolled
        except dice.DiceError as error:
            raise ModelRetry(str(error)) from None
        if (again := self.retried.dice(expression.text)) is not None:
            self.rolls.append(again)
            content = {"roll": again.id, "total": again.total, "dice": again.line, "earlier_attempt": EARLIER_NOTE}
            return ToolReply(content)
        result = dice.roll(expression, dice.for_one_roll(self.source))
        record = self._write("dice", result, str(arguments.get("reason", "")))
        return ToolReply({"roll": record.id, "total": result.total, "dice": str(result)})

    def reveal_roll(self, arguments: dict[str, Any]) -> ToolReply:
        """Unseal a secret check's roll of this story, so the player sees its card from now on."""
        roll_id = int(arguments["roll"])
        found = next((roll for roll in self.rolls if roll.id == roll_id), None)
        if found is None:
            found = self.ledger.find(roll_id)
        rules = self.world.rules
        if found is None:
            raise ModelRetry(f"there is no roll {roll_id} in this story")
        key = str(found.check_key)
        if found.kind != "check" or rules is None or key not in rules or not rules[key].secret:
            raise ModelRetry(f"roll {roll_id} is not a secret check's roll; the player already sees it")
        self.ledger.reveal(roll_id)
        return ToolReply({"revealed": roll_id, "band": found.band, "result": found.result})

    def advance_time(self, arguments: dict[str, Any]) -> ToolReply:
        calendar = self.world.calendar
        assert calendar is not None and self.clock is not None  # only offered, and so only accepted, with a calendar
        before = self.clock
        self.clock = advance(before, arguments)
        return ToolReply({"now": calendar.text(self.clock), "passed": duration_text(self.clock - before)})

    def roll_for_player(self, expression: dice.Expression, purpose: str, character: str | None = None) -> str:
        """Roll a player's own dice (`/roll`), write the roll, and return it as a fact for the game master.

        The roll is `character`'s (a seat's), else the world's first player character's.
        The same `/roll` sent again after a failed attempt at this round is not rolled again: its earlier roll stands.
        """
        player = character or self.world.players[0].name
        if (again := self.retried.player(expression.text, purpose, player)) is not None:
            self.rolls.append(again)
            return player_fact(again) + EARLIER_FACT
        result = dice.roll(expression, dice.for_one_roll(self.source))
        record = self._write("player", result, purpose, character=player)
        return player_fact(record)

    def roll_initiative(self, expression: dice.Expression, character: str) -> RollRecord:
        """Roll one character's initiative (gm.engine.table) as plain dice, once per round: a retry gets it back."""
        if (again := self.retried.initiative(character)) is not None:
            self.rolls.append(again)
            return again
        result = dice.roll(expression, dice.for_one_roll(self.source))
        return self._write("dice", result, INITIATIVE_REASON, character=character)

    def _write(self, kind: Literal["check", "dice", "player"], rolled: Roll, reason: str, **fields: Any) -> RollRecord:
        """Write one roll of this attempt at once (it is durable before the model hears of it), and keep it."""
        record = self.ledger.write(
            RollRecord(
                story_id=self.story_id,
                attempt_id=self.attempt_id,
                round_number=self.round_number,
                kind=kind,
                notation=rolled.expression.text,
                reason=reason,
                faces=[list(faces) for faces in rolled.faces],
                total=rolled.total,
                line=str(rolled),
                **fields,
            )
        )
        self.rolls.append(record)
        return record

    def replay_player_rolls(self) -> list[str]:
        """When a round is played again, its player rolls stand as they were: kept, and given as facts again."""
        replayed = [record for record in self.earlier if record.kind == "player"]
        self.rolls.extend(replayed)
        return [player_fact(record) for record in replayed]

    def replay_check_rolls(self) -> list[str]:
        """When a round is played again, its check rolls are in play from the start: the new telling must
        serve each with an outcome (and is judged on it), so each is given as a fact with its band."""
        replayed = [record for record in self.earlier if record.kind == "check" and not record.void]
        self.rolls.extend(replayed)
        facts = []
        for record in replayed:  # the earlier version's changes were undone: its bands' effects are made again
            facts.append(check_fact(record, self.world))
            changed = self._effects(record, earlier_against(self.world, self.earlier, record), {}).get("changes")
            if changed:  # each must be told (gm.engine.sheet_judge), so the model is told them
                facts.append(f"roll {record.id}'s band changed the sheets again: {'; '.join(changed)}; tell it too")
        return facts

    def bind_retried_checks(self) -> list[str]:
        """A failed attempt's check rolls bind this attempt, as a regenerated round's do: in play from the start,
        each given as a fact with its band, and each must be told, whichever check this attempt asks for."""
        held = {record.id for record in self.rolls}
        bound = [
            record
            for record in self.retried.rolls
            if record.kind == "check" and not record.void and record.id not in held
        ]
        self.retried.taken(record.id for record in bound)
        self.bound.update(record.id for record in bound if record.id is not None)
        self.rolls.extend(bound)
        return [check_fact(record, self.world) + EARLIER_FACT for record in bound]

    def narrate(self, arguments: dict[str, Any]) -> ToolReply:
        """Propose the round's ending; the referee rules on it next (`refusals`)."""
        outcomes = tuple(
            Outcome(str(item["character"]), item["result"], item.get("roll")) for item in arguments["outcomes"]
        )
        # The story keeps no reasoning, even where a model wrote its thinking into the narration itself.
        narration = strip_reasoning(str(arguments["narration"])).strip()
        return ToolReply({"accepted": True}, proposed=Narration(narration, outcomes))

    def refusals(self, ending: Narration) -> list[Refusal]:
        """The referee's refusals of a proposed ending, given the round's rolls as the model had read them."""
        facts = [round_roll(record, record.id in self.told) for record in self.rolls]
        names = [character.name for character in self.world.characters]
        return referee(facts, ending.outcomes, ending.text, names) + acting_refusals(self.acting, ending.outcomes)


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool the game master can call: what running it does, and whether that reads or writes the database
    (then it runs on the database's worker thread; otherwise on the event loop)."""

    run: Callable[[RoundTools, dict[str, Any]], ToolReply]
    on_database: bool


TOOLS: dict[str, Tool] = {
    "roll_check": Tool(RoundTools.roll_check, on_database=True),  # writes the roll
    "roll_dice": Tool(RoundTools.roll_dice, on_database=True),  # writes the roll
    "reveal_roll": Tool(RoundTools.reveal_roll, on_database=True),  # looks the roll up, writes the reveal
    "advance_time": Tool(RoundTools.advance_time, on_database=False),
    "change_sheet": Tool(RoundTools.change_sheet, on_database=True),  # writes the rolls of rolled amounts
    "narrate": Tool(RoundTools.narrate, on_database=False),
}


def needs_database(names: Iterable[str]) -> bool:
    """Whether any of these tools reads or writes the database (an unknown name needs nothing)."""
    return any(name in TOOLS and TOOLS[name].on_database for name in names)
