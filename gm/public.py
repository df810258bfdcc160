"""The public shapes of a story: a roll, an outcome, a round, a story and its transcript.

These are the one shape each idea has outside the database. The library's `RoundResult`,
`gm show --json`, the web API and its event stream all use them, built from the stored records
here and nowhere else (named in families, as full-stack-fastapi-template names them: `Story` is a
table in `gm.records`, `StoryPublic` is what anyone outside sees of it).

    {"story": {"id", "title", "created_at", "rounds", "settings": {"dice": "shown" | "hidden",
                                                                   "judge": "on" | "off"},
               "notices": [str]},
     "rounds": [{"number", "player_text", "narration", "refusals": [str],
                 "outcomes": [{"character", "result", "roll"}],
                 "judge": null | {"model", "verdicts": [{"character", "told_as", "quote"}]},
                 "rolls": [{"id", "kind", "character", "check", "check_name", "notation", "reason",
                            "target", "modifier", "faces", "total", "successes", "value",
                            "band", "result", "critical", "void", "dice"}]}]}

`kind` is `check` (roll_check), `dice` (roll_dice) or `player` (`/roll`); `dice` is the itemised
line, such as "1d20 (14) = 14"; check fields are null for the other kinds.

The stored roll (`gm.records.RollRecord`, and its copies inside a round) names two fields
differently: `check_key` is `check` here and `line` is `dice`. Up to version 0.1 the library's
`RoundResult.rolls` were those stored dicts; they are now `RollPublic`, named as the transcript
and the API always named them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from gm.records import RollRecord, RoundRecord, Story
    from gm.worlddef import World

RollKind = Literal["check", "dice", "player"]
Result = Literal["succeeded", "partial", "failed"]
DiceSetting = Literal["shown", "hidden"]


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

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any] | RollRecord, world: World | None = None) -> RollPublic:
        """A roll from its record, or from the copy of it a round or memory keeps; `world` names the check."""
        data = stored if isinstance(stored, Mapping) else stored.model_dump(mode="json")
        check_key = data.get("check_key")
        check_name = None
        if check_key and world is not None and world.rules is not None and check_key in world.rules:
            check_name = world.rules[check_key].name
        return cls(
            id=data["id"],
            kind=data["kind"],
            character=data.get("character"),
            check=check_key,
            check_name=check_name,
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

    @classmethod
    def from_record(cls, record: RoundRecord, world: World | None) -> RoundPublic:
        return cls(
            number=record.number,
            player_text=record.player_text,
            narration=record.narration,
            outcomes=outcomes_from(record.outcomes),
            rolls=[RollPublic.from_stored(roll, world) for roll in record.rolls],
            refusals=list(record.refusals),
            judge=JudgementPublic.model_validate(record.judgement) if record.judgement else None,
        )


JUDGE_OFF_NOTICE = "narrations are not judged"


class StorySettings(BaseModel):
    """A story's settings: the Dice setting (the player's to change), and whether narrations are judged."""

    dice: DiceSetting = "shown"
    judge: Literal["on", "off"] = "on"


class StoryPublic(BaseModel):
    """A story as its player sees it: never its token, lease or the world's definitions."""

    id: str
    title: str
    created_at: str
    rounds: int
    settings: StorySettings
    notices: list[str] = []  # what a player should know of how the story is played, such as "narrations are not judged"

    @classmethod
    def from_record(cls, story: Story) -> StoryPublic:
        judge: Literal["on", "off"] = "off" if story.settings.get("judge") == "off" else "on"
        return cls(
            id=story.id,
            title=story.title,
            created_at=story.created_at.isoformat(),
            rounds=story.rounds,
            settings=StorySettings(dice=story.settings.get("dice", "shown"), judge=judge),
            notices=[JUDGE_OFF_NOTICE] if judge == "off" else [],
        )


class TranscriptPublic(BaseModel):
    """The whole story: what `gm show --json` prints and `GET /api/stories/{id}` answers."""

    story: StoryPublic
    rounds: list[RoundPublic]


def outcomes_from(stored: Sequence[Mapping[str, Any]]) -> list[OutcomePublic]:
    """Outcomes from the copy a round keeps of them."""
    return [OutcomePublic(character=o["character"], result=o["result"], roll=o.get("roll")) for o in stored]
