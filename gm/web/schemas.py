"""The story API's shapes as its OpenAPI description tells them: bodies in, answers out, and every error.

Every error the API answers is `{"error": "<one sentence>"}` (`ErrorOut`), whatever its status, and
each route documents the statuses it can answer (`errors(...)`): the fuzz test
(tests/web/test_api_fuzz.py) holds the server to this description. The statuses are mapped from gm's
errors in one place, `gm.web._errors`; 400 for a Host this server does not answer to and 413 for a
body over 64 KB come from the request guards in `gm.web._limits`, before any route.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gm.engine.commands import MAX_LINE
from gm.transcript.shapes import QuestionPublic, RoundPublic, StoryPublic
from gm.transcript.table import SeatPublic


class ErrorOut(BaseModel):
    """Every error the API answers: one sentence saying what was wrong, and where."""

    error: str


ERRORS: dict[int, str] = {
    400: "A bad request: a command or dice notation that cannot be played (or text holding a NUL), or a Host "
    "header this server does not answer to.",
    401: "The request needs a token (Authorization: Bearer ...), or the server's API token is wrong.",
    403: "A seat's token asking for what only the story's owner may do, or for another seat's part.",
    404: "No such story for this token (an unknown story and a wrong token look the same), or no such world.",
    409: "Another round of this story is being played right now, there is no round to play again yet, a round "
    "waits for the player's dice (or none does, for faces and abandon), or (for a reveal) the story has no fair dice.",
    413: "The request body is over 64 KB (with or without a Content-Length).",
    422: "The request body is not UTF-8, not JSON, or not the shape documented for it.",
    502: "The game master could not finish the round, or the model could not be reached; the story is "
    "unchanged and rolls made are kept.",
    503: "The database cannot be used right now (a full disk, a server gone), or the server is stopping; nothing "
    "was half-written. Retry-After says when to try again.",
}


ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}


def errors(*statuses: int, database: bool = True) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route: each status it can answer with its `{"error"}` shape and what it means.

    Every route may answer 400 (a Host this server does not answer to) and 413 (a body too large), and every
    route that uses the database 503 (gm.web._errors answers any database failure so).
    The content is spelt out (not `model=`), so the stream routes document their errors as JSON too.
    """
    return {
        status: {"description": ERRORS[status], "content": {"application/json": {"schema": ERROR_REF}}}
        for status in sorted({400, 413, *statuses, *([503] if database else [])})
    }


def tidy_openapi(spec: dict[str, Any]) -> dict[str, Any]:
    """FastAPI's description, with the API's error shape in place of FastAPI's own.

    FastAPI documents a 422 `{"detail": [...]}` on every route with a parameter; this API answers
    invalid requests with `{"error"}`, and only where a body can be invalid (`errors(422)`). So the
    422s FastAPI added are dropped, with their two schemas, and `ErrorOut` is added to the components.
    """
    for operation in (op for path in spec.get("paths", {}).values() for op in path.values()):
        invalid = operation.get("responses", {}).get("422", {})
        if "HTTPValidationError" in str(invalid.get("content", "")):
            del operation["responses"]["422"]
    schemas = spec.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas["ErrorOut"] = ErrorOut.model_json_schema()
    return spec


EVENT_STREAM: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-sent events: `working` (a model call starts), `roll` (each roll, in the transcript's "
        "shape), `refusal` (drop what was shown of a refused ending), `narration`, `asking` (the round paused "
        "for the player's dice: the question), then `done` (with the round, as the JSON endpoint answers it) "
        'or `failed` (`{"error": "<one sentence>"}`).',
        # Before OpenAPI 3.2 (FastAPI writes 3.1) an event stream's `schema` describes each event.
        "content": {
            "text/event-stream": {
                "schema": {
                    "type": "object",
                    "required": ["event", "data"],
                    "properties": {
                        "event": {
                            "enum": ["working", "roll", "refusal", "narration", "asking", "gathering", "done", "failed"]
                        },
                        "data": {"type": "string", "contentMediaType": "application/json"},
                    },
                }
            }
        },
    }
}


class StoryIn(BaseModel):
    """A story to start from one of the server's worlds."""

    world: str = Field(max_length=63, description="the world's folder name, as /api/worlds lists it")
    dice: Literal["shown", "hidden"] = "shown"
    judge: Literal["on", "off"] | None = Field(
        default=None,
        description="'off' plays the story without the narration judge (it then says so); "
        "by default, the server's choice. The judge's model is the server's.",
    )
    fair: bool = Field(
        default=False, description="provably fair dice: derived from a seed committed now (gm.integrity.fair)"
    )
    player_seed: str | None = Field(
        default=None, max_length=200, description="with fair: the player's own seed, mixed into the dice"
    )
    dice_from: Literal["engine", "player"] = Field(
        default="engine",
        description="'player': every check pauses its round and asks the player to roll at the table and "
        "type the faces (POST .../faces); not with fair",
    )


class MessageIn(BaseModel):
    """What the player typed: words for the game master, or a command such as `/roll 2d6+1 pick the lock`."""

    text: str = Field(
        min_length=1, max_length=MAX_LINE, pattern=r"\S", description="at least one character that is not a space"
    )


class FacesIn(BaseModel):
    """The faces the player rolled at the table for the check the round waits on, such as "14" or "3 5 6 1"."""

    faces: str = Field(min_length=1, max_length=1000, description="whole numbers, in order, separated by spaces")


class AbandonedOut(BaseModel):
    """The round that waited for dice and was dropped; its rolls stay in the story."""

    round: int


class SettingsIn(BaseModel):
    """The story's settings its owner can change (each left out stays as it is)."""

    dice: Literal["shown", "hidden"] | None = None
    rounds: Literal["free", "together"] | None = Field(
        default=None, description="how a shared table's round gathers its actions (docs/table.md)"
    )
    combat: bool | None = Field(default=None, description="together rounds are ordered by rolled initiative")
    round_timer: int | None = Field(
        default=None, ge=0, le=86_400, description="seconds before a together round may be closed by any seat; 0: none"
    )


class SeatIn(BaseModel):
    """A seat to invite a player to: one player character of the story's world."""

    character: str = Field(min_length=1, max_length=200, description="a player character of the story's world")
    name: str = Field(default="", max_length=200, description="a label for the person invited")


class SeatSettingsIn(BaseModel):
    """A seat's own settings."""

    dice: Literal["shown", "hidden"]


class InvitedOut(BaseModel):
    """A seat just made, with its secret token (shown this once; stored only as a hash) and the play page's link."""

    seat: SeatPublic
    token: str
    invite: str


class GatheringOut(BaseModel):
    """A together round still gathering actions: who has acted, who it waits for, and when it may be closed."""

    mode: Literal["free", "together"]
    acted: list[str]
    waiting_for: list[str]
    deadline: str | None = None


class WorldOut(BaseModel):
    """A world of the server's worlds folder; one whose files fail their check is listed with its `problem`."""

    name: str = Field(description="the world's folder name, to start a story with")
    title: str = Field(description="the world's title (its folder name when the world is broken)")
    premise: str = Field(description="the world's premise, in a sentence or two (empty when the world is broken)")
    players: list[str] = Field(description="the characters a player plays")
    checks: int = Field(description="how many dice checks the world has")
    problem: str | None = Field(None, description="why no story can start from this world, or null when one can")


class StartedOut(BaseModel):
    """A story just started, with its secret token (shown this once; it is stored only as a hash)."""

    story: StoryPublic
    token: str


class RoundOut(RoundPublic):
    """A round just played, in the transcript's shape, and whether it was a new telling of the last one."""

    regenerated: bool = False


class PlayedOut(BaseModel):
    """The answer to a message, a regenerate or the faces: the round played, or, in a story whose checks the
    player rolls at the table, `round` null and `asking` the question the round paused at."""

    round: RoundOut | None
    asking: QuestionPublic | None = None
    # A together round's action was taken, and the round waits for the others (docs/table.md); left out when null,
    # so a story without seats answers exactly as before.
    gathering: GatheringOut | None = Field(default=None, exclude_if=lambda value: value is None)
