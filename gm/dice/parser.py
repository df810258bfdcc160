"""Dice notation to an `Expression`: a hand-written tokenizer and a flat recursive-descent parser.

Grammar (case-insensitive; spaces and tabs only around `+` and `-`)::

    notation := term (("+" | "-") term)*
    term     := dice | number
    dice     := [number] "d" (number | "%" | "f") modifier*
    modifier := keep | reroll | explode | count          (each at most once, in any order)
    keep     := ("kh" | "kl" | "dh" | "dl") [number]
    reroll   := ("r" | "ro") [faces]                      (no faces: the 1s)
    explode  := ("!" | "!!") [faces]                      (no faces: the highest face)
    count    := compare ["f" faces]                       (successes, and the failures they lose)
    faces    := compare | number                          (a bare number is that face)
    compare  := ("<" | "<=" | ">" | ">=" | "=") number

A notation starts with a term, so a leading sign is refused rather than guessed at. Limits: 100
characters, 8 terms, 100 dice rolled in all (each die's explosions up to its cap included), 1000
sides, constants up to 1,000,000. An exploding die explodes at most as often as the 100 dice leave
room for: the dice that do not explode are set aside, and the rest is shared evenly (`3d6!` up to 32
times a die, `10d10!` 9 times), so that exact odds stay within reach (`gm.dice.odds`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from gm.dice._tokens import Token, describe, tokenize
from gm.dice.tree import Constant, Dice, Explode, Expression, FaceSet, Keep, KeepMode, Reroll, Successes, Term
from gm.errors import DiceError, DiceLimitError, DiceSyntaxError

MAX_LENGTH = 100
MAX_TERMS = 8
MAX_DICE = 100
MAX_SIDES = 1000
MAX_CONSTANT = 1_000_000

_MODIFIERS = frozenset({"keep", "r", "ro", "!", "!!", "compare", "f"})
ANY_VALUE = 10**9  # the open end of a count's comparison: a compounded die can pass any number of sides

EXPECT_TERM = "a number or dice"
EXPECT_AFTER_TERM = "'+', '-' or the end"
EXPECT_AFTER_DICE = "'kh', 'kl', 'dh', 'dl', 'r', 'ro', '!', a comparison such as '>=5', '+', '-' or the end"
EXPECT_AFTER_NUMBER = "'d', '+', '-' or the end"
SPACE_HINT = " (a dice term is written without spaces, such as 4d6kh3)"


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
        shown = describe(token)
        if token.kind in ("r", "ro", "f", "keep", "d"):
            # A letter of the grammar that starts a longer word ("rage", "for"): the word reads better.
            end = token.column - 1
            while end < len(self.text) and self.text[end].isalpha():
                end += 1
            if end - (token.column - 1) > len(token.text):
                shown = f"'{self.text[token.column - 1 : end].lower()}'"
        return DiceSyntaxError(self.text, shown, token.column, expected)

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
        terms = self.capped(terms)
        return Expression("".join(_written(term, index) for index, term in enumerate(terms)), tuple(terms))

    def capped(self, terms: list[Term]) -> list[Term]:
        """Give exploding dice their cap: the dice that do not explode are set aside from the 100, and
        each exploding die gets an even share of the rest (itself included)."""
        exploding = sum(term.count for term in terms if isinstance(term, Dice) and term.explode)
        if not exploding:
            return terms
        steady = sum(term.count for term in terms if isinstance(term, Dice) and not term.explode)
        cap = (MAX_DICE - steady) // exploding - 1
        if cap < 1:
            room = (MAX_DICE - steady) // 2
            raise DiceLimitError(
                self.text,
                f"{exploding} exploding dice leave no room to explode: at most {MAX_DICE} dice are rolled in all, "
                f"explosions included, so at most {room} dice can explode here",
            )
        done: list[Term] = []
        for term in terms:
            if isinstance(term, Dice) and term.explode is not None:
                compound = term.explode.compound
                term = replace(term, explode=replace(term.explode, cap=cap))
                if term.successes is not None and compound:
                    self.reachable_count(term, term.successes)
            done.append(term)
        return done

    def reachable_count(self, term: Dice, counted: Successes) -> None:
        """A compounded die's count compares its sum, which may pass its sides: refuse a count no sum reaches."""
        low, high = _compound_range(term)
        if counted.hit.high < low or counted.hit.low > high:
            raise DiceLimitError(
                self.text,
                f"'{counted.hit.text}' in {term.text} at column {term.column} counts no sum its dice can reach, "
                f"expected a number from {low} to {high}",
                term.column,
            )

    def expected_after(self, term: Term) -> str:
        """What could have followed a finished term, for the error about what did follow it."""
        if self.current.spaced:
            continues_term = self.current.kind in ("d", "number", "%") or self.current.kind in _MODIFIERS
            return EXPECT_AFTER_TERM + (SPACE_HINT if continues_term else "")
        if isinstance(term, Constant):
            return EXPECT_AFTER_NUMBER
        return EXPECT_AFTER_DICE

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
        if sides_token.spaced or sides_token.kind not in ("number", "%", "f"):
            raise self.fail("a number of sides, '%' or 'f'")
        self.advance()
        fudge = sides_token.kind == "f"
        if fudge:
            sides = 3
        else:
            sides = 100 if sides_token.kind == "%" else self.number(sides_token, "number of sides", 1, MAX_SIDES)
        found = _Modifiers()
        while self.current.kind in _MODIFIERS and not self.current.spaced:
            token = self.current
            if fudge and token.kind != "keep":
                raise DiceLimitError(
                    self.text,
                    f"Fudge dice take keep and drop only, so {describe(token)} at column {token.column} has no place",
                    token.column,
                )
            if token.kind == "keep":
                self.once(found.keep, token, "keep or drop")
                found.keep = self.keep(count)
            elif token.kind in ("r", "ro"):
                self.once(found.reroll, token, "reroll")
                found.reroll = self.reroll(sides)
            elif token.kind in ("!", "!!"):
                self.once(found.explode, token, "explosion")
                found.explode = self.explode(sides)
            elif token.kind == "compare":
                self.once(found.successes, token, "count of successes")
                found.successes = self.successes(sides)
            else:
                raise DiceSyntaxError(
                    self.text, "'f'", token.column, "a count of successes before it, such as 5d10>=7f1"
                )
        end = self.current.column if self.position < len(self.tokens) else len(self.text) + 1
        written = self.text[start - 1 : end - 1].strip().lower()
        self.check_dice(found, sides, start, written)
        return Dice(
            count, sides, found.keep, negative, written, start, found.reroll, found.explode, found.successes, fudge
        )

    def once(self, earlier: object, token: Token, what: str) -> None:
        """Refuse a second modifier of one kind in a term (a second keep, a second reroll...)."""
        if earlier is not None:
            raise DiceSyntaxError(
                self.text, describe(token), token.column, f"'+', '-' or the end (a dice term takes one {what})"
            )

    def check_dice(self, found: _Modifiers, sides: int, column: int, written: str) -> None:
        """What no single modifier can see: an explosion that never stops, a count that cannot be kept,
        a count of faces a die cannot show."""
        counted = found.successes
        if counted is not None and (found.explode is None or not found.explode.compound):
            for faces, what in ((counted.hit, "counts"), (counted.miss, "counts as failures")):
                if faces is not None and faces.low > sides:
                    shown = faces.text if faces is counted.hit else "f" + faces.text
                    raise DiceLimitError(
                        self.text,
                        f"'{shown}' in {written} at column {column} {what} no face of a d{sides}, "
                        f"expected a face from 1 to {sides}",
                        column,
                    )
        if found.explode is not None:
            settled = [
                face
                for face in range(1, sides + 1)
                if found.reroll is None or found.reroll.once or face not in found.reroll.faces
            ]
            if not any(face in found.explode.faces for face in settled):
                raise DiceLimitError(
                    self.text,
                    f"{written} at column {column} explodes on no face it can end on, since its rerolls never "
                    "stand on those faces; expected an explosion on a face that stands",
                    column,
                )
            if all(face in found.explode.faces for face in settled):
                raise DiceLimitError(
                    self.text,
                    f"{written} at column {column} explodes on every face it can end on, so it would never stop; "
                    "expected an explosion that spares a face",
                    column,
                )
            if found.successes is not None and found.keep is not None and not found.explode.compound:
                raise DiceLimitError(
                    self.text,
                    f"{written} at column {column} counts every exploding roll, so it cannot also keep or drop dice; "
                    "compound the explosions with '!!' to count one value a die",
                    column,
                )

    def faces(self, sides: int, default: int, what: str, top: int | None = None) -> FaceSet:
        """The faces a comparison (or a bare face) picks; `default` when none is written."""
        token = self.current
        top = sides if top is None else top
        if token.spaced or token.kind not in ("compare", "number"):
            return FaceSet(default, default, "")
        operator = "="
        if token.kind == "compare":
            operator = self.advance().text
            number_token = self.current
            if number_token.spaced or number_token.kind != "number":
                raise self.fail(f"a face after '{operator}'")
        number_token = self.advance()
        value = self.number(number_token, "face", 0, ANY_VALUE)
        low, high = {
            "=": (value, value),
            "<": (1, value - 1),
            "<=": (1, value),
            ">": (value + 1, top),
            ">=": (value, top),
        }[operator]
        low, high = max(low, 1), min(high, top)
        written = ("" if operator == "=" and token.kind == "number" else operator) + number_token.text
        if low > high:
            raise DiceLimitError(
                self.text,
                f"'{written}' at column {token.column} {what} no face of a d{sides}, expected a face from 1 to {sides}",
                token.column,
            )
        return FaceSet(low, high, written)

    def reroll(self, sides: int) -> Reroll:
        token = self.advance()
        once = token.kind == "ro"
        faces = self.faces(sides, 1, "rerolls")
        shown = token.text + faces.text
        if once and faces.size >= sides:
            raise DiceLimitError(
                self.text,
                f"'{shown}' at column {token.column} rerolls every face of a d{sides}, expected a comparison "
                "that spares a face",
                token.column,
            )
        if not once and faces.size > sides // 2:
            raise DiceLimitError(
                self.text,
                f"'{shown}' at column {token.column} rerolls {faces.size} of a d{sides}'s {sides} faces; 'r' rerolls "
                f"until a face it spares shows, so it may pick at most half of them ({sides // 2})",
                token.column,
            )
        return Reroll(faces, once)

    def explode(self, sides: int) -> Explode:
        token = self.advance()
        faces = self.faces(sides, sides, "explodes on")
        return Explode(faces, token.kind == "!!", 0)  # the cap is set once every term is known

    def successes(self, sides: int) -> Successes:
        hit = self.faces(sides, 0, "counts", top=ANY_VALUE)
        miss = None
        if self.current.kind == "f" and not self.current.spaced:
            token = self.advance()
            if self.current.spaced or self.current.kind not in ("compare", "number"):
                raise self.fail("the faces that count as failures after 'f', such as f1")
            miss = self.faces(sides, 0, "counts as failures")
            if miss.low <= hit.high and hit.low <= miss.high:
                raise DiceLimitError(
                    self.text,
                    f"'f{miss.text}' at column {token.column} counts faces that '{hit.text}' already counts "
                    "as successes, expected failures that are not successes",
                    token.column,
                )
        return Successes(hit, miss)

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


@dataclass(slots=True)
class _Modifiers:
    """The modifiers of one dice term, as they are found."""

    keep: Keep | None = None
    reroll: Reroll | None = None
    explode: Explode | None = None
    successes: Successes | None = None


def _compound_range(term: Dice) -> tuple[int, int]:
    """The lowest and highest sum one compounded die of `term` can show."""
    plain = replace(term, successes=None)
    return plain.die_low, plain.die_high
