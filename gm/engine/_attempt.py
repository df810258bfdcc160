"""An attempt at a round as the database sees it: opened, its rolls written, and ended, on a worker thread.

`gm.engine.round` plays an attempt (the tool loop, the referee, the judge); this module holds what it plays
with and what it hands to `Store.off_loop`: the attempt's running state (`AttemptState`), its
opening (`begin`: the story's lease taken, the attempt opened and the past the game master is shown
read, in one transaction), how its rolls are written (`roll_writer`), and its accepted round written
(`accept`, in one transaction that lets the lease go) or its pause for the player's dice kept
(`paused_record`, gm.engine.paused).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from gm import dice
from gm.engine._earlier_rolls import EarlierRolls
from gm.engine.memory import recall_queued
from gm.engine.paused import waiting_sentence
from gm.engine.prompt import Past, PlayerTurn, game_master_messages
from gm.engine.tools.running import Narration, RoundTools
from gm.errors import Conflict
from gm.integrity.secret import is_secret, refuse_if_ended, reveal, sealed_ids
from gm.integrity.seeds import fair_dice, stamped
from gm.models.client import ToolCall
from gm.store import ModelCall, Opened, PausedRound, RollRecord, RoundRecord, Store, StoryState
from gm.store._rounds import open_attempt
from gm.store._stories import Claim
from gm.transcript.shapes import JudgementPublic, OutcomePublic, QuestionPublic, RollPublic, RoundPublic
from gm.world.definition import World

# A listener told of the round as it happens: ("working", {"call": n}), ("roll", a RollPublic as JSON),
# ("refusal", {"reason": ...}) and ("narration", {"text": ...}); a web front end streams these.
RoundEvents = Callable[[str, dict[str, Any]], None]


def ignore(kind: str, data: dict[str, Any]) -> None:
    """The listener when nobody listens."""


@dataclass(frozen=True, slots=True)
class RoundSettings:
    """Bounds on one round, and how long to wait for a story whose round is already being played."""

    max_refusals: int = 3
    max_model_calls: int = 8
    lease_seconds: float = 20.0  # how long a dead process holds its story (see gm.engine.lease)
    heartbeat_seconds: float = 5.0  # how often a running round renews its lease
    wait_seconds: float = 0.0


class RoundResult(RoundPublic):
    """What a front end shows after a round: the round in its public shape, and how it was played."""

    story_id: str
    model_calls: int
    regenerated: bool = False


class RoundPaused(BaseModel):
    """A round paused for the player's dice (gm.engine.typed_dice): what to ask; `gm.engine._resume.continue_round`
    goes on with it."""

    story_id: str
    asking: QuestionPublic


@dataclass(frozen=True, slots=True)
class PlayerRoll:
    """Dice a player rolled with `/roll`: rolled at the start of the round and given to the game master as a fact."""

    expression: dice.Expression
    purpose: str = ""


@dataclass
class AttemptState:
    """The running state of one attempt: messages so far, its tools, refusals, model calls."""

    messages: list[dict[str, Any]]
    attempt_id: str
    number: int
    player_text: str
    tools: RoundTools
    events: RoundEvents = ignore
    refusals: list[str] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    judged: bool = True  # False for a story started with judging off
    narrate_reply: int | None = None  # where in `messages` the accepted narrate's tool result is
    judgement: dict[str, Any] | None = None  # the judge's verdicts on the accepted narration, if judged
    calls_before: int = 0  # model calls made before the round paused for dice (they count toward the bound)
    regenerating: bool = False
    unfinished: set[str] = field(default_factory=set)  # earlier attempts at this round that were not accepted
    finish: Callable[[AttemptState, Narration], RoundResult] | None = None  # accepts the round (in the worker thread)
    accepted: RoundResult | None = None  # the round, once accepted


@dataclass(frozen=True, slots=True)
class Opening:
    """What the caller asked this round to be."""

    player_text: str
    facts: Sequence[str]
    regenerate: bool
    player_roll: PlayerRoll | None
    source: dice.DiceSource | None


def begin(store: Store, story_id: str, world: World, opening: Opening, tell: RoundEvents, lease: Claim) -> AttemptState:
    """Open the attempt, taking the story's lease: its number, earlier rolls, player roll, prompt.

    The lease, what the round reads of the story, its earlier rolls, its attempt and what the game
    master is shown of the past (the memory keeper's `recall_queued`) are one transaction (`open_attempt`):
    `LeaseBusy`, with nothing done, if another round holds the story.
    """
    with store.transaction() as connection:
        opened = open_attempt(
            connection,
            story_id,
            regenerate=opening.regenerate,
            admit=admit,
            lease=lease,
            read_with=recall_queued,
            commit=True,  # with its last batch: one round trip fewer on PostgreSQL
        )
    past: Past = opened.read
    story, number = opened.story, opened.number
    player_text = opened.player_text if opened.player_text is not None else opening.player_text
    source = fair_dice(
        story, opened.seed, opening.source
    )  # a fair story's dice come from its seed (gm.integrity.seeds)
    retried = EarlierRolls(opened.retried)  # a round's rolls outlive its attempts

    write_roll = roll_writer(store, world, source, tell)
    tools = RoundTools(world, story.id, opened.attempt.id, number, write_roll, source, opened.earlier, retried=retried)
    tools.dice_from = str(story.settings.get("dice_from", "engine"))
    bind_secrets(store, tools)
    tools.clock = _clock_at_start(opened, world)
    facts = [*opening.facts, *tools.replay_player_rolls(), *tools.replay_check_rolls()]
    if opening.player_roll is not None:
        facts.append(tools.roll_for_player(opening.player_roll.expression, opening.player_roll.purpose))
    turn = PlayerTurn(player_text, tuple(facts))
    messages = game_master_messages(world, past, turn, tools.clock)
    judged = story.settings.get("judge") != "off"
    return AttemptState(
        messages,
        opened.attempt.id,
        number,
        player_text,
        tools,
        tell,
        judged=judged,
        regenerating=opening.regenerate,
        unfinished=opened.unfinished,
    )


def admit(story: StoryState, waiting: dict[str, Any] | None) -> None:
    """Refuse a round of an ended story, or of one whose round waits for dice (answer or abandon it first)."""
    refuse_if_ended(story)
    if waiting is not None:
        raise Conflict(waiting_sentence(QuestionPublic.model_validate(waiting)))


def roll_writer(
    store: Store, world: World, source: dice.DiceSource | None, tell: RoundEvents
) -> Callable[[RollRecord], RollRecord]:
    """How an attempt writes a roll: at once, as the next link of the story's chain, and tells the listener."""

    def write_roll(record: RollRecord) -> RollRecord:
        stored = store.record_roll(stamped(source, record))
        if tell is not ignore and not is_secret(
            stored, world
        ):  # a secret roll's card is not streamed (gm.integrity.secret)
            tell("roll", RollPublic.from_stored(stored, world).model_dump(mode="json"))
        return stored

    return write_roll


def bind_secrets(store: Store, tools: RoundTools) -> None:
    """Give the tools what reveal_roll needs: the story's rolls by id, and a way to write a reveal at once."""
    story_id, number = tools.story_id, tools.round_number

    def find(roll_id: int) -> RollRecord | None:
        found = store.rolls_by_id([roll_id])
        return found[0] if found and found[0].story_id == story_id else None

    tools.find_roll = find
    tools.reveal = lambda roll_id: reveal(store, story_id, roll_id, number)


def _clock_at_start(opened: Opened, world: World) -> int | None:
    """The story's time as the round begins: now, or, for a round played again, when the round before it ended."""
    if world.calendar is None:
        return None
    if opened.attempt.regenerating:
        return opened.clock_before or 0
    return opened.story.clock or 0


def accept(
    store: Store, story_id: str, world: World, state: AttemptState, ending: Narration, regenerate: bool, holder: str
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
    )
    store.accept_round(state.attempt_id, record, bind(state.calls, story_id, state.attempt_id), holder=holder)
    unfinished = state.unfinished  # earlier attempts whose rolls came back to this one
    secret = any(is_secret(roll, world) for roll in state.tools.rolls)
    sealed = sealed_ids(store, story_id, world) if secret else set()  # secret rolls not yet revealed: no card
    return RoundResult(
        story_id=story_id,
        number=state.number,
        player_text=state.player_text,
        narration=ending.text,
        outcomes=outcomes,
        rolls=[RollPublic.from_stored(r, world, unfinished=unfinished) for r in rolls if r["id"] not in sealed],
        refusals=list(state.refusals),
        judge=JudgementPublic.model_validate(state.judgement) if state.judgement else None,
        clock=state.tools.clock,
        time=world.calendar.text(state.tools.clock) if world.calendar and state.tools.clock is not None else None,
        model_calls=len(state.calls),
        regenerated=regenerate,
    )


def paused_record(story_id: str, state: AttemptState, question: QuestionPublic, pending: list[ToolCall]) -> PausedRound:
    """Everything the attempt needs to go on once the faces are typed, in any process (gm.engine.paused)."""
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
        model_calls=state.calls_before + len(state.calls),
        clock=state.tools.clock,
        question=question.model_dump(mode="json"),
    )


def bind(calls: list[ModelCall], story_id: str, attempt_id: str) -> list[ModelCall]:
    """The attempt's model calls, each marked as its story's and its attempt's, for writing."""
    for call in calls:
        call.story_id, call.attempt_id = story_id, attempt_id
    return calls
