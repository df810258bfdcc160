"""A story forked from another at one of its rounds: it shares the parent's rounds and rolls up to there, then goes
on alone (a chat front end's "Fork chat", gm.web.compat.routes).

The fork is a story of its own: it copies the parent's world, its rounds up to the fork, those rounds' memory and
the attempts they were accepted in. Its rolls are not copied: the fork's dice record *continues the parent's hash
chain* from the last roll at the fork. Its chain length and head start as the parent's were there, so its own
first roll takes the next place and the parent's hash as its `prev_hash`; its settings keep `forked_from`
(`FORKED_FROM`): the parent, the round, the number of rolls inherited and the hash they end in, and the chain's
origin (the first story of a line of forks, whose genesis the chain starts from). A transcript of the fork lists
the inherited rolls first (`inherited_rolls`), so `gm audit` checks one unbroken chain from the origin's genesis,
and says where it forked. A parent that has forks cannot be deleted while they are there (their chains begin in it).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlmodel import col, select

from gm.errors import Conflict, StoryNotFound
from gm.store._base import Tables
from gm.store._sheets import fork_sheets
from gm.store.records import Attempt, MemoryEntry, RollRecord, RoundRecord, SheetChangeRecord, Story
from gm.transcript.chain import roll_hash
from gm.transcript.shapes import RollPublic

FORKED_FROM = "forked_from"  # a fork's settings: {"story", "round", "rolls", "chain_head", "origin"}
FORKS = "forks"  # a parent's settings: the ids of the stories forked from it
NOT_INHERITED = (FORKS, "chat_edits", "chat_opening")  # settings of the parent's own chat, not the fork's


class ForkTables(Tables):
    """Forked stories: made from a parent at a round, and the parent's rolls they inherit."""

    def fork_story(self, parent_id: str, through: int, settings: dict[str, Any], token_hash: str) -> Story:
        """A new story sharing the parent's rounds 1..`through` and its rolls up to the last of them, in one
        transaction. `settings` are added to the parent's (a front end's chat hint)."""
        with self.session() as session:
            parent = session.get(Story, parent_id)
            if parent is None:
                raise StoryNotFound(parent_id)
            if parent.fair:  # fair rolls are derived from the story's own seeds and places: not shared
                raise Conflict("a story with fair dice cannot be forked")
            if not 0 < through <= parent.rounds:
                raise Conflict(f"story {parent_id} has no round {through} to fork at")
            rounds = session.exec(
                select(RoundRecord)
                .where(RoundRecord.story_id == parent_id, col(RoundRecord.number) <= through)
                .order_by(col(RoundRecord.number))
            ).all()
            later = session.exec(
                select(RollRecord)
                .where(RollRecord.story_id == parent_id, col(RollRecord.round_number) > through)
                .order_by(col(RollRecord.seq))
                .limit(1)
            ).first()
            # The rolls up to the fork: every roll before the first roll of a later round (rounds are played in turn).
            before = select(RollRecord).where(RollRecord.story_id == parent_id)
            if later is not None:
                before = before.where(col(RollRecord.seq) < later.seq)
            last = session.exec(before.order_by(col(RollRecord.seq).desc()).limit(1)).first()
            above = parent.settings.get(FORKED_FROM) or {}  # what the parent itself inherited, if it is a fork
            head: str | None
            if last is not None:
                inherited, head = last.seq or 0, roll_hash(RollPublic.from_stored(last).model_dump(mode="json"))
            else:  # no roll of its own before the fork: the chain as the parent inherited it, if at all
                inherited, head = int(above.get("rolls", 0)), above.get("chain_head")
            origin = above.get("origin", parent_id)
            fork = Story(
                title=parent.title,
                world_data=parent.world_data,
                dice_data=parent.dice_data,
                settings={
                    **{
                        key: value
                        for key, value in parent.settings.items()
                        if key not in (FORKS, "chat_edits", "chat_opening")
                    },
                    **settings,
                    FORKED_FROM: {
                        "story": parent_id,
                        "round": through,
                        "rolls": inherited,
                        "chain_head": head,
                        "origin": origin,
                    },
                },
                token_hash=token_hash,
                rounds=through,
                chain_length=inherited,
                chain_head=head,
                clock=rounds[-1].clock if rounds else parent.clock,
            )
            session.add(fork)
            session.flush()
            attempts: dict[str, str] = {}
            for record in rounds:
                if record.attempt_id not in attempts:
                    attempts[record.attempt_id] = uuid.uuid4().hex
                    session.add(
                        Attempt(
                            id=attempts[record.attempt_id],
                            story_id=fork.id,
                            round_number=record.number,
                            status="accepted",
                        )
                    )
            session.flush()
            heads: dict[int, str | None] = {}
            if parent.sheet is not None:  # its sheets as they were at the fork, and their changes chained anew
                changes = session.exec(
                    select(SheetChangeRecord)
                    .where(SheetChangeRecord.story_id == parent_id)
                    .order_by(col(SheetChangeRecord.seq))
                ).all()
                copied, heads = fork_sheets(parent, fork, through, list(changes), attempts)
                session.add(fork)
            for record in rounds:
                values = record.model_dump(exclude={"id", "story_id", "attempt_id"})
                if parent.sheet is not None:
                    values["sheet_hash"] = heads.get(record.number)
                session.add(RoundRecord(**values, story_id=fork.id, attempt_id=attempts[record.attempt_id]))
            if parent.sheet is not None:
                session.flush()  # the attempts the changes name first
                session.add_all(copied)
            memories = session.exec(
                select(MemoryEntry).where(MemoryEntry.story_id == parent_id, col(MemoryEntry.round_number) <= through)
            ).all()
            for entry in memories:
                session.add(MemoryEntry(**entry.model_dump(exclude={"id", "story_id"}), story_id=fork.id))
            parent.settings = {**parent.settings, FORKS: [*parent.settings.get(FORKS, []), fork.id]}
            session.add(parent)
            session.commit()
            return fork

    def inherited_rolls(self, story: Story) -> list[RollRecord]:
        """The rolls a forked story's chain begins with: its parent's (and theirs, up a line of forks), in order."""
        forked = story.settings.get(FORKED_FROM)
        if not forked:
            return []
        with self.session() as session:
            parent = session.get(Story, forked["story"])
            if parent is None:
                raise StoryNotFound(forked["story"])
            own = session.exec(
                select(RollRecord)
                .where(RollRecord.story_id == parent.id, col(RollRecord.seq) <= forked["rolls"])
                .order_by(col(RollRecord.seq))
            ).all()
        limit = forked["rolls"]
        return [roll for roll in [*self.inherited_rolls(parent), *own] if (roll.seq or 0) <= limit]

    def forks_of(self, story: Story) -> list[str]:
        """The stories forked from this one that are still there."""
        wanted = story.settings.get(FORKS, [])
        if not wanted:
            return []
        with self.session() as session:
            return list(session.exec(select(Story.id).where(col(Story.id).in_(wanted))))
