"""Dice notation split into tokens, for `gm.dice.parser`: numbers, the letters and signs of the grammar,
and anything else as an `unknown` token the parser reports with what it expected there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TokenKind = Literal["number", "d", "%", "keep", "+", "-", "r", "ro", "!", "!!", "compare", "f", "unknown", "end"]

_DIGITS = frozenset("0123456789")  # str.isdigit() would let full-width digits through
_SPACES = frozenset(" \t")
_KEEP_MODES = frozenset({"kh", "kl", "dh", "dl"})


@dataclass(frozen=True, slots=True)
class Token:
    """One lexical piece of a notation; `column` is 1-based, `spaced` says whitespace came before it."""

    kind: TokenKind
    text: str
    column: int
    spaced: bool


def tokenize(text: str) -> list[Token]:
    """Split notation into tokens; characters outside the grammar become `unknown` tokens for the parser
    to report with what it expected there."""
    tokens: list[Token] = []
    lowered = text.lower()
    index, spaced = 0, False
    while index < len(lowered):
        char = lowered[index]
        if char in _SPACES:
            index, spaced = index + 1, True
            continue
        start = index
        if char in _DIGITS:
            while index < len(lowered) and lowered[index] in _DIGITS:
                index += 1
            kind: TokenKind = "number"
        elif lowered[index : index + 2] in _KEEP_MODES:
            index += 2
            kind = "keep"
        elif lowered[index : index + 2] in ("ro", "!!", "<=", ">="):
            index += 2
            kind = "compare" if lowered[start] in "<>" else lowered[start:index]  # type: ignore[assignment]
        elif char in "<>=":
            index += 1
            kind = "compare"
        elif char in ("d", "%", "+", "-", "r", "!", "f"):
            index += 1
            kind = char  # type: ignore[assignment]  # the single-character kinds share their text
        else:
            # A run of letters reads better in an error ("str") than its first letter alone.
            index += 1
            while char.isalpha() and index < len(lowered) and lowered[index].isalpha():
                index += 1
            kind = "unknown"
        tokens.append(Token(kind, lowered[start:index], start + 1, spaced))
        spaced = False
    tokens.append(Token("end", "", len(text) + 1, spaced))
    return tokens


def describe(token: Token) -> str:
    """How a token is shown in an error message."""
    if token.kind == "end":
        return ""
    if token.text.isprintable():
        return f"'{token.text}'"
    return " ".join(f"U+{ord(char):04X}" for char in token.text)
