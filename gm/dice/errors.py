"""The one error family of the dice engine: every bad notation or roll request raises a DiceError."""

from __future__ import annotations

from gm.errors import UsageError


class DiceError(UsageError, ValueError):
    """A notation or a roll request that cannot be used; the message is one sentence a player can act on.

    `notation` is the text as given, `column` the 1-based column where the problem starts (None when the
    problem is the notation as a whole).
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
