"""One round, top to bottom: player text -> tool loop -> refereed outcome -> stored.

The story's lease is taken so no other round of it runs at once. The game master is called with the
world, the past and the player's text; its tool calls are run in order, each roll written as it is
rolled. The round ends when narrate is accepted by the referee, or, in a round where no check was
rolled, when the model answers in plain text. Refusals and model calls are bounded; past either
bound, or when the model's answer is cut off, the round fails cleanly: its rolls stay (marked by
their failed attempt), nothing else is written, and the caller gets one sentence to show the player.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gm import dice
from gm.memory import game_master_messages, recall
from gm.model import ChatModel, Completion, ModelError
from gm.referee import referee
from gm.store import ModelCall, RollRecord, RoundRecord, Store, Story, model_call_from
from gm.tools import Narration, RoundTools, round_roll, tool_schemas
from gm.world import World

# A listener told of the round as it happens: ("working", {"call": n}), ("roll", stored roll),
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
    lease_seconds: float = 300.0
    wait_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class RoundResult:
    """What a front end shows after a round: the narration, outcomes, rolls and the refusals seen."""

    story_id: str
    number: int
    player_text: str
    narration: str
    outcomes: list[dict[str, Any]]
    rolls: list[dict[str, Any]]
    refusals: list[str]
    model_calls: int
    regenerated: bool = False


@dataclass(frozen=True, slots=True)
class PlayerRoll:
    """Dice a player rolled with `/roll`: rolled at the start of the round and given to the game master as a fact."""

    expression: dice.Expression
    purpose: str = ""


class RoundFailed(Exception):
    """The round could not be played; the message is one sentence for the player. Rolls made are kept."""


class StoryBusy(RoundFailed):
    """Another round of this story is being played right now."""


@dataclass
class _Attempt:
    """The running state of one attempt: messages so far, refusals, model calls."""

    messages: list[dict[str, Any]]
    events: RoundEvents = _ignore
    refusals: list[str] = field(default_factory=list)
    calls: list[ModelCall] = field(default_factory=list)


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
) -> RoundResult:
    """Play one round of a story (or play its last round again, keeping its rolls, with `regenerate`)."""
    holder = uuid.uuid4().hex
    await _take_lease(store, story_id, holder, settings)
    try:
        story = store.story(story_id)  # read under the lease: the rounds played and the summary are current
        return await _play(
            store, story, world, model, player_text, settings, source, facts, regenerate, player_roll, events or _ignore
        )
    finally:
        store.release_lease(story_id, holder)


async def _take_lease(store: Store, story_id: str, holder: str, settings: RoundSettings) -> None:
    deadline = time.monotonic() + settings.wait_seconds
    while not store.take_lease(story_id, holder, settings.lease_seconds):
        if time.monotonic() >= deadline:
            raise StoryBusy("another round of this story is being played right now; try again when it is done")
        await asyncio.sleep(0.05)


async def _play(
    store: Store,
    story: Story,
    world: World,
    model: ChatModel,
    player_text: str,
    settings: RoundSettings,
    source: dice.DiceSource | None,
    facts: Sequence[str],
    regenerate: bool,
    player_roll: PlayerRoll | None,
    events: RoundEvents,
) -> RoundResult:
    earlier: list[RollRecord] = []
    if regenerate:
        last = store.round(story.id, story.rounds)
        if last is None:
            raise RoundFailed("there is no round to play again yet")
        player_text, number = last.player_text, last.number
        earlier = store.rolls_by_id([roll["id"] for roll in last.rolls])
    else:
        number = story.rounds + 1
    attempt = store.start_attempt(story.id, number, regenerating=regenerate)

    def write_roll(record: RollRecord) -> RollRecord:
        stored = store.record_roll(record)
        events("roll", _roll_json(stored))
        return stored

    tools = RoundTools(world, story.id, attempt.id, number, write_roll, source, earlier)
    facts = [*facts, *tools.replay_player_rolls()]
    if player_roll is not None:
        facts.append(tools.roll_for_player(player_roll.expression, player_roll.purpose))
    state = _Attempt(game_master_messages(world, recall(store, story, number), player_text, facts), events)
    try:
        ending = await _tool_loop(model, world, tools, state, settings)
    except (RoundFailed, ModelError) as error:
        store.fail_attempt(attempt.id, str(error), _bind(state.calls, story.id, attempt.id))
        raise RoundFailed(str(error)) from None
    rolls = [_roll_json(record) for record in store.rolls_by_id([record.id for record in tools.rolls if record.id])]
    outcomes = [{"character": o.character, "result": o.result, "roll": o.roll} for o in ending.outcomes]
    record = RoundRecord(
        story_id=story.id,
        number=number,
        attempt_id=attempt.id,
        player_text=player_text,
        narration=ending.text,
        outcomes=outcomes,
        rolls=rolls,
        refusals=state.refusals,
    )
    store.accept_round(attempt.id, record, _bind(state.calls, story.id, attempt.id))
    return RoundResult(
        story.id, number, player_text, ending.text, outcomes, rolls, state.refusals, len(state.calls), regenerate
    )


async def _tool_loop(
    model: ChatModel, world: World, tools: RoundTools, state: _Attempt, settings: RoundSettings
) -> Narration:
    schemas = tool_schemas(world)
    for _ in range(settings.max_model_calls):
        state.events("working", {"call": len(state.calls) + 1})
        completion = await model.complete(state.messages, tools=schemas)
        refusals_before = len(state.refusals)
        state.calls.append(model_call_from(completion, "game_master"))
        if completion.finish_reason == "length":
            raise RoundFailed("the game master's answer was cut off before it ended the round; try again")
        state.messages.append(completion.raw_message)
        ending = (
            _run_calls(completion, tools, state)
            if completion.tool_calls
            else _plain_text(completion, world, tools, state)
        )
        state.calls[-1].refusals = len(state.refusals) - refusals_before
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
    raise RoundFailed(f"the game master did not end the round within {settings.max_model_calls} model calls; try again")


def _run_calls(completion: Completion, tools: RoundTools, state: _Attempt) -> Narration | None:
    """Run each tool call in order; every call gets its result message, even those after an ending."""
    ending: Narration | None = None
    for call in completion.tool_calls:
        if ending is not None:
            content: dict[str, Any] = {"error": "the round already ended with narrate; this call was not run"}
        else:
            reply = tools.call(call.name, call.arguments)
            content, ending = reply.content, reply.ended
            if reply.counts_as_refusal:
                state.refusals.append(str(reply.content["error"]))
        state.messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)})
    return ending


def _plain_text(completion: Completion, world: World, tools: RoundTools, state: _Attempt) -> Narration | None:
    """A plain answer ends a round in which no check was rolled; otherwise the model is told to narrate."""
    text = str(completion.content or "").strip()
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
    state.messages.append({"role": "user", "content": f"[game engine] {reason}"})
    return None


def _bind(calls: list[ModelCall], story_id: str, attempt_id: str) -> list[ModelCall]:
    for call in calls:
        call.story_id, call.attempt_id = story_id, attempt_id
    return calls


def _roll_json(record: RollRecord) -> dict[str, Any]:
    """A stored roll as the round keeps it: copied by code, with the number, for the transcript."""
    return record.model_dump(mode="json", exclude={"story_id", "created_at"})
