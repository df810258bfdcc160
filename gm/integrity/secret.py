"""Secret rolls: a check marked `secret` in dice.json is rolled and refereed as usual, but its card is sealed.

While a secret roll is sealed, the player sees no card of it: not in the terminal chat or `/open`, not
in a round's answer, not in the event stream, not in the transcript the story's token reads (the API,
the play page). The narration still tells its outcome, as any outcome is told: what stays secret is the
dice. A roll is unsealed when the game master calls `reveal_roll` for it (written at once, like a roll),
or when the story ends (`/end`, `POST /api/stories/{id}/end`, `Game.end`): an ended story plays no more
rounds, and every secret roll in it is shown. The operator's `gm show` always shows everything.

In the player's transcript a sealed roll keeps its place in the integrity chain as a stub: its id, seq,
round, attempt, kind, check and character, its `prev_hash`, and `hash`, the SHA-256 of the whole roll
(gm.transcript.chain), but no faces, total, value, band or result. `gm audit` follows the chain through the stub
(the next roll's `prev_hash` must be its `hash`) and counts it as sealed; once revealed, the roll's
contents hash to that same value, which `gm audit --since` checks against a transcript saved before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import UTC, datetime

from sqlmodel import col, select

from gm.errors import Conflict, StoryEnded, StoryNotFound
from gm.store import Store, StoryState
from gm.store.records import PausedRound, RevealRecord, RollRecord, Story
from gm.transcript.chain import roll_hash
from gm.transcript.shapes import RollPublic
from gm.world.definition import World


def secret_checks(world: World) -> set[str]:
    """The keys of the world's secret checks."""
    return {check.key for check in world.rules.checks if check.secret} if world.rules is not None else set()


def is_secret(roll: RollRecord | RollPublic, world: World) -> bool:
    """Whether a roll is of a secret check (sealed until revealed)."""
    key = roll.check_key if isinstance(roll, RollRecord) else roll.check
    return roll.kind == "check" and key in secret_checks(world)


def sealed_ids(store: Store, story_id: str, world: World) -> set[int]:
    """The ids of the story's secret rolls the player may not see yet (none once the story has ended)."""
    keys = secret_checks(world)
    if not keys:
        return set()
    with store.session() as session:
        story = session.get(Story, story_id)
        if story is None or story.ended_at is not None:
            return set()
        rolled = select(RollRecord.id).where(RollRecord.story_id == story_id, col(RollRecord.check_key).in_(keys))
        revealed = set(session.exec(select(RevealRecord.roll_id).where(RevealRecord.story_id == story_id)))
        return {roll_id for roll_id in session.exec(rolled) if roll_id is not None and roll_id not in revealed}


def visible(rolls: Iterable[RollPublic], sealed: Collection[int]) -> list[RollPublic]:
    """The rolls whose cards the player may see."""
    return [roll for roll in rolls if roll.id not in sealed]


def stub(roll: RollPublic) -> RollPublic:
    """A sealed roll as the player's transcript chains it: where it is and its hash, not what it was."""
    return RollPublic(
        id=roll.id,
        kind=roll.kind,
        character=roll.character,
        check=roll.check,
        check_name=roll.check_name,
        notation=roll.notation,
        faces=[],
        total=0,
        seq=roll.seq,
        round=roll.round,
        attempt=roll.attempt,
        prev_hash=roll.prev_hash,
        from_earlier_attempt=roll.from_earlier_attempt,
        sealed=True,
        hash=roll_hash(roll.model_dump(mode="json")),
    )


def reveal(store: Store, story_id: str, roll_id: int, round_number: int) -> None:
    """Record that the game master revealed a secret roll (once; revealing it again changes nothing)."""
    with store.session() as session:
        if session.get(RevealRecord, roll_id) is None:
            session.add(RevealRecord(roll_id=roll_id, story_id=story_id, round_number=round_number))
            session.commit()


def end_story(store: Store, story_id: str) -> None:
    """End a story: every secret roll in it is shown, and no round starts again. Ending it twice is harmless.

    Refused while a round waits for the player's dice (gm.engine.typed_dice): answer or abandon that round first.
    """
    with store.session() as session:
        story = session.get(Story, story_id)
        if story is None:
            raise StoryNotFound(story_id)
        if session.get(PausedRound, story_id) is not None:
            raise Conflict("a round of this story waits for the dice; answer it or abandon it before ending the story")
        if story.ended_at is None:
            story.ended_at = datetime.now(UTC)
            session.add(story)
            session.commit()


def refuse_if_ended(story: Story | StoryState) -> None:
    """`StoryEnded` for a story that has ended: it plays no more rounds."""
    if story.ended_at is not None:
        raise StoryEnded()
