"""What the engine tells an observer as rounds run: for counting (`gm serve`'s Prometheus metrics, gm.web._metrics).

The engine calls the installed `Observer` at a few points, each a plain method call that does nothing by
default: a round's end (accepted, paused for dice, or failed with its error's class), each refusal by its
kind (`referee`, `judge`, `tool`, `plain_answer`), each model call (its kind - `game_master`, `judge` or
`memory` - its latency and tokens), each judge verdict, and the round leases this process takes and
lets go. A library user may install their own (`observe(MyObserver())`); one observer per process.

The methods are called on the event loop or on a database worker thread (a refusal from a tool), so an
observer must be thread-safe, and quick: it runs inside the round.
"""

from __future__ import annotations

REFUSAL_KINDS = ("referee", "judge", "tool", "plain_answer")


class Observer:
    """The engine's events; each method does nothing here. Subclass it and override what you count."""

    def round_ended(self, outcome: str, error: BaseException | None = None) -> None:
        """A round ended: `accepted`, `paused` (for the player's dice) or `failed` (with the error raised)."""

    def refused(self, kind: str) -> None:
        """A proposed ending or tool call was refused and sent back to the model (`REFUSAL_KINDS`)."""

    def model_called(self, kind: str, seconds: float, prompt_tokens: int, completion_tokens: int) -> None:
        """A model call of `kind` (`game_master`, `judge`, `memory`) answered after `seconds`."""

    def judged(self, told_as: str, agrees: bool) -> None:
        """The judge read one rolled outcome as told `told_as`; `agrees` when that is the rolled result."""

    def lease_taken(self) -> None:
        """A round of this process took its story's lease."""

    def lease_let_go(self) -> None:
        """A round of this process stopped holding its story's lease (accepted, paused, failed or lost)."""


_NOTHING = Observer()
_installed: list[Observer] = [_NOTHING]


def observer() -> Observer:
    """The observer the engine tells (one that counts nothing until `observe` installs another)."""
    return _installed[0]


def observe(chosen: Observer | None) -> None:
    """Install `chosen` as this process's observer (None: none again)."""
    _installed[0] = chosen or _NOTHING
