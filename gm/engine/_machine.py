"""One round as a state machine: open -> ask the model -> run tools -> referee -> judge -> accept | pause | fail.

Each state is a node: a small dataclass whose `run` does one step and returns the next node, or the
round's end (as pydantic-ai's graph runs `UserPromptNode`, `ModelRequestNode` and `CallToolsNode`).

    Open        take the story's lease, open the attempt, read the past, write the prompt -> AskModel
    TakeUp      take a round paused for the player's dice up again, with the faces typed -> RunTools(pending)
    AskModel    call the game master, within the round's bounds -> RunTools | ReadAnswer
    RunTools    run an answer's tool calls in order -> Referee (at narrate) | Pause (at a check the player
                rolls) | AskModel (every call run)
    ReadAnswer  a plain answer ends only a round no check settled -> Referee | AskModel
    Referee     rule on the proposed ending against the rolls -> Judge | SheetJudge | Accept | RunTools | AskModel
    Judge       read the narration the player will read -> SheetJudge | Accept | RunTools(rest) | AskModel
    SheetJudge  read it against a round's sheet changes, if it made any -> Accept | RunTools(rest) | AskModel
    Accept      write the round, and let the lease go (the end: a `RoundResult`)
    Pause       keep the round for the player's dice, and let the lease go (the end: a `RoundPaused`)

Fail is what any other end is: an error out of any node (the bounds passed, a model unreachable, a lost
lease, a database that refuses a write, a bug) marks the attempt failed with its model calls (its rolls
stay), lets the lease go, and reaches the caller as a `GmError` with one sentence. A refusal - the
referee's, the judge's, a tool's, a plain answer's - goes back to the model, and is counted in one
place (`AttemptState.refuse`); the round fails once refusals pass `RoundSettings.max_refusals`.

Each tool declares where it runs (gm.engine.tools.running.TOOLS): an answer's calls up to narrate run
on the database's worker thread in one hand-off when any of them needs it, on the event loop otherwise.
The lease (gm.engine.lease) is taken by the transaction that opens the attempt, renewed while the round
runs, and let go by the transaction that accepts or pauses it, or after a failure.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from gm import dice
from gm.engine._attempt import (
    AttemptState,
    Opening,
    accept,
    bind,
    opened_state,
    paused_record,
    pending_calls,
    taken_up_state,
)
from gm.engine._failing import failed_attempt
from gm.engine._in_flight import ROUND
from gm.engine._model_calls import judge_call, model_call_from
from gm.engine.judge import Judge as NarrationJudge
from gm.engine.judge import check_name
from gm.engine.lease import RoundLease
from gm.engine.memory import PAST_WINDOW
from gm.engine.observe import observer
from gm.engine.prompt import JudgedOutcome, JudgeRequest, engine_message
from gm.engine.referee import Outcome, Result, Telling, judge_refusals
from gm.engine.results import RoundEvents, RoundPaused, RoundResult
from gm.engine.settings import RoundSettings
from gm.engine.sheet_judge import judge_sheet, needs_judging
from gm.engine.tools.offered import tool_schemas
from gm.engine.tools.running import MAX_TOOL_CALLS, Narration, needs_database
from gm.engine.tools.whisper import whisper_schema
from gm.engine.typed_dice import FacesNeeded
from gm.errors import ModelRetry, RoundFailed
from gm.models.client import ChatModel
from gm.models.completion import ToolCall
from gm.store import RollRecord, Store
from gm.transcript.shapes import QuestionPublic
from gm.world.definition import World

log = logging.getLogger(__name__)

PLAIN_TEXT_REFUSAL = "You rolled a check this round, so end it by calling narrate with the narration and an outcome "
PLAIN_TEXT_REFUSAL += "naming each roll; plain text cannot end this round."
NOT_RUN = "the round already ended with narrate; this call was not run"


@dataclass
class Round:
    """What every node of one round reads: the story, its world, the models, the bounds and the lease; and,
    once the attempt is open, its running state."""

    store: Store
    story_id: str
    world: World
    model: ChatModel
    settings: RoundSettings
    judge: NarrationJudge | None
    lease: RoundLease
    events: RoundEvents
    state: AttemptState | None = None

    @property
    def attempt(self) -> AttemptState:
        assert self.state is not None  # every node after Open or TakeUp
        return self.state


@dataclass(frozen=True, slots=True)
class End:
    """The round's end: accepted, or paused for the player's dice."""

    value: RoundResult | RoundPaused


async def run(start: Node, round: Round) -> RoundResult | RoundPaused:
    """Run the round from `start` to its end; whatever stops it on the way fails it cleanly (see the module)."""
    node: Node | End = start
    try:
        while not isinstance(node, End):
            node = await node.run(round)
    except BaseException as error:
        if round.state is None:  # nothing opened: the lease, if taken, was let go as the opening failed
            raise
        failed = await failed_attempt(round.store, round.story_id, round.attempt, error)
        await round.lease.release()
        observer().round_ended("failed", failed)
        raise failed from None
    await round.lease.stop()
    observer().round_ended("paused" if isinstance(node.value, RoundPaused) else "accepted")
    return node.value


@dataclass(frozen=True, slots=True)
class Open:
    """Open a fresh attempt at the round, under the story's lease: everything up to its first model call."""

    opening: Opening

    async def run(self, round: Round) -> Node:
        round.state = await round.lease.open(_open, round, self.opening)
        _where(round.state)
        return AskModel()


def _open(round: Round, opening: Opening) -> AttemptState:
    """The attempt opened (one transaction, taking the lease first) and its state built: on the database thread,
    since the player's own roll, if any, is written as it is rolled."""
    read = round.store.open_attempt(
        round.story_id, regenerate=opening.regenerate, lease=round.lease.claim, past=PAST_WINDOW
    )
    return opened_state(round.store, round.world, opening, read, round.events)


@dataclass(frozen=True, slots=True)
class TakeUp:
    """Take a round paused for the player's dice up again, in any process: the check it paused at rolls the
    typed `faces`, then the rest of the answer it paused in runs."""

    attempt_id: str
    faces: list[int]
    source: dice.DiceSource | None

    async def run(self, round: Round) -> Node:
        state, pending = await round.lease.open(_take_up, round, self)
        round.state = state
        _where(state)
        return RunTools(pending)


def _where(state: AttemptState) -> None:
    """The round's number, for log lines written while it runs (gm.engine._in_flight.ROUND)."""
    if (where := ROUND.get()) is not None:
        where["round"] = state.number


def _take_up(round: Round, taking: TakeUp) -> tuple[AttemptState, list[ToolCall]]:
    taken = round.store.take_paused(round.story_id, taking.attempt_id, round.lease.claim)
    state = taken_up_state(round.store, round.world, taken, taking.faces, taking.source, round.events)
    return state, pending_calls(taken.paused)


@dataclass(frozen=True, slots=True)
class AskModel:
    """Call the game master with the messages so far; the round fails past its bounds, or if the answer is cut."""

    async def run(self, round: Round) -> Node:
        state, settings = round.attempt, round.settings
        if len(state.refusals) > settings.max_refusals:
            raise RoundFailed(
                f"the game master could not end the round in agreement with the dice after {len(state.refusals)} "
                "refusals; nothing was changed, try again"
            )
        if state.calls_before + state.asked >= settings.max_model_calls:
            raise RoundFailed(
                f"the game master did not end the round within {settings.max_model_calls} model calls; try again"
            )
        state.events("working", {"call": state.model_calls + 1})
        tools = tool_schemas(round.world)
        if state.tools.seated:  # a shared table: the game master may whisper to a seated character
            tools = [*tools, whisper_schema(sorted(state.tools.seated))]
        completion = await round.model.complete(state.messages, tools=tools)
        state.calls.append(model_call_from(completion, "game_master"))
        state.asked += 1
        if completion.finish_reason == "length":
            raise RoundFailed("the game master's answer was cut off before it ended the round; try again")
        if len(completion.tool_calls) > MAX_TOOL_CALLS:
            # None of them runs, and the message is not kept: answering each call would make the next request
            # as big as this answer. The model is told, as a refusal it can act on.
            reason = (
                f"Your message made {len(completion.tool_calls):,} tool calls; at most {MAX_TOOL_CALLS} are run from"
                " one message, and none of these was. Call the tools again, fewer at a time."
            )
            state.refuse(reason)
            state.messages.append(engine_message(reason))
            return AskModel()
        state.messages.append(completion.raw_message)
        state.tools.next_message()  # every result sent so far has now been read; this message's are not yet
        if completion.tool_calls:
            return RunTools(completion.tool_calls)
        return ReadAnswer(completion.content)


@dataclass(frozen=True, slots=True)
class RunTools:
    """Run tool calls in order, each answered with its result; narrate's proposed ending goes to the referee."""

    calls: Sequence[ToolCall]

    async def run(self, round: Round) -> Node:
        if needs_database(call.name for call in self.calls):
            return await round.store.off_loop(self.run_calls, round)
        return self.run_calls(round)

    def run_calls(self, round: Round) -> Node:
        state = round.attempt
        for index, call in enumerate(self.calls):
            try:
                reply = state.tools.call(call.name, call.arguments)
            except FacesNeeded as needed:  # a check the player rolls: the round pauses here
                return Pause(needed.question, list(self.calls[index:]))
            except ModelRetry as retry:
                state.refuse(str(retry))
                observer().refused("tool")
                _answer(state, call, {"error": str(retry)})
                continue
            if reply.proposed is not None:
                return Referee(reply.proposed, call, tuple(self.calls[index + 1 :]))
            _answer(state, call, reply.content)
        return AskModel()


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    """A plain answer: it ends a round in which no check settled anything; otherwise the model is told to narrate."""

    content: str | None

    async def run(self, round: Round) -> Node:
        state, text = round.attempt, str(self.content or "").strip()
        if state.tools.checks_rolled:
            reason = PLAIN_TEXT_REFUSAL
        elif not text:
            reason = "Your answer was empty; narrate what happens."
        else:
            return Referee(Narration(text, ()), None, ())
        state.refuse(reason)
        observer().refused("plain_answer")
        state.messages.append(engine_message(reason))
        return AskModel()


@dataclass(frozen=True, slots=True)
class Referee:
    """Rule on a proposed ending (narrate's, or a plain answer's) against the round's rolls: pure, no I/O.

    `call` is narrate's call (None for a plain answer), answered here or by the judge; `rest` are the calls
    after it in the same answer, run only if the ending is refused."""

    ending: Narration
    call: ToolCall | None
    rest: tuple[ToolCall, ...]

    async def run(self, round: Round) -> Node:
        state = round.attempt
        refusals = state.tools.refusals(self.ending)
        if refusals:
            if self.call is None:
                return _refused(round, " ".join(r.reason for r in refusals) + "; answer again.", None, (), "referee")
            reasons = " ".join(f"({index}) {refusal.reason}." for index, refusal in enumerate(refusals, 1))
            refused = f"narrate was refused: {reasons} Call narrate again."
            return _refused(round, refused, self.call, self.rest, "referee")
        settled = _settled(self.ending, state)
        if settled and round.judge is not None and state.judged:
            return Judge(self.ending, self.call, self.rest, tuple(settled))
        return _sheet_or_accept(round, self.ending, self.call, self.rest)


@dataclass(frozen=True, slots=True)
class Judge:
    """Read the narration the player will read: it must tell each rolled outcome as rolled (gm.engine.judge)."""

    ending: Narration
    call: ToolCall | None
    rest: tuple[ToolCall, ...]
    settled: tuple[tuple[Outcome, RollRecord], ...]

    async def run(self, round: Round) -> Node:
        state, world = round.attempt, round.world
        assert round.judge is not None
        asked = tuple(
            JudgedOutcome(outcome.character, check_name(world, roll), str(roll.band), str(roll.result), roll.critical)
            for outcome, roll in self.settled
        )
        judgement = await round.judge.judge(JudgeRequest(self.ending.text, asked))
        state.calls += [judge_call(call) for call in judgement.calls]
        tellings = [
            Telling(o.character, o.check, o.band, cast(Result, o.result), verdict.told_as, verdict.quote)
            for o, verdict in zip(asked, judgement.verdicts)
        ]
        for telling in tellings:
            observer().judged(str(telling.told_as), telling.told_as == telling.result)
        refusals = judge_refusals(tellings)
        if refusals:
            reasons = " ".join(f"({index}) {refusal.reason}." for index, refusal in enumerate(refusals, 1))
            return _refused(round, f"narrate was refused: {reasons} Call narrate again.", self.call, self.rest, "judge")
        state.judgement = {
            "model": judgement.model,
            "verdicts": [
                {"character": v.character, "told_as": v.told_as, "quote": v.quote} for v in judgement.verdicts
            ],
        }
        return _sheet_or_accept(round, self.ending, self.call, self.rest)


@dataclass(frozen=True, slots=True)
class SheetJudge:
    """Read the narration against the round's sheet changes: each one told, none invented (gm.engine.sheet_judge)."""

    ending: Narration
    call: ToolCall | None
    rest: tuple[ToolCall, ...]

    async def run(self, round: Round) -> Node:
        state = round.attempt
        assert round.judge is not None and state.tools.sheet is not None
        judged = await judge_sheet(round.judge, state.tools.sheet, self.ending.text)
        state.calls += [judge_call(call, "sheet_judge") for call in judged.calls]
        if judged.refusals:
            reasons = " ".join(f"({index}) {reason}." for index, reason in enumerate(judged.refusals, 1))
            refused = f"narrate was refused: {reasons} Call narrate again."
            return _refused(round, refused, self.call, self.rest, "sheet_judge")
        return _accepted(round, self.ending, self.call, self.rest)


def _sheet_or_accept(round: Round, ending: Narration, call: ToolCall | None, rest: tuple[ToolCall, ...]) -> Node:
    """The sheet judge next, for a judged round that changed a sheet or names one; otherwise the ending is accepted."""
    if round.judge is not None and round.attempt.judged and needs_judging(round.attempt.tools.sheet, ending.text):
        return SheetJudge(ending, call, rest)
    return _accepted(round, ending, call, rest)


@dataclass(frozen=True, slots=True)
class Accept:
    """Write the accepted round, fenced on the lease, which the same transaction lets go."""

    ending: Narration

    async def run(self, round: Round) -> End:
        round.lease.ending = True
        work = (accept, round.store, round.story_id, round.world, round.attempt, self.ending, round.lease.holder)
        return End(await round.store.off_loop(*work))


@dataclass(frozen=True, slots=True)
class Pause:
    """Keep the round for the player's dice: the calls from the check it paused at on are run when they come."""

    question: QuestionPublic
    pending: list[ToolCall] = field(default_factory=list)

    async def run(self, round: Round) -> End:
        state = round.attempt
        kept = paused_record(round.story_id, state, self.question, self.pending)
        calls = bind(state.calls, round.story_id, state.attempt_id)
        round.lease.ending = True
        await round.store.off_loop(round.store.keep_paused, kept, calls, round.lease.holder)
        return End(RoundPaused(story_id=round.story_id, asking=self.question))


Node = Open | TakeUp | AskModel | RunTools | ReadAnswer | Referee | Judge | SheetJudge | Accept | Pause


def _answer(state: AttemptState, call: ToolCall, content: dict[str, Any]) -> None:
    """Answer one tool call, in the order the calls came."""
    state.messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)})


def _refused(round: Round, reason: str, call: ToolCall | None, rest: tuple[ToolCall, ...], kind: str) -> Node:
    """The proposed ending refused (by the `referee` or the `judge`): the reason is narrate's answer (or, for a
    plain answer, the engine's note), and the calls after narrate run; then the model is asked again."""
    state = round.attempt
    state.refuse(reason)
    observer().refused(kind)
    if call is not None:
        _answer(state, call, {"error": reason})
    else:
        state.messages.append(engine_message(reason))
    return RunTools(rest) if rest else AskModel()


def _accepted(round: Round, ending: Narration, call: ToolCall | None, rest: tuple[ToolCall, ...]) -> Node:
    """The ending stands: narrate is answered, the calls after it are not run, and the round is accepted."""
    state = round.attempt
    if call is not None:
        _answer(state, call, {"accepted": True})
        for later in rest:
            _answer(state, later, {"error": NOT_RUN})
    state.events("narration", {"text": ending.text})
    return Accept(ending)


def _settled(ending: Narration, state: AttemptState) -> list[tuple[Outcome, RollRecord]]:
    """The ending's outcomes that settle a check roll (not void), each with its roll: what the judge reads."""
    rolls = {roll.id: roll for roll in state.tools.rolls if roll.kind == "check" and not roll.void}
    return [(outcome, rolls[outcome.roll]) for outcome in ending.outcomes if outcome.roll in rolls]
