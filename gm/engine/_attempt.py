"""An attempt at a round: its running state, built one way from what the store read, and written at its end.

A round is played as an attempt (gm.engine._machine). The store opens a fresh attempt
(`Store.open_attempt`: the lease taken, the story, the round's earlier rolls and the past read, the
attempt written, in one transaction) or takes a paused one up again (`Store.take_paused`); either way
`attempt_state` builds the same `AttemptState` from what it read: the game master's messages so far,
the round's tools bound to the store (`StoreLedger`), the rolls it holds, and the refusals and model
calls it has spent. At its end the attempt is written as an accepted round (`accept`) or kept paused
for the player's dice (`paused_record`), each in one transaction that lets the lease go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gm import dice
from gm.engine._earlier_rolls import EarlierRolls
from gm.engine._sheets import RoundSheet, sheet_lines
from gm.engine.prompt import PlayerTurn, game_master_messages
from gm.engine.results import PlayerRoll, RoundEvents, RoundResult, ignore
from gm.engine.table import TableTurn, seated_turn
from gm.engine.tools.running import Narration, RoundTools
from gm.integrity.secret import is_secret, reveal, sealed_ids
from gm.integrity.seeds import fair_dice, stamped
from gm.models.completion import ToolCall
from gm.store import ModelCall, Opened, PausedRound, RollRecord, RoundRecord, SheetStart, Store, TakenUp
from gm.transcript.shapes import JudgementPublic, OutcomePublic, QuestionPublic, RollPublic
from gm.transcript.sheets import ChangePublic
from gm.transcript.table import ActionPublic, WhisperPublic
from gm.world.definition import World


@dataclass
class AttemptState:
    """The running state of one attempt: its messages so far, its tools, the refusals drawn, the model calls made."""

    messages: list[dict[str, Any]]
    attempt_id: str
    number: int
    player_text: str
    tools: RoundTools
    events: RoundEvents = ignore
    refusals: list[str] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    judged: bool = True  # False for a story started with judging off
    judgement: dict[str, Any] | None = None  # the judge's verdicts on the accepted narration, if judged
    calls_before: int = 0  # model calls made before the round paused for dice (they count toward the bound)
    asked: int = 0  # the game master's calls in this attempt since it opened or was taken up
    regenerating: bool = False
    unfinished: set[str] = field(default_factory=set)  # earlier attempts at this round that were not accepted
    actions: list[dict[str, Any]] | None = None  # a round seats played: each action as the game master was given it

    @property
    def model_calls(self) -> int:
        """The game master's, and the judge's, calls this attempt has made, before a pause included."""
        return self.calls_before + len(self.calls)

    def refuse(self, reason: str) -> None:
        """Count one refusal of the round (the referee's, the judge's, a tool's, a plain answer's): kept for the
        transcript, counted on the model call that drew it, and told to whoever listens."""
        self.refusals.append(reason)
        if self.calls:
            self.calls[-1].refusals += 1
        self.events("refusal", {"reason": reason})


@dataclass(frozen=True, slots=True)
class Opening:
    """What the caller asked this round to be."""

    player_text: str
    facts: Sequence[str]
    regenerate: bool
    player_roll: PlayerRoll | None
    source: dice.DiceSource | None
    table: TableTurn | None = None  # a round seats played (gm.engine.table)


@dataclass(frozen=True, slots=True)
class StoreLedger:
    """A round's rolls as its tools write and look them up: in the store, each at once (gm.engine.tools)."""

    store: Store
    world: World
    story_id: str
    round_number: int
    source: dice.DiceSource | None
    events: RoundEvents

    def write(self, record: RollRecord) -> RollRecord:
        """Write the roll as the next link of the story's chain, and tell the listener (a secret roll's card is
        not streamed: gm.integrity.secret). The card is made once, by the store if its live event goes with the
        roll (`Store.record_roll`), else here."""
        made: dict[str, Any] | None = None

        def card(stored: RollRecord) -> dict[str, Any]:
            nonlocal made
            made = RollPublic.from_stored(stored, self.world).model_dump(mode="json")
            return made

        shown = self.events is not ignore and not is_secret(record, self.world)
        stored = self.store.record_roll(stamped(self.source, record), card if shown else None)
        if shown:  # a card made for a transaction that failed has another roll's id: made again
            self.events("roll", made if made is not None and made["id"] == stored.id else card(stored))
        return stored

    def find(self, roll_id: int) -> RollRecord | None:
        found = self.store.rolls_by_id([roll_id])
        return found[0] if found and found[0].story_id == self.story_id else None

    def reveal(self, roll_id: int) -> None:
        reveal(self.store, self.story_id, roll_id, self.round_number)


def opened_state(store: Store, world: World, opened: Opening, read: Opened, events: RoundEvents) -> AttemptState:
    """A fresh attempt's state, from what `Store.open_attempt` read: its rolls so far (an earlier version's, when
    the round is played again; every earlier attempt's at it), the player's own roll, and the prompt."""
    story, number = read.story, read.number
    assert read.past is not None  # the round asks for its past as it opens
    player_text = read.player_text if read.player_text is not None else opened.player_text
    source = fair_dice(story, read.seed, opened.source)  # a fair story's dice come from its seed (gm.integrity.seeds)
    tools = RoundTools(
        world,
        StoreLedger(store, world, story.id, number, source, events),
        story.id,
        read.attempt.id,
        number,
        source,
        read.earlier,
        retried=EarlierRolls(read.retried),  # a round's rolls outlive its attempts
        clock=_clock_at_start(read, world),
        dice_from=str(story.settings.get("dice_from", "engine")),
        sheet=RoundSheet(world, read.sheet or SheetStart(None)) if world.sheet_changes else None,
    )
    facts = [*opened.facts, *tools.replay_player_rolls(), *tools.replay_check_rolls(), *tools.bind_retried_checks()]
    actions = read.actions if opened.regenerate else None
    if opened.table is not None and not opened.regenerate:
        player_text, actions, more = seated_turn(tools, world, opened.table)
        facts += more
    elif actions:  # a seated round played again: its actions stand, its player rolls are replayed above
        tools.seated, tools.acting = frozenset(a["character"] for a in actions), _acting(actions, read.story.settings)
    if opened.player_roll is not None:
        character = opened.table.actions[0].character if opened.table is not None and opened.table.actions else None
        facts.append(tools.roll_for_player(opened.player_roll.expression, opened.player_roll.purpose, character))
    sheet = sheet_lines(tools.sheet.sheets) if tools.sheet is not None else ()
    messages = game_master_messages(world, read.past, PlayerTurn(player_text, tuple(facts)), tools.clock, sheet)
    return AttemptState(
        messages,
        read.attempt.id,
        number,
        player_text,
        tools,
        events,
        judged=story.settings.get("judge") != "off",
        regenerating=opened.regenerate,
        unfinished=read.unfinished,
        actions=actions,
    )


def _acting(actions: list[dict[str, Any]], settings: dict[str, Any]) -> tuple[str, ...]:
    """The characters a together round played again must settle (none in free rounds)."""
    if settings.get("rounds") != "together":
        return ()
    return tuple(dict.fromkeys(str(action["character"]) for action in actions))


def taken_up_state(
    store: Store,
    world: World,
    taken: TakenUp,
    faces: list[int],
    source: dice.DiceSource | None,
    events: RoundEvents,
) -> AttemptState:
    """A paused attempt's state, rebuilt from what `Store.take_paused` read, as it was when it paused: the check
    it paused at rolls next, with the typed `faces` as its dice."""
    paused, story_id = taken.paused, taken.paused.story_id
    rolling = fair_dice(taken.story, taken.seed, source)  # plain dice (roll_dice) are still the engine's
    tools = RoundTools(
        world,
        StoreLedger(store, world, story_id, paused.round_number, rolling, events),
        story_id,
        paused.attempt_id,
        paused.round_number,
        rolling,
        taken.earlier,
        rolls=taken.held,
        retried=EarlierRolls(taken.others, _taken={roll.id for roll in taken.held}),
        told=set(paused.told),  # what the game master had read before the answer it paused in
        clock=paused.clock,
        dice_from="player",
        typed_faces=faces,
    )
    if world.sheet_changes:
        story = taken.story
        start = SheetStart(story.sheet, story.sheet_length, story.sheet_head)
        tools.sheet = RoundSheet.restored(world, paused.sheet, start)
    table = paused.question.get("table") or {}  # a seated round's state, kept with its question (`paused_record`)
    tools.seated, tools.acting = frozenset(table.get("seated", ())), tuple(table.get("acting", ()))
    tools.whispers = list(table.get("whispers", ()))
    return AttemptState(
        list(paused.messages),
        paused.attempt_id,
        paused.round_number,
        paused.player_text,
        tools,
        events,
        refusals=list(paused.refusals),
        judged=paused.judged,
        calls_before=paused.model_calls,
        regenerating=paused.regenerating,
        unfinished=taken.unfinished,
        actions=table.get("actions"),
    )


def pending_calls(paused: PausedRound) -> list[ToolCall]:
    """The tool calls of the answer a round paused in, still to run: the check it paused at first."""
    return [ToolCall(call["id"], call["name"], call["arguments"]) for call in paused.pending]


def _clock_at_start(opened: Opened, world: World) -> int | None:
    """The story's time as the round begins: now, or, for a round played again, when the round before it ended."""
    if world.calendar is None:
        return None
    if opened.attempt.regenerating:
        return opened.clock_before or 0
    return opened.story.clock or 0


def accept(
    store: Store, story_id: str, world: World, state: AttemptState, ending: Narration, holder: str
) -> RoundResult:
    """Write the accepted round, its rolls copied in as written, if `holder` holds the lease still, and let the
    lease go (one transaction).

    The round keeps its rolls as they are in the database, field for field: each is the record this
    attempt wrote (append-only, never changed since) or read back from an earlier attempt.
    """
    rolls = [record.model_dump(mode="json", exclude={"story_id", "created_at"}) for record in state.tools.rolls]
    rolls = [roll for roll in rolls if roll["id"]]
    outcomes = [OutcomePublic(character=o.character, result=o.result, roll=o.roll) for o in ending.outcomes]
    record = RoundRecord(
        story_id=story_id,
        number=state.number,
        attempt_id=state.attempt_id,
        player_text=state.player_text,
        narration=ending.text,
        outcomes=[outcome.model_dump() for outcome in outcomes],
        rolls=rolls,
        refusals=state.refusals,
        judgement=state.judgement,
        clock=state.tools.clock,
        actions=state.actions,
        whispers=state.tools.whispers or None,
    )
    sheet = state.tools.sheet.write(story_id, state.attempt_id, state.number) if state.tools.sheet else None
    if sheet is not None:
        record.sheet_hash = sheet.head
    calls = bind(state.calls, story_id, state.attempt_id)
    store.accept_round(state.attempt_id, record, calls, holder=holder, sheet=sheet, regenerated=state.regenerating)
    secret = any(is_secret(roll, world) for roll in state.tools.rolls)
    sealed = sealed_ids(store, story_id, world) if secret else set()  # secret rolls not yet revealed: no card
    clock = state.tools.clock
    return RoundResult(
        story_id=story_id,
        number=state.number,
        player_text=state.player_text,
        narration=ending.text,
        outcomes=outcomes,
        rolls=[RollPublic.from_stored(r, world, unfinished=state.unfinished) for r in rolls if r["id"] not in sealed],
        refusals=list(state.refusals),
        judge=JudgementPublic.model_validate(state.judgement) if state.judgement else None,
        clock=clock,
        time=world.calendar.text(clock) if world.calendar and clock is not None else None,
        model_calls=len(state.calls),
        regenerated=state.regenerating,
        changes=[ChangePublic.from_stored(change) for change in sheet.changes] if sheet is not None else [],
        sheet_hash=record.sheet_hash,
        attempt=state.attempt_id,
        sheet=sheet.sheets if sheet is not None else None,
        actions=[ActionPublic.model_validate(action) for action in state.actions] if state.actions else None,
        whispers=[WhisperPublic.model_validate(w) for w in state.tools.whispers] if state.tools.whispers else None,
    )


def paused_record(story_id: str, state: AttemptState, question: QuestionPublic, pending: list[ToolCall]) -> PausedRound:
    """Everything the attempt needs to go on once the faces are typed, in any process."""
    return PausedRound(
        story_id=story_id,
        attempt_id=state.attempt_id,
        round_number=state.number,
        player_text=state.player_text,
        regenerating=state.regenerating,
        judged=state.judged,
        messages=state.messages,
        pending=[{"id": call.id, "name": call.name, "arguments": call.arguments} for call in pending],
        rolls=[roll.id for roll in state.tools.rolls if roll.id is not None],
        told=sorted(state.tools.told),
        earlier=[roll.id for roll in state.tools.earlier if roll.id is not None],
        refusals=state.refusals,
        model_calls=state.model_calls,
        clock=state.tools.clock,
        question={**question.model_dump(mode="json"), **_table_state(state)},
        sheet=state.tools.sheet.kept() if state.tools.sheet is not None else None,
    )


def _table_state(state: AttemptState) -> dict[str, Any]:
    """A seated round's state, kept beside its question while it waits for dice (read back by `taken_up_state`)."""
    tools = state.tools
    if state.actions is None and not tools.seated:
        return {}
    table = {"actions": state.actions, "seated": sorted(tools.seated), "acting": list(tools.acting)}
    return {"table": {**table, "whispers": tools.whispers}}


def bind(calls: list[ModelCall], story_id: str, attempt_id: str) -> list[ModelCall]:
    """The attempt's model calls, each marked as its story's and its attempt's, for writing."""
    for call in calls:
        call.story_id, call.attempt_id = story_id, attempt_id
    return calls
