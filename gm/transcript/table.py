"""The public shapes of a shared table (gm.engine.table): a round's actions, its whispers, a seat, and the chain
of the messages seats sent, as the transcript and the API carry them. Pure: no I/O."""

from __future__ import annotations

from pydantic import BaseModel


class ActionPublic(BaseModel):
    """One seat's action in a round, as the game master was given it: the message of the table's chain it came
    from, the seat and its character, and, in a together round in combat, the initiative it was ordered by."""

    message: int
    seat: str | None = None
    character: str
    text: str
    initiative: int | None = None


class WhisperPublic(BaseModel):
    """What the game master whispered to one character: `text` is null for every viewer but that character's seat
    (the others see only that something was whispered)."""

    character: str
    text: str | None = None


class MessagePublic(BaseModel):
    """One link of the table's message chain (gm.transcript.chain.message_hash): who said what, in order."""

    seq: int
    seat: str | None = None
    character: str
    text: str
    round: int | None = None  # the round that settled it; null while it waits or when it was never played
    prev_hash: str
    hash: str


class SeatPublic(BaseModel):
    """A seat at the table, as its owner lists it (never its token)."""

    id: str
    character: str
    name: str = ""
    dice: str = "shown"
    created_at: str
    revoked_at: str | None = None


class TablePublic(BaseModel):
    """The table of a story with seats: how its rounds gather, and who is looking (`seat`, null for the owner)."""

    seats: list[str]  # the characters with a live seat
    seat: str | None = None  # the viewer's seat id
    character: str | None = None  # the viewer's character
