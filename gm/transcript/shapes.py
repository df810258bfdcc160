"""The public shapes of a story: a roll, an outcome, a round, a story and its transcript.

These are the one shape each idea has outside the database. The library's `RoundResult`,
`gm show --json`, the web API and its event stream all use them, built from the stored rows here
and nowhere else (named in families, as full-stack-fastapi-template names them: `Story` is a table
in `gm.store.records`, `StoryPublic` is what anyone outside sees of it). The rows are read through
the protocols below (`StoredRound`, `StoredStory`, `StoredSeed`), so this module knows no database.
Every field is described in docs/transcript.md.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gm.rules.card_odds import roll_chances
from gm.rules.checks import Check
from gm.transcript._stored import StoredRound, StoredSeed, StoredStory
from gm.transcript.sheets import ChangePublic
from gm.transcript.table import ActionPublic, MessagePublic, TablePublic, WhisperPublic
from gm.world.calendar import story_time
from gm.world.definition import World


def as_utc(moment: datetime) -> datetime:
    """A stored moment with its timezone: SQLite hands back the UTC moments it was given without one."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


RollKind = Literal["check", "dice", "player"]
Result = Literal["succeeded", "partial", "failed"]
DiceSetting = Literal["shown", "hidden"]


class ChancePublic(BaseModel):
    """One band's chance at the moment of a roll, as an exact fraction in text ("9/20")."""

    model_config = ConfigDict(frozen=True)

    label: str
    result: Result
    critical: bool = False
    probability: str
    exact: bool = True


def _check(key: Any, world: World | None) -> Check | None:
    """The world's check by that key, if the world has rules and such a check."""
    if not key or world is None or world.rules is None:
        return None
    for check in world.rules.checks:  # one pass (a roll needs the check's name and its odds)
        if check.key == key:
            return check
    return None


def _chances(data: Mapping[str, Any], check: Check | None) -> list[ChancePublic] | None:
    """Each band's chance for a check roll as it was rolled (target, modifiers, edge), or None."""
    if check is None or data.get("kind") != "check":
        return None
    chances = roll_chances(check, data)
    if chances is None:
        return None
    return [
        ChancePublic(
            label=chance.label,
            result=chance.result,
            critical=chance.critical,
            probability=chance.probability,
            exact=chance.exact,
        )
        for chance in chances
    ]


class RollPublic(BaseModel):
    """One roll as anyone outside the database sees it (the number included: it is the player's to see)."""

    model_config = ConfigDict(frozen=True)

    id: int
    kind: RollKind
    character: str | None = None
    check: str | None = None
    check_name: str | None = None
    notation: str
    reason: str = ""
    target: int | None = None
    modifier: int = 0
    faces: list[list[int]]
    total: int
    successes: int | None = None
    value: int | None = None
    band: str | None = None
    result: Result | None = None
    critical: bool = False
    void: bool = False
    dice: str = ""
    seq: int | None = None
    round: int | None = None
    attempt: str | None = None
    seed_epoch: int | None = None
    prev_hash: str | None = None
    from_earlier_attempt: bool = False
    edge: str | None = None
    opponent: str | None = None
    opponent_modifier: int | None = None
    natural: str | None = None
    stepped_from: str | None = None
    chances: list[ChancePublic] | None = None
    typed: bool = False  # the faces were rolled at the table and typed by the player (gm.engine.typed_dice)
    salt: str | None = None  # a secret roll's salt, hashed with it (gm.integrity.secret); null in a sealed stub
    sealed: bool = False  # a secret roll not yet revealed, in the player's transcript: a stub (gm.integrity.secret)
    hash: str | None = None  # a sealed stub's own chain hash, which the next roll's prev_hash names

    @classmethod
    def from_stored(
        cls, stored: Mapping[str, Any] | BaseModel, world: World | None = None, *, unfinished: Collection[str] = ()
    ) -> RollPublic:
        """A roll from its record, or from the copy of it a round or memory keeps; `world` names the check,
        and a roll rolled by one of the `unfinished` attempts (failed, or cut short) is marked as such."""
        data = stored if isinstance(stored, Mapping) else stored.model_dump(mode="json")
        attempt = data.get("attempt_id")
        check_key = data.get("check_key")
        check = _check(check_key, world)
        return cls(
            id=data["id"],
            kind=data["kind"],
            character=data.get("character"),
            check=check_key,
            check_name=check.name if check is not None else None,
            notation=data["notation"],
            reason=data.get("reason", ""),
            target=data.get("target"),
            modifier=data.get("modifier", 0),
            faces=data["faces"],
            total=data["total"],
            successes=data.get("successes"),
            value=data.get("value"),
            band=data.get("band"),
            result=data.get("result"),
            critical=data.get("critical", False),
            void=data.get("void", False),
            dice=data.get("line", ""),
            seq=data.get("seq"),
            round=data.get("round_number"),
            attempt=attempt,
            seed_epoch=data.get("seed_epoch"),
            prev_hash=data.get("prev_hash"),
            from_earlier_attempt=attempt in unfinished,
            edge=data.get("edge"),
            opponent=data.get("opponent"),
            opponent_modifier=data.get("opponent_modifier"),
            natural=data.get("natural_text"),
            stepped_from=data.get("stepped_from"),
            chances=_chances(data, check),
            typed=bool(data.get("typed", False)),
            salt=data.get("salt"),
        )

    @property
    def settles(self) -> bool:
        """Whether this roll settled an outcome: a check roll that fell in a band."""
        return self.kind == "check" and not self.void


class OutcomePublic(BaseModel):
    """What happened to one character in an accepted round, and the roll that settled it, if any."""

    model_config = ConfigDict(frozen=True)

    character: str
    result: Result
    roll: int | None = None


class VerdictPublic(BaseModel):
    """How the judge read one rolled outcome in the narration, and the words it read it from."""

    character: str
    told_as: Literal["succeeded", "partial", "failed", "not_told"]
    quote: str


class JudgementPublic(BaseModel):
    """The judge's verdicts on an accepted narration, and which model judged."""

    model: str
    verdicts: list[VerdictPublic]


class RoundPublic(BaseModel):
    """One accepted round: what the player typed, the narration, outcomes, rolls and the refusals seen.

    `judge` holds the judge's verdicts on the narration; it is null for a round no check roll
    settled, or a story whose narrations are not judged.
    """

    number: int
    player_text: str
    narration: str
    outcomes: list[OutcomePublic]
    rolls: list[RollPublic]
    refusals: list[str]
    judge: JudgementPublic | None = None
    clock: int | None = None  # when the round ended: minutes since the story began; null without a calendar
    time: str | None = None  # the same in words, on the world's calendar
    changes: list[ChangePublic] = []  # what the round changed on the characters' sheets, in order (gm.world.sheet)
    sheet_hash: str | None = None  # the hash of the story's last sheet change when the round ended
    attempt: str | None = None  # the attempt that played the round as it was accepted
    actions: list[ActionPublic] | None = None  # a round seats played: each seat's action (gm.transcript.table)
    whispers: list[WhisperPublic] | None = None  # what the game master whispered, as the viewer may see it

    @classmethod
    def from_record(cls, record: StoredRound, world: World | None, unfinished: Collection[str] = ()) -> RoundPublic:
        """A round from its record; `unfinished` are the story's attempts that failed or never finished."""
        return cls(
            number=record.number,
            player_text=record.player_text,
            narration=record.narration,
            outcomes=outcomes_from(record.outcomes),
            rolls=[RollPublic.from_stored(roll, world, unfinished=unfinished) for roll in record.rolls],
            refusals=list(record.refusals),
            judge=JudgementPublic.model_validate(record.judgement) if record.judgement else None,
            clock=record.clock,
            time=world.calendar.text(record.clock) if world and world.calendar and record.clock is not None else None,
            sheet_hash=record.sheet_hash,
            attempt=record.attempt_id,
            actions=[ActionPublic.model_validate(a) for a in actions]
            if (actions := _stored(record, "actions"))
            else None,
            whispers=[WhisperPublic.model_validate(w) for w in whispers]
            if (whispers := _stored(record, "whispers"))
            else None,
        )


def _stored(record: StoredRound, name: str) -> list[dict[str, Any]] | None:
    """A table field of a stored round (`actions`, `whispers`); None for a round from before seats, or none."""
    found: list[dict[str, Any]] | None = getattr(record, name, None)
    return found


JUDGE_OFF_NOTICE = "narrations are not judged"


class StorySettings(BaseModel):
    """A story's settings: the Dice setting (the player's to change), whether narrations are judged, and
    who rolls the checks: the engine, or the player at the table, typing the faces (gm.engine.typed_dice)."""

    dice: DiceSetting = "shown"
    judge: Literal["on", "off"] = "on"
    dice_from: Literal["engine", "player"] = "engine"
    rounds: Literal["free", "together"] = "free"  # how a shared table's round gathers its actions (gm.engine.table)
    combat: bool = False  # together rounds in combat are ordered by rolled initiative
    round_timer: int | None = None  # seconds a together round waits for its last actions before it may be closed


class QuestionPublic(BaseModel):
    """A check waiting for the player's dice: the round is paused until the faces are typed (gm.engine.typed_dice).

    `dice` lists the die of each face wanted, in order ("d20", or "d6", "d6", "d6", "d6" for 4d6kh3).
    """

    model_config = ConfigDict(frozen=True)

    round: int
    check: str
    check_name: str
    character: str
    notation: str
    dice: list[str]
    text: str


class StoryPublic(BaseModel):
    """A story as its player sees it: never its token, lease, secret seed or the world's definitions.

    `fair` stories derive their dice from a committed seed (gm.integrity.fair); `commitment` is the SHA-256 of
    the seed the next rolls are derived from.
    """

    id: str
    title: str
    created_at: str
    rounds: int
    settings: StorySettings
    notices: list[str] = []  # what a player should know of how the story is played, such as "narrations are not judged"
    fair: bool = False
    commitment: str | None = None
    clock: int | None = None  # the story's time now: minutes since it began; null without a calendar
    time: str | None = None  # the same in words, on the world's calendar
    asking: QuestionPublic | None = None  # a round paused for the player's dice (gm.engine.typed_dice), or null
    sheet: dict[str, Any] | None = None  # the characters' sheets now (gm.world.sheet); null where none can change
    ended: bool = (
        False  # the story has ended: it plays no more rounds, and its secret rolls are shown (gm.integrity.secret)
    )
    table: TablePublic | None = None  # a story with seats: who sits, and who is looking (gm.transcript.table)

    @classmethod
    def from_record(cls, story: StoredStory, commitment: str | None = None) -> StoryPublic:
        judge: Literal["on", "off"] = "off" if story.settings.get("judge") == "off" else "on"
        return cls(
            id=story.id,
            title=story.title,
            created_at=as_utc(story.created_at).isoformat(),
            rounds=story.rounds,
            settings=StorySettings(
                dice=story.settings.get("dice", "shown"),
                judge=judge,
                dice_from="player" if story.settings.get("dice_from") == "player" else "engine",
                rounds="together" if story.settings.get("rounds") == "together" else "free",
                combat=bool(story.settings.get("combat", False)),
                round_timer=story.settings.get("round_timer"),
            ),
            notices=[JUDGE_OFF_NOTICE] if judge == "off" else [],
            fair=story.fair,
            commitment=commitment,
            clock=story.clock,
            time=story_time(story.world_data, story.clock),
            ended=story.ended_at is not None,
            sheet=story.sheet,
        )


class SeedPublic(BaseModel):
    """One seed of a fair story: its commitment from the start, the seed itself once revealed."""

    epoch: int
    commitment: str
    seed: str | None = None
    first_roll: int
    last_roll: int | None = None
    committed_at: str
    revealed_at: str | None = None

    @classmethod
    def from_record(cls, record: StoredSeed) -> SeedPublic:
        revealed = record.revealed_at is not None
        return cls(
            epoch=record.epoch,
            commitment=record.commitment,
            seed=record.seed if revealed else None,  # the secret stays in the database until revealed
            first_roll=record.first_roll,
            last_roll=record.last_roll,
            committed_at=as_utc(record.committed_at).isoformat(),
            revealed_at=as_utc(record.revealed_at).isoformat() if record.revealed_at else None,
        )


class IntegrityPublic(BaseModel):
    """Everything an audit needs besides the rounds: the chain of every roll, the rules, the seeds."""

    fair: bool
    player_seed: str | None = None
    seeds: list[SeedPublic] = []
    chain_length: int
    chain_head: str | None = None
    legacy_rolls: int = 0
    dice: dict[str, Any] | None = None  # the dice.json copied into the story at its start
    modifiers: dict[str, dict[str, int]] = {}  # each character's number variables that checks add
    # A forked story's parent, round, inherited rolls and the hash they end in, and its chain's origin; its `rolls`
    # then begin with the inherited ones (gm.store._forks).
    forked_from: dict[str, Any] | None = None
    rolls: list[RollPublic]
    # The sheets the story started with (gm.world.sheet; null where none can change), and its sheet changes' count
    # and last hash: the audit recomputes the sheets from these and the rounds' changes.
    sheet_start: dict[str, Any] | None = None
    sheet_length: int = 0
    sheet_head: str | None = None
    # The chain of the messages seats sent (gm.transcript.table), with its length and head; empty without seats.
    messages: list[MessagePublic] = []
    messages_length: int = 0
    messages_head: str | None = None


class PagePublic(BaseModel):
    """Which of a story's rounds a page of its transcript holds (`GET /api/stories/{id}?after=&limit=`).

    A story's rounds are numbered 1 to `rounds`; a page holds those numbered above `after`, at most `limit`,
    oldest first (by default the newest `limit`). `first` and `last` are its first and last round (null for a
    page of none); `earlier` and `later` say whether rounds before or after the page exist (ask for them with
    `after` = 0 and `limit`, or `after` = `last`). On a page that is not `whole`, `integrity` holds only the
    links of the page's rounds (their rolls and the table's messages they settled, and those of a round not yet
    accepted on the newest page): the whole chain is behind `GET .../audit` and in `gm show --json`.
    """

    rounds: int
    after: int
    limit: int
    first: int | None = None
    last: int | None = None
    earlier: bool
    later: bool
    whole: bool


class TranscriptPublic(BaseModel):
    """The story: what `gm show --json` prints (whole) and `GET /api/stories/{id}` answers (a page of rounds)."""

    story: StoryPublic
    rounds: list[RoundPublic]
    integrity: IntegrityPublic | None = None  # absent only in transcripts exported before gm kept one
    page: PagePublic | None = None  # the rounds a page holds (the API's); null for a whole transcript


def outcomes_from(stored: Sequence[Mapping[str, Any]]) -> list[OutcomePublic]:
    """Outcomes from the copy a round keeps of them."""
    return [OutcomePublic(character=o["character"], result=o["result"], roll=o.get("roll")) for o in stored]
