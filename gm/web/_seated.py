"""What a seat's message does (docs/table.md): a round of its own in a free story, an action gathered for the
next round in a together story, which is played when every seated player has acted, when the owner closes it,
or when its timer runs out (any seat may close it then; this process also closes it by itself).

The store keeps the seats and their chained messages (gm.store._seats); the engine plays the round
(gm.engine.table); this module only gathers. Two closers at once: one plays the round, the other finds the story
busy and answers with the gathering as it stands (its action, written first, is in the round or the next one).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from gm.engine.commands import RollDice, Say, Simple, parse_command
from gm.engine.results import RoundEvents, RoundPaused, RoundResult
from gm.engine.table import OWNER, TableAction, TableTurn, Viewer, view_round
from gm.errors import CommandError, Conflict, Forbidden, RoundWaiting, StoryBusy, UsageError
from gm.integrity.secret import refuse_if_ended
from gm.store import SeatRecord, Story, TableMessage, waiting_sentence
from gm.transcript.shapes import as_utc
from gm.web.schemas import GatheringOut
from gm.web.service import Service

log = logging.getLogger(__name__)
_closers: set[asyncio.Task[Any]] = set()  # rounds this process closes when their timer runs out
NOTHING_GATHERED = "no action waits for a round yet"


async def play_seated(
    app: Service, story_id: str, text: str, events: RoundEvents | None, viewer: Viewer
) -> RoundResult | RoundPaused | GatheringOut:
    """A seat's message: checked, written to the table's chain, then played (free) or gathered (together)."""
    store = app.game.store
    command = parse_command(text)
    if command is None:
        raise UsageError("the message is empty")
    if isinstance(command, Simple):
        raise Forbidden(f"/{command.name} is the story owner's; a seat sends its character's words or /roll")
    if not isinstance(command, RollDice | Say):
        raise UsageError("change your Dice setting with PUT /api/stories/{id}/seat")
    story, seat = await store.off_loop(_ready, app, story_id, viewer)
    together = story.settings.get("rounds") == "together"
    write = functools.partial(store.add_message, story_id, seat, seat.character, text, gathered=together)
    message = await store.off_loop(write)
    if not together:
        turn = TableTurn((action_of(message),), seated=viewer.seated)
        return round_for(await app.game.play(story_id, "", table=turn, events=events), viewer)
    gathering = await store.off_loop(gathering_of, app, story_id)
    if not gathering.waiting_for:  # every seated player has acted: this request plays the round
        try:
            return round_for(await close_round(app, story_id, events), viewer)
        except StoryBusy:  # another request is closing it: the action is in that round or the next
            return await store.off_loop(gathering_of, app, story_id)
    _close_at_deadline(app, story_id, gathering)
    return gathering


def _ready(app: Service, story_id: str, viewer: Viewer) -> tuple[Story, SeatRecord]:
    """The story and the seat, if a message of the seat's may be written now (no dice awaited, not ended)."""
    store = app.game.store
    story = store.story(story_id)
    refuse_if_ended(story)
    if (question := store.question(story_id)) is not None:
        raise RoundWaiting(waiting_sentence(question))
    seat = next((seat for seat in store.seats(story_id, live=True) if seat.id == viewer.seat), None)
    if seat is None:
        raise Forbidden("this seat was revoked")
    return story, seat


def action_of(message: TableMessage) -> TableAction:
    """A message of the chain as a round's action: its `/roll`, if any, rolled for its character."""
    roll = None
    try:
        command = parse_command(message.text)
    except CommandError:  # checked when it was sent; a message stored otherwise is played as words
        command = None
    if isinstance(command, RollDice):
        roll = command.roll
    text = command.text if isinstance(command, RollDice | Say) else message.text
    return TableAction(message.seq, message.seat_id, message.character, text, roll)


async def close_round(app: Service, story_id: str, events: RoundEvents | None = None) -> RoundResult | RoundPaused:
    """Play the gathered actions as one together round now (`Conflict` if none waits)."""
    store = app.game.store
    story, gathered, seated = await store.off_loop(_gathered, app, story_id)
    if not gathered:
        raise Conflict(NOTHING_GATHERED)
    combat = bool(story.settings.get("combat"))
    turn = TableTurn(tuple(action_of(m) for m in gathered), together=True, combat=combat, seated=seated)
    return await app.game.play(story_id, "", table=turn, events=events)


def _gathered(app: Service, story_id: str) -> tuple[Story, list[TableMessage], frozenset[str]]:
    store = app.game.store
    return store.story(story_id), store.gathered(story_id), app.seated(story_id)


def gathering_of(app: Service, story_id: str) -> GatheringOut:
    """The round as it gathers: who has acted, who it waits for, and its deadline (with a timer)."""
    store = app.game.store
    story = store.story(story_id)
    gathered = store.gathered(story_id)
    acted = list(dict.fromkeys(message.character for message in gathered))
    waiting = sorted(app.seated(story_id) - set(acted))
    deadline = None
    timer = int(story.settings.get("round_timer") or 0)
    if timer and gathered:
        deadline = (as_utc(gathered[0].created_at) + timedelta(seconds=timer)).isoformat()
    mode: Literal["free", "together"] = "together" if story.settings.get("rounds") == "together" else "free"
    return GatheringOut(mode=mode, acted=acted, waiting_for=waiting, deadline=deadline)


def may_close(gathering: GatheringOut, viewer: Viewer) -> None:
    """The owner may close a round at any time; a seat only once its deadline has passed."""
    if viewer.is_owner:
        return
    if gathering.deadline is None or datetime.fromisoformat(gathering.deadline) > datetime.now(UTC):
        raise Forbidden("only the story's owner may close the round before its timer runs out")


def round_for(result: RoundResult | RoundPaused, viewer: Viewer) -> RoundResult | RoundPaused:
    """The round as this seat may read it: another seat's whisper without its text (docs/table.md)."""
    if isinstance(result, RoundPaused) or not result.whispers or (viewer is OWNER and not viewer.seated):
        return result
    viewed = view_round(result, viewer, set())
    assert isinstance(viewed, RoundResult)
    return viewed


def _close_at_deadline(app: Service, story_id: str, gathering: GatheringOut) -> None:
    """Close the round when its timer runs out, in this process (any seat or the owner may close it too)."""
    if gathering.deadline is None:
        return
    delay = max(0.0, (datetime.fromisoformat(gathering.deadline) - datetime.now(UTC)).total_seconds())

    async def close() -> None:
        await asyncio.sleep(delay)
        try:
            await close_round(app, story_id)
        except (Conflict, StoryBusy):  # played meanwhile, or being played
            pass
        except Exception:  # a failed round: its actions wait for the next close
            log.warning("the timed close of story %s's round failed", story_id, exc_info=True)

    task = asyncio.get_running_loop().create_task(close())
    _closers.add(task)
    task.add_done_callback(_closers.discard)
