"""Going on with a round paused for the player's dice, in this process or any other (see gm.engine.typed_dice,
gm.engine.paused).

The faces are checked against the question first: a wrong answer is one sentence and changes nothing.
Then the story's lease is taken and the paused round taken up (its row deleted, its attempt running),
in one transaction, and the attempt rebuilt from the database as it was: the game master's messages
so far, the rolls it holds, the refusals and model calls it has spent. The check it paused at runs
again with the typed faces as its dice, so everything after (the band, the referee, the judge, the
chain) is as if the engine had rolled them; the roll is marked `typed`. The rest of that answer's
tool calls follow, then the tool loop as usual, which may pause again at the next check.
"""

from __future__ import annotations

import uuid

from gm import dice
from gm.engine._earlier_rolls import EarlierRolls
from gm.engine.judge import Judge
from gm.engine.lease import RoundLease
from gm.engine.paused import NOTHING_WAITING, drop_paused, paused_round, take_paused
from gm.engine.round import (
    AttemptState,
    RoundEvents,
    RoundPaused,
    RoundResult,
    RoundSettings,
    bind_secrets,
    ignore,
    on_loop,
    roll_writer,
    run_attempt,
)
from gm.engine.tools.running import RoundTools
from gm.engine.typed_dice import read_faces
from gm.errors import Conflict, StoryBusy
from gm.integrity.seeds import fair_dice
from gm.models.client import ChatModel, ToolCall
from gm.store import Store
from gm.store._stories import Claim
from gm.transcript.shapes import QuestionPublic
from gm.world.definition import World

ABANDON_LEASE_SECONDS = 30.0


async def continue_round(
    store: Store,
    story_id: str,
    world: World,
    model: ChatModel,
    faces_text: str,
    *,
    settings: RoundSettings | None = None,
    source: dice.DiceSource | None = None,
    events: RoundEvents | None = None,
    judge: Judge | None = None,
) -> RoundResult | RoundPaused:
    """Answer the story's paused round with the faces the player typed, and play the round on from there."""
    paused = await store.off_loop(paused_round, store, story_id)
    if paused is None:
        raise Conflict(NOTHING_WAITING)
    faces = read_faces(faces_text, QuestionPublic.model_validate(paused.question))  # WrongFaces: the question stands
    tell = on_loop(events) if events is not None else ignore
    settings = settings or RoundSettings()
    lease = RoundLease(store, story_id, settings)  # taken as the round is taken up, renewed by a heartbeat
    taken_up = (store, story_id, world, paused.attempt_id, faces, source, tell, lease.claim)
    state, pending = await lease.open(_taken_up, *taken_up)
    return await run_attempt(store, story_id, world, model, state, settings, judge, lease, pending)


def _taken_up(
    store: Store,
    story_id: str,
    world: World,
    attempt_id: str,
    faces: list[int],
    source: dice.DiceSource | None,
    tell: RoundEvents,
    lease: Claim,
) -> tuple[AttemptState, list[ToolCall]]:
    """The paused attempt rebuilt from the database (taking the lease), its check's faces ready to roll."""
    taken = take_paused(store, story_id, attempt_id, lease)  # one transaction: lease, taken up, all it is rebuilt from
    paused, rolls = taken.paused, taken.held
    retried = EarlierRolls(taken.others, _taken={roll.id for roll in rolls})
    rolling = fair_dice(taken.story, taken.seed, source)  # plain dice (roll_dice) are still the engine's
    tools = RoundTools(
        world,
        story_id,
        attempt_id,
        paused.round_number,
        roll_writer(store, world, rolling, tell),
        rolling,
        taken.earlier,
        rolls=rolls,
        retried=retried,
        clock=paused.clock,
        dice_from="player",
        typed_faces=faces,
    )
    tools.told = set(paused.told)  # what the game master had read before the answer it paused in
    bind_secrets(store, tools)
    state = AttemptState(
        list(paused.messages),
        attempt_id,
        paused.round_number,
        paused.player_text,
        tools,
        tell,
        refusals=list(paused.refusals),
        judged=paused.judged,
        calls_before=paused.model_calls,
        regenerating=paused.regenerating,
        unfinished=taken.unfinished,
    )
    pending = [ToolCall(call["id"], call["name"], call["arguments"]) for call in paused.pending]
    return state, pending


def abandon_round(store: Store, story_id: str) -> int:
    """Drop the story's round waiting for dice (its rolls stay in the story's chain); the round's number.

    Taken under the lease, as a reveal is, so it never lands while that round is being taken up again.
    A later attempt at the same round gets those rolls back (gm.engine._earlier_rolls): abandoning never re-rolls.
    """
    store.story(story_id)
    holder = uuid.uuid4().hex
    if not store.take_lease(story_id, holder, ABANDON_LEASE_SECONDS):
        raise StoryBusy("a round of this story is being played right now; abandon it when that round is done")
    try:
        return drop_paused(store, story_id)
    finally:
        store.release_lease(story_id, holder)
