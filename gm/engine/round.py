"""One round, top to bottom: player text -> tool loop -> refereed outcome -> stored.

The story's lease is taken as the attempt opens, so no other round of it runs at once, and renewed
while the round runs (`gm.engine.lease`); the accepted round is written only if the lease is still held,
and lets it go. The game master is called with the world, the past and the player's text; its tool
calls are run in order, each roll written as it is rolled. The round ends when narrate is accepted
by the referee, or, in a round where no check was rolled, when the model answers in plain text.
Refusals and model calls are bounded; past either bound, or when the model's answer is cut off, the
round fails cleanly: its rolls stay (marked by their failed attempt), nothing else is written, and
the caller gets one sentence to show the player (whatever else stops a round ends its attempt the
same way: `gm.engine._failing`). What the attempt reads and writes, on the database's worker thread, is
`gm.engine._attempt`'s.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Sequence
from typing import Any, cast

from gm import dice
from gm.engine._attempt import (
    AttemptState,
    Opening,
    PlayerRoll,
    RoundEvents,
    RoundPaused,
    RoundResult,
    RoundSettings,
    accept,
    begin,
    bind,
    bind_secrets,
    ignore,
    paused_record,
    roll_writer,
)
from gm.engine._failing import end_failed
from gm.engine._model_calls import model_call_from
from gm.engine.judge import Judge
from gm.engine.lease import RoundLease
from gm.engine.paused import keep_paused
from gm.engine.prompt import JudgedOutcome, JudgeRequest, engine_message
from gm.engine.referee import Outcome, Result, Telling, judge_refusals, referee
from gm.engine.tools.running import DATABASE_TOOLS, Narration, RoundTools, round_roll, tool_schemas
from gm.engine.typed_dice import FacesNeeded
from gm.errors import ModelRetry, RoundFailed
from gm.models.client import ChatModel, ToolCall
from gm.store import RollRecord, Store
from gm.store._commit_groups import when_durable
from gm.store._rounds import NOTHING_TO_REGENERATE as NOTHING_TO_REGENERATE  # where the web API finds it
from gm.transcript.shapes import QuestionPublic
from gm.world.definition import World

__all__ = [
    "NOTHING_TO_REGENERATE",
    "PLAIN_TEXT_REFUSAL",
    "AttemptState",
    "PlayerRoll",
    "RoundEvents",
    "RoundPaused",
    "RoundResult",
    "RoundSettings",
    "bind_secrets",
    "ignore",
    "on_loop",
    "play_round",
    "roll_writer",
    "run_attempt",
]

DEFAULT_SETTINGS = RoundSettings()

PLAIN_TEXT_REFUSAL = (
    "You rolled a check this round, so end it by calling narrate with the narration and an outcome "
    "naming each roll; plain text cannot end this round."
)


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
    settings: RoundSettings = DEFAULT_SETTINGS,
    source: dice.DiceSource | None = None,
    facts: Sequence[str] = (),
    regenerate: bool = False,
    player_roll: PlayerRoll | None = None,
    events: RoundEvents | None = None,
    judge: Judge | None = None,
) -> RoundResult | RoundPaused:
    """Play one round of a story (or play its last round again, keeping its rolls, with `regenerate`).

    With a `judge`, a narration that settles a check roll is shown, stored or remembered only once
    the judge has read it as telling each rolled outcome's result (see `gm.engine.judge`), unless the story
    was started with `settings={"judge": "off"}`.

    In a story whose checks are rolled at the table (`settings={"dice_from": "player"}`, gm.engine.typed_dice), the
    round pauses at a check and a `RoundPaused` comes back with the question; `gm.engine._resume` goes on with it.

    Database work goes through `Store.off_loop` (worker threads on a database server, so one
    server's other stories go on meanwhile); the listener is always called on the event loop, in order.
    """
    tell = on_loop(events) if events is not None else ignore  # nobody listens: no event is even built
    lease = RoundLease(store, story_id, settings)  # taken as the attempt opens, renewed by a heartbeat
    opening = Opening(player_text, facts, regenerate, player_roll, source)
    state = await lease.open(begin, store, story_id, world, opening, tell, lease.claim)
    return await run_attempt(store, story_id, world, model, state, settings, judge, lease)


def on_loop(listener: RoundEvents) -> RoundEvents:
    """`listener`, called on the event loop in order, also when told from a worker thread."""
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()

    def tell(kind: str, data: dict[str, Any]) -> None:
        if threading.get_ident() == loop_thread:
            listener(kind, data)
        else:  # from a worker thread: hand it to the loop, where it keeps its place in line, once it is durable
            when_durable(functools.partial(loop.call_soon_threadsafe, listener, kind, data))

    return tell


async def run_attempt(
    store: Store,
    story_id: str,
    world: World,
    model: ChatModel,
    state: AttemptState,
    settings: RoundSettings,
    judge: Judge | None,
    lease: RoundLease,
    pending: Sequence[ToolCall] = (),
) -> RoundResult | RoundPaused:
    """Play an opened attempt (under `lease`) to its end: accepted, paused for dice, or failed; the lease is
    let go by the transaction that accepts or pauses it, or after a failure.

    `pending` are tool calls of the game master's last answer still to run, for a round taken up again.
    """

    # A partial, not a closure over `state`: the state would then hold itself, a cycle that only the garbage
    # collector frees, and a server's collections walked every round's state left over (bench/serve_bench.py).
    state.finish = functools.partial(_finish, store, story_id, world, lease)
    result: RoundResult | RoundPaused
    try:
        try:
            ending = await _tool_loop(store, model, world, state, settings, judge, pending)
        except _Paused as paused:
            kept = paused_record(story_id, state, paused.question, paused.pending)
            calls = bind(state.calls, story_id, state.attempt_id)
            lease.ending = True
            await store.off_loop(keep_paused, store, kept, calls, lease.holder)
            result = RoundPaused(story_id=story_id, asking=paused.question)
        else:  # accepted already if its last tool calls needed no judge (one hand-off fewer: `_run_calls`)
            result = state.accepted if state.accepted is not None else await store.off_loop(state.finish, state, ending)
    except BaseException as error:  # gave up, unreachable, a failed write, a bug: never left running
        calls = bind(state.calls, story_id, state.attempt_id)
        failed = await end_failed(store, state.attempt_id, calls, error)
        await lease.release()
        raise failed from None
    await lease.stop()
    return result


def _finish(
    store: Store, story_id: str, world: World, lease: RoundLease, state: AttemptState, ending: Narration
) -> RoundResult:
    """Accept the round (in the worker thread), letting the lease go."""
    lease.ending = True
    return accept(store, story_id, world, state, ending, state.regenerating, lease.holder)


async def _tool_loop(
    store: Store,
    model: ChatModel,
    world: World,
    state: AttemptState,
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
    state: AttemptState,
    settings: RoundSettings,
    judge: Judge | None,
    calls: Sequence[ToolCall],
    content: str | None,
) -> Narration | None:
    """Act on one answer of the game master (its tool calls, or its plain text): the ending, if it ended the round."""
    refusals_before = len(state.refusals)
    judging = judge is not None and state.judged
    # Tool calls that roll or reveal read and write the database, so they run in its worker thread (see
    # Store.off_loop); the others (narrate, advance_time) are pure, and run here, their accept its own hand-off.
    if any(call.name in DATABASE_TOOLS for call in calls):
        ending = await store.off_loop(_run_calls, list(calls), state.tools, state, judging)
    elif calls:
        ending = _run_calls(list(calls), state.tools, state, judging, accept=False)
    else:
        ending = _plain_text(content, world, state.tools, state)
    if state.accepted is None:  # else accepted with its tool calls: unjudged, its refusals counted (`_run_calls`)
        if ending is not None and judge is not None and judging:
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


def _run_calls(
    calls: list[ToolCall], tools: RoundTools, state: AttemptState, judging: bool, accept: bool = True
) -> Narration | None:
    """Run each tool call in order; every call gets its result message, even those after an ending.

    A tool that wants the model to try again raises `ModelRetry`: its sentence is the call's result,
    and it counts as one of the round's refusals. A check waiting for the player's dice (gm.engine.typed_dice)
    pauses the round there: that call and those after it are kept to run when the faces come.
    With `accept` (in the worker thread), an ending the judge need not read (`judging` off, or no check
    roll settled) is accepted here at once (`state.finish`), in the same hand-off, into `state.accepted`.
    """
    refusals_before = len(state.refusals)
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
    if accept and ending is not None and state.finish is not None and not (judging and _settled(ending, state)):
        if state.calls:
            state.calls[-1].refusals += len(state.refusals) - refusals_before
        state.accepted = state.finish(state, ending)
    return ending


def _settled(ending: Narration, state: AttemptState) -> list[tuple[Outcome, RollRecord]]:
    """The ending's outcomes that settle a check roll (not void), each with its roll: what the judge reads."""
    rolls = {roll.id: roll for roll in state.tools.rolls if roll.kind == "check" and not roll.void}
    return [(outcome, rolls[outcome.roll]) for outcome in ending.outcomes if outcome.roll in rolls]


async def _judged(ending: Narration, judge: Judge, world: World, state: AttemptState) -> Narration | None:
    """The ending if the judge reads its narration as telling every rolled outcome as rolled, else None.

    A refusal goes back to the model as narrate's result and counts toward the round's bound, as a
    referee's refusal does. Endings that settle no check roll are not judged, and cost no call.
    """
    settled = _settled(ending, state)
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


def _plain_text(content: str | None, world: World, tools: RoundTools, state: AttemptState) -> Narration | None:
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
