"""The store's table: seats at a story (one player character each, opened by its own token) and the messages
seats send, each a link of the story's message chain (gm.integrity.table_chain).

The store keeps and returns them; what a round makes of them (free or together, initiative, whispers) is the
engine's (gm.engine.table). A message is written as it arrives, append-only like a roll: a round that fails
leaves it in the chain, and the round that settles a gathered action marks it with its number
(`RoundTables.accept_round`, from the round's `actions`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import bindparam, update
from sqlmodel import col, select

from gm.errors import Conflict, NotFound, StoryNotFound
from gm.store._base import Tables, table_of
from gm.store.records import SeatRecord, Story, TableMessage
from gm.transcript.chain import message_genesis, message_hash

ALREADY_ACTED = "you already acted this round; wait for the game master to settle it"


class SeatTables(Tables):
    """Seats and the table's messages."""

    def create_seat(self, story_id: str, character: str, token_hash: str, name: str = "") -> SeatRecord:
        """A new seat for `character` (a player character: the caller checks); `Conflict` if it has a live seat."""
        with self.session() as session:
            story = session.get(Story, story_id, with_for_update=True)  # two invites for one character queue here
            if story is None:
                raise StoryNotFound(story_id)
            taken = select(SeatRecord.id).where(
                SeatRecord.story_id == story_id, SeatRecord.character == character, col(SeatRecord.revoked_at).is_(None)
            )
            if session.exec(taken).first() is not None:
                raise Conflict(f"{character} already has a seat at this table; revoke it first to invite someone else")
            seat = SeatRecord(story_id=story_id, character=character, token_hash=token_hash, name=name)
            session.add(seat)
            session.commit()
            return seat

    def seats(self, story_id: str, *, live: bool = False) -> list[SeatRecord]:
        """The story's seats, oldest first (only those not revoked, with `live`)."""
        query = select(SeatRecord).where(SeatRecord.story_id == story_id)
        if live:
            query = query.where(col(SeatRecord.revoked_at).is_(None))
        with self.session() as session:
            return list(session.exec(query.order_by(col(SeatRecord.created_at), col(SeatRecord.id))))

    def seat_by_token(self, token_hash: str, story_id: str | None = None) -> SeatRecord | None:
        """The live seat whose token hashes to `token_hash` (of `story_id`, if given); None if there is none."""
        query = select(SeatRecord).where(SeatRecord.token_hash == token_hash, col(SeatRecord.revoked_at).is_(None))
        if story_id is not None:
            query = query.where(SeatRecord.story_id == story_id)
        with self.session() as session:
            return session.exec(query).first()

    def revoke_seat(self, story_id: str, seat_id: str) -> SeatRecord:
        """Revoke a seat: its token opens nothing from now on, and its action waiting for a round is dropped."""
        with self.session() as session:
            seat = session.get(SeatRecord, seat_id)
            if seat is None or seat.story_id != story_id:
                raise NotFound(f"there is no seat '{seat_id}' at this story's table")
            if seat.revoked_at is None:
                seat.revoked_at = datetime.now(UTC)
                session.add(seat)
                session.execute(
                    update(MESSAGES)
                    .where(MESSAGES.c.seat_id == seat_id, MESSAGES.c.round_number.is_(None), MESSAGES.c.gathered)
                    .values(dropped=True)
                )
                session.commit()
            return seat

    def set_seat_dice(self, seat_id: str, dice: str) -> SeatRecord:
        with self.session() as session:
            seat = session.get(SeatRecord, seat_id)
            if seat is None:
                raise NotFound(f"there is no seat '{seat_id}'")
            seat.dice = dice
            session.add(seat)
            session.commit()
            return seat

    def add_message(
        self, story_id: str, seat: SeatRecord | None, character: str, text: str, *, gathered: bool = False
    ) -> TableMessage:
        """Write a message as the next link of the story's message chain (one transaction, the story row locked).

        A gathered action (a together round's) is refused with `Conflict` while the same seat has one waiting:
        one action per seat per round."""
        with self.session() as session:
            story = session.get(Story, story_id, with_for_update=True)
            if story is None:
                raise StoryNotFound(story_id)
            if gathered and seat is not None:
                waiting = select(TableMessage.id).where(
                    TableMessage.story_id == story_id,
                    TableMessage.seat_id == seat.id,
                    col(TableMessage.gathered).is_(True),
                    col(TableMessage.round_number).is_(None),
                    col(TableMessage.dropped).is_(False),
                )
                if session.exec(waiting).first() is not None:
                    raise Conflict(ALREADY_ACTED)
            seq = story.messages + 1
            previous = story.messages_head or message_genesis(story_id)
            seat_id = seat.id if seat is not None else None
            linked = {"seq": seq, "seat": seat_id, "character": character, "text": text, "prev_hash": previous}
            digest = message_hash(linked)
            message = TableMessage(
                story_id=story_id,
                seq=seq,
                seat_id=seat_id,
                character=character,
                text=text,
                gathered=gathered,
                prev_hash=previous,
                hash=digest,
            )
            story.messages, story.messages_head = seq, digest
            session.add(story)
            session.add(message)
            session.commit()
            return message

    def table_messages(self, story_id: str) -> list[TableMessage]:
        """Every message of the story's chain, in order."""
        with self.session() as session:
            query = select(TableMessage).where(TableMessage.story_id == story_id).order_by(col(TableMessage.seq))
            return list(session.exec(query))

    def gathered(self, story_id: str) -> list[TableMessage]:
        """The actions waiting for the story's next together round, in the order they came."""
        query = (
            select(TableMessage)
            .where(
                TableMessage.story_id == story_id,
                col(TableMessage.gathered).is_(True),
                col(TableMessage.round_number).is_(None),
                col(TableMessage.dropped).is_(False),
            )
            .order_by(col(TableMessage.seq))
        )
        with self.session() as session:
            return list(session.exec(query))


MESSAGES = table_of(TableMessage)
SEATS = table_of(SeatRecord)
# Marks the messages an accepted round settled (gm.store._rounds.accept_round, from the round's actions).
SETTLE = (
    update(MESSAGES)
    .where(MESSAGES.c.story_id == bindparam("story"), MESSAGES.c.seq == bindparam("message"))
    .values(round_number=bindparam("round_no"))
)
