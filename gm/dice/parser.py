"""Dice notation to an `Expression`: a hand-written tokenizer and a flat recursive-descent parser.

Grammar (case-insensitive; spaces and tabs only around `+` and `-`)::

    notation := term (("+" | "-") term)*
    term     := dice | number
    dice     := [number] "d" (number | "%") [keep]
    keep     := ("kh" | "kl" | "dh" | "dl") [number]

A notation starts with a term, so a leading sign is refused rather than guessed at. Limits: 100
characters, 8 terms, 100 dice in all, 1000 sides, constants up to 1,000,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from gm.dice.tree import Constant, Dice, Expression, Keep, KeepMode, Term
from gm.errors import DiceError, DiceLimitError, DiceSyntaxError

MAX_LENGTH = 100
MAX_TERMS = 8
MAX_DICE = 100
MAX_SIDES = 1000
MAX_CONSTANT = 1_000_000

TokenKind = Literal["number", "d", "%", "keep", "+", "-", "unknown", "end"]

_DIGITS = frozenset("0123456789")  # str.isdigit() would let full-width digits through
_SPACES = frozenset(" \t")
_KEEP_MODES = frozenset({"kh", "kl", "dh", "dl"})

EXPECT_TERM = "a number or dice"
EXPECT_AFTER_TERM = "'+', '-' or the end"
EXPECT_AFTER_DICE = "'kh', 'kl', 'dh', 'dl', '+', '-' or the end"
EXPECT_AFTER_NUMBER = "'d', '+', '-' or the end"
SPACE_HINT = " (a dice term is written without spaces, such as 4d6kh3)"


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
        elif char in ("d", "%", "+", "-"):
            index += 1
            kind = char  # type: ignore[assignment]  # the four single-character kinds share their text
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


def parse(text: str) -> Expression:
    """Parse dice notation into an immutable `Expression`, or raise a `DiceError` naming the column."""
    if not isinstance(text, str):
        raise DiceError("", f"dice notation must be text, not {type(text).__name__}")
    return _parse(text)


@lru_cache(maxsize=1024)  # the same few notations are parsed again and again in play
def _parse(text: str) -> Expression:
    if not text.strip():
        # A problem of the notation as a whole, so no column is named.
        raise DiceError("", "the dice notation is empty, expected a number or dice such as 2d6+1")
    if len(text) > MAX_LENGTH:
        raise DiceLimitError(text, f"the notation is {len(text)} characters long, at most {MAX_LENGTH} are allowed")
    return _Parser(text).notation()


class _Parser:
    """One pass over the tokens of one notation."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.position = 0

    @property
    def current(self) -> Token:
        return self.tokens[self.position]

    def advance(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def fail(self, expected: str) -> DiceSyntaxError:
        token = self.current
        return DiceSyntaxError(self.text, describe(token), token.column, expected)

    def notation(self) -> Expression:
        terms = [self.term(negative=False)]
        while self.current.kind in ("+", "-"):
            negative = self.advance().kind == "-"
            if len(terms) == MAX_TERMS:
                raise DiceLimitError(
                    self.text,
                    f"the term at column {self.current.column} is one too many, at most {MAX_TERMS} terms are allowed",
                    self.current.column,
                )
            terms.append(self.term(negative))
        if self.current.kind != "end":
            raise self.fail(self.expected_after(terms[-1]))
        total_dice = sum(term.count for term in terms if isinstance(term, Dice))
        if total_dice > MAX_DICE:
            raise DiceLimitError(self.text, f"{total_dice} dice in all, at most {MAX_DICE} are allowed")
        return Expression("".join(_written(term, index) for index, term in enumerate(terms)), tuple(terms))

    def expected_after(self, term: Term) -> str:
        """What could have followed a finished term, for the error about what did follow it."""
        if self.current.spaced:
            continues_term = self.current.kind in ("d", "keep", "number", "%")
            return EXPECT_AFTER_TERM + (SPACE_HINT if continues_term else "")
        if isinstance(term, Constant):
            return EXPECT_AFTER_NUMBER
        return EXPECT_AFTER_TERM if term.keep else EXPECT_AFTER_DICE

    def term(self, negative: bool) -> Term:
        token = self.current
        if token.kind == "number":
            self.advance()
            if self.current.kind == "d" and not self.current.spaced:
                return self.dice(negative, token)
            return Constant(self.number(token, "constant", 0, MAX_CONSTANT), negative, token.column)
        if token.kind == "d":
            return self.dice(negative, None)
        raise self.fail(EXPECT_TERM)

    def dice(self, negative: bool, count_token: Token | None) -> Dice:
        start = count_token.column if count_token else self.current.column
        count = self.number(count_token, "dice count", 1, MAX_DICE) if count_token else 1
        self.advance()  # the "d"
        sides_token = self.current
        if sides_token.spaced or sides_token.kind not in ("number", "%"):
            raise self.fail("a number of sides or '%'")
        self.advance()
        sides = 100 if sides_token.kind == "%" else self.number(sides_token, "number of sides", 1, MAX_SIDES)
        keep = None
        if self.current.kind == "keep" and not self.current.spaced:
            keep = self.keep(count)
        end = self.current.column if self.position < len(self.tokens) else len(self.text) + 1
        written = self.text[start - 1 : end - 1].strip().lower()
        return Dice(count, sides, keep, negative, written, start)

    def keep(self, count: int) -> Keep:
        keep_token = self.advance()
        mode: KeepMode = keep_token.text  # type: ignore[assignment]  # tokenize only emits the four modes
        how_many = 1
        shown = keep_token.text
        if self.current.kind == "number" and not self.current.spaced:
            number_token = self.advance()
            shown += number_token.text
            how_many = self.number(number_token, "keep count", 0, MAX_DICE)
        keeps = mode in ("kh", "kl")
        low, high = (1, count) if keeps else (1, count - 1)
        if not low <= how_many <= high:
            verb = "keep" if keeps else "drop"
            if high < low:
                problem = f"'{shown}' at column {keep_token.column} cannot drop dice from a single die"
            else:
                problem = (
                    f"'{shown}' at column {keep_token.column} would {verb} {how_many} of {count} dice, "
                    f"expected a count from {low} to {high}"
                )
            raise DiceLimitError(self.text, problem, keep_token.column)
        return Keep(mode, how_many)

    def number(self, token: Token, what: str, low: int, high: int) -> int:
        # Over-long digit runs are refused before int() so no input can make conversion slow.
        value = int(token.text) if len(token.text.lstrip("0")) <= 9 else high + 1
        if value < low or value > high:
            shown = token.text if len(token.text) <= 12 else token.text[:11] + "\u2026"
            raise DiceLimitError(
                self.text,
                f"{what} {shown} at column {token.column} is out of range, expected {low} to {high:,}",
                token.column,
            )
        return value


def _written(term: Term, index: int) -> str:
    """The normalised text of one term, with its sign when it is not the first."""
    sign = "-" if term.negative else ("+" if index else "")
    body = term.text if isinstance(term, Dice) else str(term.value)
    return sign + body
