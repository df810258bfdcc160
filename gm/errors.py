"""Every error gm raises, grouped by who receives it (as pydantic-ai groups its errors).

    GmError                 the root: `except GmError` catches everything gm means to say
    ├── ModelRetry          for the model: a tool call it can correct; the round loop sends the
    │                       sentence back as the tool's result and counts it as a refusal
    ├── PlayError           for the player: this round could not be played (try again)
    │   ├── RoundFailed     the game master could not end the round within its bounds
    │   │   └── LeaseLost   the round outlived its hold on the story, so it was not saved
    │   └── StoryBusy       another round of the story is being played right now
    ├── UsageError          for the caller: a bad request to the library, the CLI or the API
    │                       (bad notation, a broken world file, an unknown story, nothing to
    │                       regenerate, a bad command)
    └── OperatorError       for whoever runs gm: the model is not configured or cannot be reached

Every message is one sentence that can be shown as it is. The web API turns each group into a
status in one place (`gm.web._errors`); the CLI catches `GmError` once.
"""

from __future__ import annotations


class GmError(Exception):
    """The root of gm's errors; its message is one sentence for whoever receives it."""


class ModelRetry(GmError):
    """A tool call the model can correct: the sentence goes back to it, and counts as a refusal."""


class PlayError(GmError):
    """The round could not be played; rolls made are kept, nothing else is written."""


class RoundFailed(PlayError):
    """The game master could not end the round in agreement with the dice within the round's bounds."""


class LeaseLost(RoundFailed):
    """The round's process lost the story's lease before the round was accepted, so it was not written."""


class StoryBusy(PlayError):
    """Another round of this story is being played right now."""


class UsageError(GmError):
    """A request to the library, the command line or the API that cannot be carried out as asked."""


class NotFound(UsageError):
    """No such story or world (or not one the caller may open)."""


class BrokenWorld(UsageError):
    """A world that exists but fails its check, so it cannot be played (the API answers 422)."""


class Unauthorized(UsageError):
    """A token is missing or wrong."""


class Conflict(UsageError):
    """The request does not fit the story's state (such as regenerating before any round)."""


class OperatorError(GmError):
    """Whoever runs gm must act: the model is not configured, cannot be reached, or rejects gm's requests."""
