"""The database's tables: stories, seeds, attempts, rolls, rounds, memory and model calls (sqlmodel).

Named in families as the rest of the code reads them: `StoryBase` holds what a story is made from,
`Story` is the table. `gm.store` is the one place that reads and writes them.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Index, UniqueConstraint
from sqlmodel import Field, SQLModel


def _now() -> datetime:
    return datetime.now(UTC)


def _json(nullable: bool = False) -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=nullable))


def _clock() -> Any:
    """A story's time on its world's calendar: minutes since the story began (gm.world.calendar); None without one."""
    return Field(default=None, sa_column=Column(BigInteger, nullable=True))


def _moment() -> Any:
    return Field(default_factory=_now, sa_column=Column(DateTime(timezone=True), nullable=False))


class Built:
    """Builds a table's record straight into its `__dict__`, as SQLAlchemy does for the rows it loads.

    A table model's own `__init__` validates nothing either, but sets each field through the ORM's
    instrumentation one by one, which cost ten times as much (about 150 us a record against 20 on the
    bench machine; a round builds several: its attempt, rolls, model calls and the round itself).
    Missing fields get their defaults, as there; a required field left out stays unset, as there.
    """

    def __init__(self, **values: Any) -> None:
        cls = type(self)
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _FIELDS[cls] = _fields_of(cls.model_fields)  # type: ignore[attr-defined]
        built = {name: values[name] for name, _, _ in fields if name in values}
        given = set(built)
        if len(built) < len(fields):  # then the defaults, after the values given (a record dumps in this order)
            for name, default, factory in fields:
                if name not in built:
                    if factory is not None:
                        built[name] = factory()
                    elif default is not _REQUIRED:
                        built[name] = default
        self.__dict__.update(built)  # the instance's state was set up by the ORM's __init__ wrapper
        # sqlmodel's __new__ gave the record pydantic's bookkeeping (no extra fields, no private ones, an empty
        # set of fields given): the fields given are marked as pydantic's own __init__ marks them.
        self.model_fields_set.update(given)  # type: ignore[attr-defined]


# Per table class, each field's name with its constant default or its default factory. Asking pydantic for
# each default as a record is built (`FieldInfo.get_default`) cost more than the rest of building it.
_Field = tuple[str, Any, Callable[[], Any] | None]
_FIELDS: dict[type, tuple[_Field, ...]] = {}
_REQUIRED = object()  # no default: a field left out stays unset
_IMMUTABLE = (type(None), bool, int, float, str)  # a default shared by every record must be one of these


def _fields_of(fields: dict[str, Any]) -> tuple[_Field, ...]:
    found: list[_Field] = []
    for name, field in fields.items():
        if field.is_required():
            found.append((name, _REQUIRED, None))
        elif field.default_factory is not None:
            found.append((name, None, field.default_factory))
        elif isinstance(field.default, _IMMUTABLE):
            found.append((name, field.default, None))
        else:  # a mutable default: each record gets its own copy, as pydantic gives it
            found.append((name, None, functools.partial(field.get_default, call_default_factory=True)))
    return tuple(found)


class StoryBase(SQLModel):
    """What a story is made from: its title and the world's definitions, copied in at the start."""

    title: str
    world_data: dict[str, Any] = _json()
    dice_data: dict[str, Any] | None = _json(nullable=True)
    settings: dict[str, Any] = _json()


class Story(Built, StoryBase, table=True):
    """A story: the copied world, the running summary of its older rounds, and the round lease."""

    __tablename__ = "stories"
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True)
    created_at: datetime = _moment()
    rounds: int = 0  # accepted rounds so far
    summary: str = ""  # the memory keeper's running summary of folded rounds
    summary_through: int = 0  # the last round folded into `summary`
    lease_holder: str | None = None
    lease_expires: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))
    lease_process: str | None = None  # the process whose beat keeps the lease after `lease_expires` (gm.store._leases)
    token_hash: str | None = None  # sha256 of the story's secret token, for the web API; None for local stories
    # Dice integrity (gm.transcript.chain, gm.integrity.fair): the chain's length and newest hash, and a fair story's
    # seeds.
    chain_length: int = 0
    chain_head: str | None = None
    legacy_rolls: int = 0  # rolls made before gm kept a round's rolls across attempts (chained by the migration)
    fair: bool = False
    player_seed: str | None = None
    seed_epoch: int | None = None  # the epoch of the seed fair rolls are derived from now
    clock: int | None = _clock()  # the story's current time (the last round's end); None in a world without a calendar
    ended_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))
    # The characters' sheets now (gm.world.sheet), the number of changes made to them and the last one's hash
    # (gm.transcript.chain's `change_hash`); sheet is None in a world whose sheets cannot change.
    sheet: dict[str, Any] | None = _json(nullable=True)
    sheet_length: int = 0
    sheet_head: str | None = None
    # The chain of the messages seats sent (gm.store._seats, gm.integrity.table_chain): its length and newest hash.
    messages: int = 0
    messages_head: str | None = None


class SeedRecord(Built, SQLModel, table=True):
    """One of a fair story's seeds: secret until revealed, its commitment published from the start."""

    __tablename__ = "seeds"
    __table_args__ = (UniqueConstraint("story_id", "epoch"),)
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    epoch: int  # 0 for the seed drawn at the start, then one more for each reveal
    seed: str  # 64 hex digits; never shown before `revealed_at`
    commitment: str  # sha256 of the seed's bytes
    first_roll: int  # the first roll number (seq) derived from this seed
    last_roll: int | None = None  # the last, set when the seed is revealed
    committed_at: datetime = _moment()
    revealed_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))


class Attempt(Built, SQLModel, table=True):
    """One try at playing a round; `status` is running, accepted, failed, or abandoned (its process died)."""

    __tablename__ = "attempts"
    # A round's opening finds the story's running attempts without reading all its attempts; a paused round
    # its round's attempts.
    __table_args__ = (
        Index("ix_attempts_story_status", "story_id", "status"),
        Index("ix_attempts_story_round", "story_id", "round_number"),
    )
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    round_number: int
    status: str = "running"
    error: str | None = None
    regenerating: bool = False
    started_at: datetime = _moment()


class RollRecord(Built, SQLModel, table=True):
    """One roll, written when rolled and never changed: the number lives here and only here.

    `seq` is the roll's place in its story (1, 2, ...) and `prev_hash` the hash of the roll before it
    (see gm.transcript.chain); `seed_epoch` names the seed a fair roll's faces were derived from.
    """

    __tablename__ = "rolls"
    # One roll per place in a story's chain: two writers can never both add roll N. The second index
    # finds a round's rolls (when it is opened) in chain order without reading every roll of a long story
    # (gm/store/migrations/versions/growth_indexes.py).
    __table_args__ = (
        Index("ix_rolls_story_seq", "story_id", "seq", unique=True),
        Index("ix_rolls_story_round", "story_id", "round_number", "seq"),
    )
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    attempt_id: str = Field(foreign_key="attempts.id", index=True)
    round_number: int
    kind: str  # check | dice | player
    character: str | None = None
    check_key: str | None = None
    notation: str
    reason: str = ""
    target: int | None = None
    modifier: int = 0
    faces: list[list[int]] = _json()
    total: int
    successes: int | None = None
    value: int | None = None  # what the bands read
    band: str | None = None
    result: str | None = None
    critical: bool = False
    void: bool = False
    line: str = ""  # the itemised roll, e.g. "1d20 (14) = 14"
    edge: str | None = None  # advantage | disadvantage: which of the check's dice were rolled
    opponent: str | None = None  # an opposed check's other character
    opponent_modifier: int | None = None
    natural_text: str | None = None  # what naturals did, e.g. "natural 20: stepped up from Success"
    stepped_from: str | None = None  # the band the value found before naturals moved it
    seq: int | None = None  # set by the store as the roll is written (every stored roll has one)
    prev_hash: str | None = None
    seed_epoch: int | None = None
    typed: bool = False  # faces the player rolled at the table and typed in (gm.engine.typed_dice), not the engine's
    salt: str | None = (
        None  # a secret roll's random salt, hashed with it so its sealed hash hides it (gm.integrity.secret)
    )
    created_at: datetime = _moment()


class RevealRecord(Built, SQLModel, table=True):
    """A secret roll the game master revealed (reveal_roll): from then on the player sees its card
    (gm.integrity.secret)."""

    __tablename__ = "reveals"
    roll_id: int = Field(foreign_key="rolls.id", primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    round_number: int  # the round in which it was revealed
    revealed_at: datetime = _moment()


class PausedRound(Built, SQLModel, table=True):
    """A round waiting for the player's dice (gm.engine.typed_dice): everything needed to go on with it, in any process.

    One per story at most (the story is its key): while it waits no other round of the story can start,
    yet the story's lease is free. `messages` are the game master's conversation so far, `pending` the
    tool calls of its last answer not yet run (the first is the check waiting for faces), `rolls` the
    ids of the rolls the attempt holds, in order, and `earlier` those of the round it plays again, if any.
    """

    __tablename__ = "paused_rounds"
    story_id: str = Field(foreign_key="stories.id", primary_key=True)
    attempt_id: str = Field(foreign_key="attempts.id")
    round_number: int
    player_text: str
    regenerating: bool = False
    judged: bool = True
    messages: list[dict[str, Any]] = _json()
    pending: list[dict[str, Any]] = _json()
    rolls: list[int] = _json()
    told: list[int] = _json()  # the rolls whose results the game master had read before its last answer
    earlier: list[int] = _json()
    refusals: list[str] = _json()
    model_calls: int = 0  # made so far by the attempt (they count toward the round's bound)
    clock: int | None = _clock()
    question: dict[str, Any] = _json()
    # The sheet changes the attempt made before it paused, with the sheets they left (gm.engine._sheets); None if none.
    sheet: dict[str, Any] | None = _json(nullable=True)
    created_at: datetime = _moment()


class RoundRecord(Built, SQLModel, table=True):
    """An accepted round: the player's text, the narration, outcomes, refusals seen, rolls copied in."""

    __tablename__ = "rounds"
    # The second index finds rounds still to remember, in order, without reading every round of a long story.
    __table_args__ = (
        UniqueConstraint("story_id", "number"),
        Index("ix_rounds_unremembered", "story_id", "memory_written", "number"),
    )
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    number: int
    attempt_id: str = Field(foreign_key="attempts.id")
    player_text: str
    narration: str
    outcomes: list[dict[str, Any]] = _json()
    rolls: list[dict[str, Any]] = _json()
    refusals: list[str] = _json()
    judgement: dict[str, Any] | None = _json(nullable=True)  # the judge's verdicts and model; None if not judged
    clock: int | None = _clock()  # the story's time when the round ended
    sheet_hash: str | None = None  # the hash of the story's last sheet change when the round ended (None: none yet)
    memory_written: bool = False
    created_at: datetime = _moment()
    # A round seats played (gm.engine.table): each action as the game master was given it, in order, naming the
    # message of the table's chain it came from; and what the game master whispered to one character. None for a
    # round no seat played, and for a round with no whisper.
    actions: list[dict[str, Any]] | None = _json(nullable=True)
    whispers: list[dict[str, Any]] | None = _json(nullable=True)


class SheetChangeRecord(Built, SQLModel, table=True):
    """One change an accepted round made to a character's sheet (gm.world.sheet.Change), in the story's order.

    `seq` is its place among the story's changes (1, 2, ...), `prev_hash` the hash of the change before it
    (gm.transcript.chain's `change_hash`; the first one's is the story's sheet genesis). Written with its
    round, in the transaction that accepts it; a failed attempt's changes are never written, and a round
    played again replaces its changes with the new version's.
    """

    __tablename__ = "sheet_changes"
    __table_args__ = (
        Index("ix_sheet_changes_story_seq", "story_id", "seq", unique=True),
        Index("ix_sheet_changes_story_round", "story_id", "round_number"),
    )
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id")
    attempt_id: str = Field(foreign_key="attempts.id")
    round_number: int
    seq: int
    character: str
    variable: str
    action: str  # set | adjust | add | remove | on | off
    amount: int | None = Field(default=None, sa_column=Column(BigInteger, nullable=True))
    item: str | None = None
    condition: str | None = None
    reason: str = ""
    source: str = "chosen"  # chosen | rolled | effect
    roll_id: int | None = None  # the roll that gave a rolled amount
    before: Any = Field(
        default=None, sa_column=Column(JSON, nullable=True)
    )  # the number, the item's count or the condition's state
    after: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    clamped: bool = False
    prev_hash: str
    created_at: datetime = _moment()


class MemoryEntry(Built, SQLModel, table=True):
    """The memory keeper's summary of one round, with that round's rolls and outcomes copied by code."""

    __tablename__ = "memory"
    __table_args__ = (UniqueConstraint("story_id", "round_number"),)
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    round_number: int
    summary: str
    rolls: list[dict[str, Any]] = _json()
    outcomes: list[dict[str, Any]] = _json()
    clock: int | None = _clock()  # the round's end time, copied by code, so the summary carries its date
    created_at: datetime = _moment()


class ModelCall(Built, SQLModel, table=True):
    """One call to the model: tokens in and out, latency, HTTP attempts, refusals it drew."""

    __tablename__ = "model_calls"
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    attempt_id: str | None = None
    purpose: str  # game_master | judge | memory
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    latency_ms: float
    http_attempts: int
    refusals: int = 0
    finish_reason: str | None = None
    structured: str | None = None  # a judge call: how its answer was asked for (json_schema, tool or text)
    created_at: datetime = _moment()


class StoryEvent(Built, SQLModel, table=True):
    """One thing that happened in a story, for the pages watching it live (gm.store._events, gm.web._live).

    `seq` counts the story's events (1, 2, ...), in the order their transactions committed; `audience` is
    None for everyone who may read the story, else the seats that may see it (a whisper). `data` is what a
    viewer may see: the player's view of a roll or a round, never a sealed secret roll."""

    __tablename__ = "story_events"
    __table_args__ = (UniqueConstraint("story_id", "seq"),)
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id")
    seq: int
    kind: str
    audience: list[str] | None = _json(nullable=True)
    data: dict[str, Any] = _json()
    created_at: datetime = _moment()


class SeatRecord(Built, SQLModel, table=True):
    """A seat at a story's table: one player character, played by the person holding the seat's token.

    The token is shown once and kept only as its SHA-256 (`token_hash`, unique over every story). A revoked seat
    (`revoked_at` set) opens nothing; at most one live seat per character (gm.store._seats)."""

    __tablename__ = "seats"
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    character: str
    name: str = ""
    token_hash: str = Field(unique=True, index=True)
    dice: str = "shown"  # this seat's own Dice setting: shown | hidden
    created_at: datetime = _moment()
    revoked_at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))


class TableMessage(Built, SQLModel, table=True):
    """A message a seat sent, append-only and chained by hash (gm.integrity.table_chain): who said what, in order.

    `gathered` marks an action waiting for a together round; `round_number` is set when an accepted round
    settles it, `dropped` when its seat is revoked first. Neither is hashed: they say what became of the message.
    """

    __tablename__ = "table_messages"
    __table_args__ = (UniqueConstraint("story_id", "seq"),)
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    seq: int
    seat_id: str | None = Field(default=None, foreign_key="seats.id")
    character: str
    text: str
    gathered: bool = False
    round_number: int | None = None
    dropped: bool = False
    prev_hash: str
    hash: str
    created_at: datetime = _moment()
