"""One round of a story, top to bottom: the player's text in, a refereed, judged and stored round out.

`play_round` plays a round (or its last round again, keeping its rolls); `continue_round` goes on with a
round paused for the player's dice, in this process or any other. Both run the round's state machine
(gm.engine._machine: open -> ask the model -> run tools -> referee -> judge -> accept | pause | fail).
The story's lease is taken as the attempt opens, so no other round of it runs at once, and renewed
while the round runs (gm.engine.lease). Refusals and model calls are bounded; past either bound, or
when the model's answer is cut off, the round fails cleanly: its rolls stay (marked by their failed
attempt), nothing else is written, and the caller gets one sentence to show the player.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Sequence
from typing import Any

from gm import dice
from gm.engine._attempt import Opening
from gm.engine._machine import Open, Round, TakeUp, run
from gm.engine.judge import Judge
from gm.engine.lease import RoundLease
from gm.engine.results import PlayerRoll, RoundEvents, RoundPaused, RoundResult, ignore
from gm.engine.settings import RoundSettings
from gm.engine.table import TableTurn
from gm.engine.typed_dice import read_faces
from gm.errors import Conflict
from gm.models.client import ChatModel
from gm.store import NOTHING_WAITING, Store, when_durable
from gm.transcript.shapes import QuestionPublic
from gm.world.definition import World

__all__ = ["PlayerRoll", "RoundEvents", "RoundPaused", "RoundResult", "RoundSettings", "continue_round", "play_round"]

DEFAULT_SETTINGS = RoundSettings()


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
    table: TableTurn | None = None,
) -> RoundResult | RoundPaused:
    """Play one round of a story (or play its last round again, keeping its rolls, with `regenerate`).

    With a `judge`, a narration that settles a check roll is shown, stored or remembered only once
    the judge has read it as telling each rolled outcome's result (see `gm.engine.judge`), unless the story
    was started with `settings={"judge": "off"}`.

    In a story whose checks are rolled at the table (`settings={"dice_from": "player"}`, gm.engine.typed_dice),
    the round pauses at a check and a `RoundPaused` comes back with the question; `continue_round` goes on.

    Database work goes through `Store.off_loop` (worker threads on a database server, so one server's
    other stories go on meanwhile); the listener is always called on the event loop, in order.
    """
    round = _round(store, story_id, world, model, settings, judge, events)
    return await run(Open(Opening(player_text, facts, regenerate, player_roll, source, table)), round)


async def continue_round(
    store: Store,
    story_id: str,
    world: World,
    model: ChatModel,
    faces_text: str,
    *,
    settings: RoundSettings = DEFAULT_SETTINGS,
    source: dice.DiceSource | None = None,
    events: RoundEvents | None = None,
    judge: Judge | None = None,
) -> RoundResult | RoundPaused:
    """Answer the story's paused round with the faces the player typed, and play the round on from there.

    The faces are checked against the question first: a wrong answer is `WrongFaces` (one sentence) and
    changes nothing. The round then goes on exactly as if the engine had rolled them (the same band,
    referee and judge; the roll marked `typed`), and may pause again at a later check.
    """
    paused = await store.off_loop(store.paused_round, story_id)
    if paused is None:
        raise Conflict(NOTHING_WAITING)
    faces = read_faces(faces_text, QuestionPublic.model_validate(paused.question))
    round = _round(store, story_id, world, model, settings, judge, events)
    return await run(TakeUp(paused.attempt_id, faces, source), round)


def _round(
    store: Store,
    story_id: str,
    world: World,
    model: ChatModel,
    settings: RoundSettings,
    judge: Judge | None,
    events: RoundEvents | None,
) -> Round:
    tell = on_loop(events) if events is not None else ignore  # nobody listens: no event is even built
    lease = RoundLease(store, story_id, settings)  # taken as the attempt opens, renewed by a heartbeat
    return Round(store, story_id, world, model, settings, judge, lease, tell)


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
