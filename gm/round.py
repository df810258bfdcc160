"""One round, top to bottom: player text -> tool loop -> refereed outcome -> stored.

The story's lease is taken so no other round of it runs at once, and renewed while the round runs
(`gm.lease`); the accepted round is written only if the lease is still held. The game master is
called with the world, the past and the player's text; its tool calls are run in order, each roll
written as it is rolled. The round ends when narrate is accepted by the referee, or, in a round
where no check was rolled, when the model answers in plain text. Refusals and model calls are
bounded; past either bound, or when the model's answer is cut off, the round fails cleanly: its
rolls stay (marked by their failed attempt), nothing else is written, and the caller gets one
sentence to show the player (whatever else stops a round ends its attempt the same way: `gm.failing`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel

from gm import dice
from gm.errors import Conflict, ModelRetry, RoundFailed
from gm.failing import end_failed
from gm.judge import Judge
from gm.lease import held_lease
from gm.memory import recall
from gm.model import ChatModel, ToolCall
from gm.paused import keep_paused, waiting_sentence
from gm.prompt import JudgedOutcome, JudgeRequest, PlayerTurn, engine_message, game_master_messages
from gm.public import JudgementPublic, OutcomePublic, QuestionPublic, RollPublic, RoundPublic
from gm.referee import Result, Telling, judge_refusals, referee
from gm.retries import EarlierRolls
from gm.secret import is_secret, refuse_if_ended, reveal, sealed_ids
from gm.seeds import fair_dice, stamped
from gm.store import ModelCall, Opened, PausedRound, RollRecord, RoundRecord, Store, StoryState, model_call_from
from gm.store_rounds import NOTHING_TO_REGENERATE as NOTHING_TO_REGENERATE  # where the web API finds it
from gm.table import FacesNeeded
from gm.tools import Narration, RoundTools, round_roll, tool_schemas
from gm.worlddef import World

# A listener told of the round as it happens: ("working", {"call": n}), ("roll", a RollPublic as JSON),
# ("refusal", {"reason": ...}) and ("narration", {"text": ...}); a web front end streams these.
RoundEvents = Callable[[str, dict[str, Any]], None]


def _ignore(kind: str, data: dict[str, Any]) -> None:
    """The listener when nobody listens."""


PLAIN_TEXT_REFUSAL = (
    "You rolled a check this round, so end it by calling narrate with the narration and an outcome "
    "naming each roll; plain text cannot end this round."
)


@dataclass(frozen=True, slots=True)
class RoundSettings:
    """Bounds on one round, and how long to wait for a story whose round is already being played."""

    max_refusals: int = 3
    max_model_calls: int = 8
    lease_seconds: float = 20.0  # how long a dead process holds its story (see gm.lease)
    heartbeat_seconds: float = 5.0  # how often a running round renews its lease
    wait_seconds: float = 0.0


class RoundResult(RoundPublic):
    """What a front end shows after a round: the round in its public shape, and how it was played."""

    story_id: str
    model_calls: int
    regenerated: bool = False


class RoundPaused(BaseModel):
    """A round paused for the player's dice (gm.table): what to ask; `gm.resume.continue_round` goes on with it."""

    story_id: str
    asking: QuestionPublic


@dataclass(frozen=True, slots=True)
class PlayerRoll:
    """Dice a player rolled with `/roll`: rolled at the start of the round and given to the game master as a fact."""

    expression: dice.Expression
    purpose: str = ""


@dataclass
class _Attempt:
    """The running state of one attempt: messages so far, its tools, refusals, model calls."""

    messages: list[dict[str, Any]]
    attempt_id: str
    number: int
    player_text: str
    tools: RoundTools
    events: RoundEvents = _ignore
    refusals: list[str] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)
    judged: bool = True  # False for a story started with judging off
    narrate_reply: int | None = None  # where in `messages` the accepted narrate's tool result is
    judgement: dict[str, Any] | None = None  # the judge's verdicts on the accepted narration, if judged
    calls_before: int = 0  # model calls made before the round paused for dice (they count toward the bound)
    regenerating: bool = False
    unfinished: set[str] = field(default_factory=set)  # earlier attempts at this round that were not accepted


class _Paused(Exception):
    """A check waits for the player's dice: the tool calls not yet run, the first of them that check."""

    def __init__(self, question: QuestionPublic, pending: list[ToolCall]) -> None:
        super().__init__(question.text)
        self.question, self.pending = question, pending


async def play_round(
    store: Store,
    story_id: str,
    world: World,
    model: ChatModel,
    player_text: str,
    *,
    settings: RoundSettings = RoundSettings(),
    source: dice.DiceSource | None = None,
    facts: Sequence[str] = (),
    regenerate: bool = False,
    player_roll: PlayerRoll | None = None,
    events: RoundEvents | None = None,
    judge: Judge | None = None,
) -> RoundResult | RoundPaused:
    """Play one round of a story (or play its last round again, keeping its rolls, with `regenerate`).

    With a `judge`, a narration that settles a check roll is shown, stored or remembered only once
    the judge has read it as telling each rolled outcome's result (see `gm.judge`), unless the story
    was started with `settings={"judge": "off"}`.

    In a story whose checks are rolled at the table (`settings={"dice_from": "player"}`, gm.table), the
    round pauses at a check and a `RoundPaused` comes back with the question; `gm.resume` goes on with it.

    Database work goes through `Store.off_loop` (worker threads on a database server, so one
    server's other stories go on meanwhile); the listener is always called on the event loop, in order.
    """
    loop = asyncio.get_running_loop()
    listener = events or _ignore

    loop_thread = threading.get_ident()

    def tell(kind: str, data: dict[str, Any]) -> None:
        if threading.get_ident() == loop_thread:
            listener(kind, data)
        else:  # from a worker thread: hand it to the loop, where it keeps its place in line
            loop.call_soon_threadsafe(listener, kind, data)

    holder = uuid.uuid4().hex
    async with held_lease(store, story_id, holder, settings):  # renewed by a heartbeat while the round runs
        opening = _Opening(player_text, facts, regenerate, player_roll, source)
        state = await store.off_loop(_begin, store, story_id, world, opening, tell)
        return await run_attempt(store, story_id, world, model, state, settings, judge, holder)


async def run_attempt(
    store: Store,
    story_id: str,
    world: World,
    model: ChatModel,
    state: _Attempt,
    settings: RoundSettings,
    judge: Judge | None,
    holder: str,
    pending: Sequence[ToolCall] = (),
) -> RoundResult | RoundPaused:
    """Play an opened attempt (under `holder`'s lease) to its end: accepted, paused for dice, or failed.

    `pending` are tool calls of the game master's last answer still to run, for a round taken up again.
    """
    try:
        try:
            ending = await _tool_loop(store, model, world, state, settings, judge, pending)
        except _Paused as paused:
            kept = _paused_record(story_id, state, paused)
            calls = _bind(state.calls, story_id, state.attempt_id)
            await store.off_loop(keep_paused, store, kept, calls, holder)
            return RoundPaused(story_id=story_id, asking=paused.question)
        return await store.off_loop(_accept, store, story_id, world, state, ending, state.regenerating, holder)
    except BaseException as error:  # gave up, unreachable, a failed write, a bug: never left running
        calls = _bind(state.calls, story_id, state.attempt_id)
        raise await end_failed(store, state.attempt_id, calls, error) from None


def _paused_record(story_id: str, state: _Attempt, paused: _Paused) -> PausedRound:
    """Everything the attempt needs to go on once the faces are typed, in any process (gm.paused)."""
    return PausedRound(
        story_id=story_id,
        attempt_id=state.attempt_id,
        round_number=state.number,
        player_text=state.player_text,
        regenerating=state.regenerating,
        judged=state.judged,
        messages=state.messages,
        pending=[{"id": call.id, "name": call.name, "arguments": call.arguments} for call in paused.pending],
        rolls=[roll.id for roll in state.tools.rolls if roll.id is not None],
        told=sorted(state.tools.told),
        earlier=[roll.id for roll in state.tools.earlier if roll.id is not None],
        refusals=state.refusals,
        model_calls=state.calls_before + len(state.calls),
        clock=state.tools.clock,
        question=paused.question.model_dump(mode="json"),
    )


@dataclass(frozen=True, slots=True)
class _Opening:
    """What the caller asked this round to be."""

    player_text: str
    facts: Sequence[str]
    regenerate: bool
    player_roll: PlayerRoll | None
    source: dice.DiceSource | None


def _begin(store: Store, story_id: str, world: World, opening: _Opening, tell: RoundEvents) -> _Attempt:
    """Open the attempt (under the lease): its number, earlier rolls, player roll, prompt.

    What the round reads of the story, its earlier rolls and its attempt are one transaction
    (`Store.open_attempt`); what the game master is shown of the past is the memory keeper's (`recall`).
    """
    opened = store.open_attempt(story_id, regenerate=opening.regenerate, admit=_admit)
    story, number = opened.story, opened.number
    player_text = opened.player_text if opened.player_text is not None else opening.player_text
    source = fair_dice(story, opened.seed, opening.source)  # a fair story's dice come from its seed (gm.seeds)
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
    messages = game_master_messages(world, recall(store, story, number), turn, tools.clock)
    judged = story.settings.get("judge") != "off"
    return _Attempt(
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


def _admit(story: StoryState, waiting: dict[str, Any] | None) -> None:
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
        if not is_secret(stored, world):  # a secret roll's card is not streamed (gm.secret)
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


def _accept(
    store: Store, story_id: str, world: World, state: _Attempt, ending: Narration, regenerate: bool, holder: str
) -> RoundResult:
    """Write the accepted round, its rolls copied in as written, if `holder` holds the lease still (one transaction).

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
    store.accept_round(state.attempt_id, record, _bind(state.calls, story_id, state.attempt_id), holder=holder)
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


async def _tool_loop(
    store: Store,
    model: ChatModel,
    world: World,
    state: _Attempt,
    settings: RoundSettings,
    judge: Judge | None,
    pending: Sequence[ToolCall] = (),
) -> Narration:
    schemas = tool_schemas(world)
    if pending:  # a round taken up again: the rest of the answer it paused in comes first
        ending = await _step(store, world, state, settings, judge, pending, None)
        if ending is not None:
            return ending
    for _ in range(max(0, settings.max_model_calls - state.calls_before)):
        state.events("working", {"call": state.calls_before + len(state.calls) + 1})
        completion = await model.complete(state.messages, tools=schemas)
        state.calls.append(model_call_from(completion, "game_master"))
        if completion.finish_reason == "length":
            raise RoundFailed("the game master's answer was cut off before it ended the round; try again")
        state.messages.append(completion.raw_message)
        state.tools.next_message()  # every result sent so far has now been read; this message's are not yet
        ending = await _step(store, world, state, settings, judge, completion.tool_calls, completion.content)
        if ending is not None:
            return ending
    raise RoundFailed(f"the game master did not end the round within {settings.max_model_calls} model calls; try again")


async def _step(
    store: Store,
    world: World,
    state: _Attempt,
    settings: RoundSettings,
    judge: Judge | None,
    calls: Sequence[ToolCall],
    content: str | None,
) -> Narration | None:
    """Act on one answer of the game master (its tool calls, or its plain text): the ending, if it ended the round."""
    refusals_before = len(state.refusals)
    # Tool calls write rolls, so they are database work like the rest (see Store.off_loop).
    if calls:
        ending = await store.off_loop(_run_calls, list(calls), state.tools, state)
    else:
        ending = _plain_text(content, world, state.tools, state)
    if ending is not None and judge is not None and state.judged:
        ending = await _judged(ending, judge, world, state)
    if state.calls:
        state.calls[-1].refusals += len(state.refusals) - refusals_before
    for reason in state.refusals[refusals_before:]:
        state.events("refusal", {"reason": reason})
    if ending is not None:
        state.events("narration", {"text": ending.text})
        return ending
    if len(state.refusals) > settings.max_refusals:
        raise RoundFailed(
            f"the game master could not end the round in agreement with the dice after {len(state.refusals)} "
            "refusals; nothing was changed, try again"
        )
    return None


def _run_calls(calls: list[ToolCall], tools: RoundTools, state: _Attempt) -> Narration | None:
    """Run each tool call in order; every call gets its result message, even those after an ending.

    A tool that wants the model to try again raises `ModelRetry`: its sentence is the call's result,
    and it counts as one of the round's refusals. A check waiting for the player's dice (gm.table)
    pauses the round there: that call and those after it are kept to run when the faces come.
    """
    ending: Narration | None = None
    for index, call in enumerate(calls):
        content: dict[str, Any]
        if ending is not None:
            content = {"error": "the round already ended with narrate; this call was not run"}
        else:
            try:
                reply = tools.call(call.name, call.arguments)
                content, ending = reply.content, reply.ended
            except FacesNeeded as needed:
                raise _Paused(needed.question, calls[index:]) from None
            except ModelRetry as retry:
                content = {"error": str(retry)}
                state.refusals.append(str(retry))
            if ending is not None:
                state.narrate_reply = len(state.messages)  # the judge may yet turn this reply into a refusal
        state.messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)})
    return ending


async def _judged(ending: Narration, judge: Judge, world: World, state: _Attempt) -> Narration | None:
    """The ending if the judge reads its narration as telling every rolled outcome as rolled, else None.

    A refusal goes back to the model as narrate's result and counts toward the round's bound, as a
    referee's refusal does. Endings that settle no check roll are not judged, and cost no call.
    """
    rolls = {roll.id: roll for roll in state.tools.rolls if roll.kind == "check" and not roll.void}
    settled = [(outcome, rolls[outcome.roll]) for outcome in ending.outcomes if outcome.roll in rolls]
    if not settled:
        return ending
    asked = tuple(
        JudgedOutcome(outcome.character, _check_name(world, roll), str(roll.band), str(roll.result), roll.critical)
        for outcome, roll in settled
    )
    judgement = await judge.judge(JudgeRequest(ending.text, asked))
    for call in judgement.calls:
        record = model_call_from(call.completion, "judge")
        record.structured = call.mode
        state.calls.append(record)
    tellings = [
        Telling(o.character, o.check, o.band, cast(Result, o.result), verdict.told_as, verdict.quote)
        for o, verdict in zip(asked, judgement.verdicts)
    ]
    state.judgement = {
        "model": judgement.model,
        "verdicts": [{"character": v.character, "told_as": v.told_as, "quote": v.quote} for v in judgement.verdicts],
    }
    refusals = judge_refusals(tellings)
    if not refusals:
        return ending
    reasons = " ".join(f"({index}) {refusal.reason}." for index, refusal in enumerate(refusals, 1))
    refused = f"narrate was refused: {reasons} Call narrate again."
    state.refusals.append(refused)
    assert state.narrate_reply is not None  # only narrate settles rolls; plain text ends only unrolled rounds
    state.messages[state.narrate_reply]["content"] = json.dumps({"error": refused})
    state.judgement = None
    return None


def _check_name(world: World, roll: RollRecord) -> str:
    if world.rules is not None and roll.check_key in world.rules:
        return world.rules[str(roll.check_key)].name
    return str(roll.check_key)


def _plain_text(content: str | None, world: World, tools: RoundTools, state: _Attempt) -> Narration | None:
    """A plain answer ends a round in which no check was rolled; otherwise the model is told to narrate."""
    text = str(content or "").strip()
    if tools.checks_rolled:
        reason = PLAIN_TEXT_REFUSAL
    elif not text:
        reason = "Your answer was empty; narrate what happens."
    else:
        names = [character.name for character in world.characters]
        problems = referee([round_roll(roll) for roll in tools.rolls], [], text, names)
        if not problems:
            return Narration(text, ())
        reason = " ".join(problem.reason for problem in problems) + "; answer again."
    state.refusals.append(reason)
    state.messages.append(engine_message(reason))
    return None


def _bind(calls: list[ModelCall], story_id: str, attempt_id: str) -> list[ModelCall]:
    for call in calls:
        call.story_id, call.attempt_id = story_id, attempt_id
    return calls
