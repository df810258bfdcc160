"""The shared table's routes (docs/table.md): the owner invites players to seats and revokes them, a seat reads
and sets its own, and anyone at the table sees how the round gathers; the owner (or, once its timer has run out,
any seat) closes it. A seat's messages go through the story's own message routes (gm.web.api, gm.web._seated).
"""

from __future__ import annotations

import functools
import secrets

from fastapi import APIRouter

from gm.errors import Conflict, UsageError
from gm.store import SeatRecord
from gm.transcript.shapes import as_utc
from gm.transcript.table import SeatPublic
from gm.web._seated import close_round, gathering_of, may_close, round_for
from gm.web.api import ServiceDep, TokenDep, played
from gm.web.schemas import GatheringOut, InvitedOut, PlayedOut, SeatIn, SeatSettingsIn, errors
from gm.web.service import Service, hash_token

router = APIRouter(prefix="/api")
NO_SEAT = "the story's own token holds no seat; a seat's token reads its seat"


def seat_public(seat: SeatRecord) -> SeatPublic:
    return SeatPublic(
        id=seat.id,
        character=seat.character,
        name=seat.name,
        dice=seat.dice,
        created_at=as_utc(seat.created_at).isoformat(),
        revoked_at=as_utc(seat.revoked_at).isoformat() if seat.revoked_at is not None else None,
    )


@router.post("/stories/{story_id}/seats", status_code=201, responses=errors(401, 403, 404, 409, 422))
async def invite(story_id: str, body: SeatIn, app: ServiceDep, token: TokenDep) -> InvitedOut:
    """Invite a player to one of the story's player characters: the seat's token is shown this once (stored only
    as a hash); `invite` is the play page's link for it. 409 while that character has a live seat."""
    await app.check_token(story_id, token)
    world = await app.game.world_of(story_id)
    players = [character.name for character in world.players]
    if body.character not in players:
        raise UsageError(f"'{body.character}' is not a player character of this story; they are {', '.join(players)}")
    seat_token = secrets.token_urlsafe(32)
    seat = await app.game.store.off_loop(
        app.game.store.create_seat, story_id, body.character, hash_token(seat_token), body.name
    )
    return InvitedOut(seat=seat_public(seat), token=seat_token, invite=f"/play/{story_id}#token={seat_token}")


@router.get("/stories/{story_id}/seats", responses=errors(401, 403, 404))
async def list_seats(story_id: str, app: ServiceDep, token: TokenDep) -> list[SeatPublic]:
    """The story's seats, revoked ones too (never their tokens)."""
    await app.check_token(story_id, token)
    return [seat_public(seat) for seat in await app.game.store.off_loop(app.game.store.seats, story_id)]


@router.delete("/stories/{story_id}/seats/{seat_id}", status_code=204, responses=errors(401, 403, 404))
async def revoke(story_id: str, seat_id: str, app: ServiceDep, token: TokenDep) -> None:
    """Revoke a seat: its token opens nothing from now on, and its action waiting for a round is dropped."""
    await app.check_token(story_id, token)
    await app.game.store.off_loop(app.game.store.revoke_seat, story_id, seat_id)


@router.get("/stories/{story_id}/seat", responses=errors(401, 404, 409))
async def my_seat(story_id: str, app: ServiceDep, token: TokenDep) -> SeatPublic:
    """The seat the token opens (409 for the story's own token, which holds none)."""
    return seat_public(await _own_seat(app, story_id, token))


@router.put("/stories/{story_id}/seat", responses=errors(401, 404, 409, 422))
async def set_my_seat(story_id: str, body: SeatSettingsIn, app: ServiceDep, token: TokenDep) -> SeatPublic:
    """A seat's own Dice setting: the cards shown or hidden for this seat only."""
    seat = await _own_seat(app, story_id, token)
    return seat_public(await app.game.store.off_loop(app.game.store.set_seat_dice, seat.id, body.dice))


async def _own_seat(app: Service, story_id: str, token: str | None) -> SeatRecord:
    viewer = await app.viewer(story_id, token)
    if viewer.seat is None:
        raise Conflict(NO_SEAT)
    seats = await app.game.store.off_loop(functools.partial(app.game.store.seats, story_id, live=True))
    return next(seat for seat in seats if seat.id == viewer.seat)


@router.get("/stories/{story_id}/round", responses=errors(401, 404))
async def gathering(story_id: str, app: ServiceDep, token: TokenDep) -> GatheringOut:
    """How the next round gathers: who has acted, who it waits for, and when it may be closed (never the actions'
    words before the round is played)."""
    await app.viewer(story_id, token)
    return await app.game.store.off_loop(gathering_of, app, story_id)


@router.post("/stories/{story_id}/round/close", responses=errors(401, 403, 404, 409, 502))
async def close(story_id: str, app: ServiceDep, token: TokenDep) -> PlayedOut:
    """Play the gathered actions as one round now: the owner at any time, a seat once the round's timer has run out
    (409 when no action waits)."""
    viewer = await app.viewer(story_id, token)
    may_close(await app.game.store.off_loop(gathering_of, app, story_id), viewer)
    return played(round_for(await close_round(app, story_id), viewer), None)
