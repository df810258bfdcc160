"""Every error gm raises, grouped by who receives it (as pydantic-ai groups its errors).

    GmError                     the root: `except GmError` catches everything gm means to say
    ├── UsageError              for the caller: a request to the library, the CLI, the API or the
    │   │                       editor that cannot be carried out as asked
    │   ├── NotFound            no such story or world (or not one the caller may open)
    │   │   └── StoryNotFound   no story has that id
    │   ├── BrokenWorld         a world that exists but fails its check (the API answers 422)
    │   ├── Unauthorized        a token is missing or wrong
    │   ├── Forbidden           a seat's token asking for what only the story's owner may do
    │   ├── Conflict            the request does not fit the state it meets
    │   │   ├── NotFair         a seed asked of a story that does not use fair dice
    │   │   ├── StoryEnded      the story has ended and plays no more rounds
    │   │   ├── RoundWaiting    a round waits for the player's dice; no other starts until it ends
    │   │   ├── TooManyViewers  the story has as many live streams on this server as it keeps open
    │   │   └── StaleFile       the editor's file changed on disk after its form was opened
    │   ├── AmbiguousStory      a shortened story id that starts more than one story's id
    │   ├── UnstorableText      text no story can store (a NUL, half a surrogate pair)
    │   ├── DiceError           bad dice notation or roll request: the dice engine's one family
    │   │   ├── DiceSyntaxError text that is not dice notation
    │   │   └── DiceLimitError  notation that asks for too much or too little
    │   ├── ProblemsError       a world file that cannot be used, with every Problem found in it
    │   ├── UnknownCheck        a check key dice.json does not have
    │   ├── UnknownCharacter    a character name the world does not know
    │   ├── CharacterCannotRoll a check whose modifier variable the character lacks
    │   ├── CheckRollError      a check that cannot be settled as asked (target missing or unwanted)
    │   │   └── BandGapError    the value a roll gave falls in no band: the roll is void
    │   ├── WrongFaces          typed dice faces that do not answer the question asked
    │   ├── PlayerSeedError     a player's seed for fair dice that cannot be used
    │   ├── CommandError        a chat line's /command that cannot be used
    │   ├── AuditCommandError   bad input to `gm audit` or `gm reveal`
    │   ├── CompatError         a chat request on /v1 gm cannot play as it stands
    │   └── UnsafeTarget        the editor was asked to write through a link or into a FIFO
    ├── PlayError               for the player: this round could not be played (try again)
    │   ├── RoundFailed         the game master could not end the round within its bounds
    │   │   ├── LeaseLost       the round outlived its hold on the story, so it was not saved
    │   │   ├── ChainMoved      a fair roll's place in the story's chain was taken meanwhile
    │   │   ├── JudgeFailed     the judge gave no usable verdict on the narration
    │   │   └── RehearsalStuck  the rehearsal stand-in's own ending was refused
    │   ├── StoryBusy           another round of the story is being played right now
    │   │   └── LeaseBusy       (signal) the story's lease is held; retried, then told as StoryBusy
    │   └── ServerStopping      the server is draining before it stops: no new round starts (503)
    ├── OperatorError           for whoever runs gm: gm cannot work as it is set up
    │   ├── SettingsError       a setting that cannot be used (a GM_* variable, a flag, a settings field)
    │   ├── PromptsError        the prompts folder lacks a prompt, or holds an unusable one
    │   └── ModelError          the model cannot be used
    │       ├── ModelNotConfigured   no model named, or no endpoint (a SettingsError too)
    │       ├── ModelUnavailable     the server cannot be reached, keeps failing, or answers no completion
    │       ├── ModelRequestRejected the server refused the request (a 4xx retrying cannot fix)
    │       └── EmptyMemory          the memory keeper wrote no usable text (its memory waits)
    └── ModelRetry              (signal) for the model: a tool call it can correct
        └── SheetRefused        a change_sheet call the character's sheet cannot take

Every message is one sentence that can be shown as it is. The web API turns each group into a
status in one place (`gm.web._errors`); the CLI catches `GmError` once (exit code 2). An error that is
also a `ValueError`, `KeyError` or `LookupError` stays one, so code written against the builtin keeps
working.

Signals are control flow, not errors: they are raised by one part of gm for another part of gm to
catch, as pydantic-ai's `ModelRetry` and `CallDeferred` are, and never reach a user as they are.

    ModelRetry      (gm.errors)              a tool call the model can correct: the round loop sends
                                             the sentence back as the tool's result and counts it as
                                             a refusal. A `GmError` so that one that strays still
                                             reads as a sentence (502 on the API), never a traceback.
    LeaseBusy       (gm.errors)              the store's answer when another round holds the story's
                                             lease: the lease tries again for `wait_seconds`, then
                                             lets it through, where it is the `StoryBusy` it derives from.
    FacesNeeded     (gm.engine.typed_dice)   a check in a story whose dice the player rolls: the round
                                             pauses and asks the question it carries. Not a `GmError`,
                                             and defined beside the question it carries (a transcript
                                             shape, a layer above gm.errors).
    HttpFailure     (gm.models._transport)   a model request that got no 2xx answer (`StatusFailure`,
                                             `ConnectionFailure`, `TimedOut`): `ModelClient` retries it
                                             or words it as a `ModelError`; it never leaves gm.models.

For the test author (gm.testing), not the player:

    ScriptError     (gm.errors)              an `AssertionError`: the in-process fake model's script ran
                                             out or broke, or the engine's request was invalid.

This module is the bottom layer: it imports nothing of gm. `Problem`, the one finding a
`ProblemsError` carries, lives here for that reason; `gm.problems` finds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "AmbiguousStory",
    "AuditCommandError",
    "BandGapError",
    "BrokenWorld",
    "ChainMoved",
    "CharacterCannotRoll",
    "CheckRollError",
    "CommandError",
    "CompatError",
    "Conflict",
    "DiceError",
    "DiceLimitError",
    "DiceSyntaxError",
    "EmptyMemory",
    "Forbidden",
    "GmError",
    "JudgeFailed",
    "LeaseBusy",
    "LeaseLost",
    "ModelError",
    "ModelNotConfigured",
    "ModelRequestRejected",
    "ModelRetry",
    "ModelUnavailable",
    "NotFair",
    "NotFound",
    "OperatorError",
    "PlayError",
    "PlayerSeedError",
    "Problem",
    "ProblemsError",
    "PromptsError",
    "RehearsalStuck",
    "RoundFailed",
    "RoundWaiting",
    "ScriptError",
    "ServerStopping",
    "SettingsError",
    "SheetRefused",
    "StaleFile",
    "StoryBusy",
    "StoryEnded",
    "StoryNotFound",
    "TooManyViewers",
    "Unauthorized",
    "UnknownCharacter",
    "UnknownCheck",
    "UnsafeTarget",
    "UnstorableText",
    "UsageError",
    "WrongFaces",
]


class GmError(Exception):
    """The root of gm's errors; its message is one sentence for whoever receives it."""


# For the caller: a request to the library, the command line, the API or the editor.


class UsageError(GmError):
    """A request to the library, the command line or the API that cannot be carried out as asked."""


class NotFound(UsageError):
    """No such story or world (or not one the caller may open)."""


class BrokenWorld(UsageError):
    """A world that exists but fails its check, so it cannot be played (the API answers 422)."""


class StoryNotFound(NotFound, LookupError):
    """No story has that id."""

    def __init__(self, story_id: str) -> None:
        super().__init__(f"there is no story '{_printable_id(story_id)}'")


def _printable_id(story_id: str) -> str:
    """An id as typed, or escaped when it holds what no story id can (a NUL, half a surrogate pair from bytes
    that were not UTF-8), so that the sentence itself can be shown and stored."""
    try:
        story_id.encode("utf-8")
    except UnicodeEncodeError:
        return story_id.encode("unicode_escape").decode("ascii")
    return story_id.encode("unicode_escape").decode("ascii") if "\x00" in story_id else story_id


class Unauthorized(UsageError):
    """A token is missing or wrong."""


class Forbidden(UsageError):
    """A seat's token asking for what only the story's owner may do, or for another seat's part (gm.engine.table)."""


class Conflict(UsageError):
    """The request does not fit the state it meets (such as regenerating before any round)."""


class NotFair(Conflict):
    """A seed was asked of a story that does not use fair dice."""


class StoryEnded(Conflict):
    """The story has ended: it plays no more rounds, and its secret rolls are shown."""

    def __init__(
        self, message: str = "this story has ended; its secret rolls are shown, and it plays no more rounds"
    ) -> None:
        super().__init__(message)


class RoundWaiting(Conflict):
    """A round of the story waits for the player's dice: no other round starts until it is answered or abandoned."""


class TooManyViewers(Conflict):
    """The story already has as many live streams on this server as one server keeps open (gm.web._live)."""


class StaleFile(Conflict):
    """The file changed on disk after the editor's form being saved was opened; `current` is its version now."""

    def __init__(self, current: str) -> None:
        super().__init__("the file changed on disk after this form was opened")
        self.current = current


class AmbiguousStory(UsageError):
    """A shortened story id that is the start of more than one story's id."""


class UnstorableText(UsageError, ValueError):
    """Text given to the library that no story can store; the message names what it is and where the character is."""


class DiceError(UsageError, ValueError):
    """A notation or a roll request that cannot be used; the message is one sentence a player can act on.

    The dice engine's one error family (`gm.dice` exports it too). `notation` is the text as given,
    `column` the 1-based column where the problem starts (None when the problem is the notation as a whole).
    """

    def __init__(self, notation: str, problem: str, column: int | None = None) -> None:
        self.notation = notation
        self.problem = problem
        self.column = column
        shown = _shorten(notation)
        super().__init__(f"{shown}: {problem}" if shown.strip() else problem)


class DiceSyntaxError(DiceError):
    """Text that is not dice notation: something unexpected where `expected` was needed."""

    def __init__(self, notation: str, found: str, column: int, expected: str) -> None:
        self.found = found
        self.expected = expected
        if found:
            problem = f"unexpected {found} at column {column}, expected {expected}"
        else:
            problem = f"unexpected end at column {column}, expected {expected}"
        super().__init__(notation, problem, column)


class DiceLimitError(DiceError):
    """Well-formed notation that asks for too much or too little (dice, sides, terms, keep counts...)."""


def _shorten(notation: str, width: int = 40) -> str:
    """Echo long notation in part, so that an error message stays one readable line."""
    return notation if len(notation) <= width else notation[: width - 1] + "\u2026"


Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding in an author's file: `path` is a JSON path such as `$.checks[0].bands[2].max`, `message` one
    sentence.

    Errors make the file unusable; warnings point at something that is allowed but probably a mistake.
    `file` names the file the path is in (`world.json`, `dice.json`) where a finding spans several files;
    None when there is only the one file in question. `gm.problems` finds them.
    """

    path: str
    message: str
    severity: Severity = "error"
    file: str | None = None

    @property
    def where(self) -> str:
        """The file (if named) and the JSON path, as an author would look them up; the path `$` (the
        whole file, such as a syntax error's) is left out, since it tells an author nothing."""
        path = "" if self.path == "$" else self.path
        return " ".join(part for part in (self.file, path) if part)

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}" if self.where else f"{self.severity}: {self.message}"


class ProblemsError(UsageError, ValueError):
    """A file that cannot be used, with every error found in it (warnings ride along)."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        errors = [problem for problem in problems if problem.severity == "error"]
        first = errors[0] if errors else problems[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        where = f"{first.where}: " if first.where else ""
        super().__init__(f"{source}: {where}{first.message}{more}")

    @property
    def errors(self) -> list[Problem]:
        return [problem for problem in self.problems if problem.severity == "error"]


class _NamedLookup(UsageError, KeyError):
    """A name looked up and not found; a `KeyError` too, for code that looks things up as in a mapping."""

    def __str__(self) -> str:
        # KeyError would show the message in quotes, as if it were the missing key itself.
        return str(self.args[0])


class UnknownCheck(_NamedLookup):
    """A check key that dice.json does not have (or a world without dice.json); the message lists the checks."""


class UnknownCharacter(_NamedLookup):
    """A character name the world does not know; the message lists the names it does."""


class CharacterCannotRoll(UsageError, ValueError):
    """A check whose modifier variable the character lacks, or has as something other than a whole number."""

    def __init__(self, check_key: str, character: str, variable: str, value: object) -> None:
        self.check_key = check_key
        self.character = character
        self.variable = variable
        if value is None:
            message = f"check '{check_key}' cannot be rolled for {character}, who has no number variable"
            super().__init__(f"{message} '{variable}'")
        else:
            super().__init__(
                f"check '{check_key}' cannot be rolled for {character}, whose variable '{variable}'"
                f" is {value!r}, not a whole number"
            )


class CheckRollError(UsageError, ValueError):
    """A check that cannot be settled as asked: the target is missing or not wanted, or the value is in a gap."""


class BandGapError(CheckRollError):
    """The value a roll gave falls in no band of the check; such a roll is void."""

    def __init__(self, check_key: str, value: int) -> None:
        self.check_key = check_key
        self.value = value
        super().__init__(f"check '{check_key}' has no band for the value {value}, so the roll is void")


class WrongFaces(UsageError):
    """Faces that do not answer the question: one sentence, and the question stands."""


class PlayerSeedError(UsageError, ValueError):
    """A player's seed that cannot be used; one sentence saying why."""


class CommandError(UsageError, ValueError):
    """A chat line that cannot be used; the message is one sentence for the player."""


class AuditCommandError(UsageError, ValueError):
    """Bad input to `gm audit` or `gm reveal`; one `error:` line."""


class CompatError(UsageError):
    """A chat request gm cannot play as it stands; the message is one sentence for the player."""


class UnsafeTarget(UsageError):
    """The path the editor would save to is a symbolic link, or something other than a regular file (a FIFO)."""


# For the player: the round could not be played.


class PlayError(GmError):
    """The round could not be played; rolls made are kept, nothing else is written."""


class RoundFailed(PlayError):
    """The game master could not end the round in agreement with the dice within the round's bounds."""


class LeaseLost(RoundFailed):
    """The round's process lost the story's lease before the round was accepted, so it was not written."""


class ChainMoved(RoundFailed):
    """A fair roll was derived for a place in the story's chain, or from a seed, that is no longer the next one."""


class JudgeFailed(RoundFailed):
    """The judge answered twice without a usable verdict, so no one could check the narration."""


class RehearsalStuck(RoundFailed):
    """The engine refused the rehearsal's own ending; saying it again would not help, so the round fails."""


class StoryBusy(PlayError):
    """Another round of this story is being played right now."""


class LeaseBusy(StoryBusy):
    """A signal: another holder has the story's lease, so the transaction that would have taken it did nothing.

    The round's lease (`gm.engine.lease`) tries again until its wait runs out, then lets it through,
    where it is the `StoryBusy` it derives from.
    """

    def __init__(self) -> None:
        super().__init__("another round of this story is being played right now; try again when it is done")


class ServerStopping(PlayError):
    """The server is draining before it stops (`gm serve` got SIGTERM): rounds in flight finish, no new one starts.

    The web API answers 503 with `Retry-After`; another server behind the same proxy can play the round."""


# For whoever runs gm.


class OperatorError(GmError):
    """Whoever runs gm must act: the model is not configured, cannot be reached, or rejects gm's requests."""


class SettingsError(OperatorError, ValueError):
    """A setting that cannot be used: a `GM_*` or `OPENAI_*` variable (gm.config), a flag, or a field of a settings
    object.

    The message names the setting and says what it must be (`GM_LEASE_SECONDS must be a number of seconds,
    not 'abc'`). Raised where the settings are built, before anything runs with them.
    """


class PromptsError(OperatorError):
    """The prompts folder gm was pointed at lacks a prompt file, or holds one that is empty or unreadable."""


class ModelError(OperatorError):
    """Something went wrong reaching the model; the text is one sentence for whoever runs gm."""


class ModelNotConfigured(ModelError, SettingsError):
    """No model is named, or no endpoint, or a tools mode gm does not know: the settings need fixing."""


class ModelUnavailable(ModelError):
    """The server could not be reached, kept failing after retries, or did not answer with a chat completion."""

    def __init__(self, message: str, *, attempts: int, reason: str) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.reason = reason


class ModelRequestRejected(ModelError):
    """The server refused the request (a 4xx that retrying cannot fix, including an exhausted quota)."""

    def __init__(self, message: str, *, status: int, server_message: str, code: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.server_message = server_message
        self.code = code
        self.tools_refused = False  # the server or model takes no tools (see gm.models._textcalls.refuses_tools)


class EmptyMemory(ModelError):
    """The memory keeper answered with no usable text; the memory is left for a later round's catch-up."""


# Signals (see the module docstring).


class ModelRetry(GmError):
    """A signal: a tool call the model can correct. The sentence goes back to it as the tool's result, and counts
    as a refusal."""


class SheetRefused(ModelRetry):
    """A change the character's sheet cannot take (gm.world.sheet): `kind` names the sort of mistake
    (unknown_character, unknown_variable, fixed, wrong_type, out_of_bounds, not_held, unknown_condition,
    too_many), the message says why in one sentence the model can act on."""

    def __init__(self, kind: str, sentence: str) -> None:
        super().__init__(sentence)
        self.kind = kind
        self.sentence = sentence


# For the test author.


class ScriptError(AssertionError):
    """The in-process fake could not answer: its script ran out or broke, or the request or answer was invalid.

    A bug in the test or in the engine's request, never a model failure: the engine does not catch it.
    """
