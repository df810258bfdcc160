"""The parsed form of dice notation: a small immutable tree of terms, ready to be rolled many times.

A dice term is `count` dice of `sides` sides. Each die is rolled once, and then, in this order
whatever order the notation wrote them in:

1. `reroll`: a face in its set is rolled again (`r`: until a face outside the set shows; `ro`: once,
   and the second face stands);
2. `explode`: a face in its set adds another roll to the die, up to `explode.cap` extra rolls a die
   (`!` keeps each roll a die of its own for successes; `!!` compounds them into one value);
3. `keep`: the highest or lowest dice are kept, ranked by each die's value (an exploded die's value
   is the sum of its rolls);
4. `successes`: the kept dice (every kept roll, for `!`) are counted: +1 for a face in `hit`, -1 for
   a face in `miss`, and the count is the term's value instead of the sum.

Fudge dice (`dF`) are three-sided dice whose faces read -1, 0 and +1; they take keep and drop only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

KeepMode = Literal["kh", "kl", "dh", "dl"]


@dataclass(frozen=True, slots=True)
class Keep:
    """Which dice of one term count: `kh`/`kl` keep the highest/lowest `count`, `dh`/`dl` drop them."""

    mode: KeepMode
    count: int

    def kept_of(self, dice: int) -> int:
        """How many of `dice` dice are kept."""
        return self.count if self.mode in ("kh", "kl") else dice - self.count

    @property
    def highest(self) -> bool:
        """True when the kept dice are the highest ones (`kh`, `dl`)."""
        return self.mode in ("kh", "dl")


@dataclass(frozen=True, slots=True)
class FaceSet:
    """The faces a comparison picks, `low` to `high` inclusive (`>=5` on a d6 is 5 to 6), as written."""

    low: int
    high: int
    text: str  # as written: ">=5", "1", "<3"

    def __contains__(self, face: object) -> bool:
        return isinstance(face, int) and self.low <= face <= self.high

    @property
    def size(self) -> int:
        return self.high - self.low + 1


@dataclass(frozen=True, slots=True)
class Reroll:
    """`r` (again until a face outside `faces` shows) or `ro` (`once`: one more roll, which stands)."""

    faces: FaceSet
    once: bool

    @property
    def text(self) -> str:
        return ("ro" if self.once else "r") + self.faces.text


@dataclass(frozen=True, slots=True)
class Explode:
    """`!` or `!!` (`compound`): a face in `faces` adds one more roll to its die, at most `cap` times a die."""

    faces: FaceSet
    compound: bool
    cap: int


@dataclass(frozen=True, slots=True)
class Successes:
    """Counting instead of adding: +1 for each counted face in `hit`, -1 for each in `miss`."""

    hit: FaceSet
    miss: FaceSet | None

    def value(self, face: int) -> int:
        """What one counted face adds to the count."""
        if self.hit.low <= face <= self.hit.high:
            return 1
        if self.miss is not None and self.miss.low <= face <= self.miss.high:
            return -1
        return 0


@dataclass(frozen=True, slots=True)
class Dice:
    """One dice term such as `4d6kh3`, `-d8`, `3d6!`, `4dF` or `5d10>=7f1`."""

    count: int
    sides: int  # 3 for Fudge dice, whose faces 1, 2, 3 read -1, 0, +1
    keep: Keep | None
    negative: bool
    text: str  # as written, lower-cased and without spaces: "d%", "4d6kh3"
    column: int = field(compare=False)  # where it was written, for messages: not part of what it means
    reroll: Reroll | None = None
    explode: Explode | None = None
    successes: Successes | None = None
    fudge: bool = False

    kept: int = field(init=False)
    kept_slice: slice = field(init=False)  # the kept faces, once sorted in ascending order
    plain: bool = field(init=False)  # one roll a die, read as its face: the fast paths
    die_low: int = field(init=False)  # the lowest and highest value one die can give (its sum, or its count)
    die_high: int = field(init=False)
    rolls_at_most: int = field(init=False)  # dice rolled at most, explosions to their cap included

    def __post_init__(self) -> None:
        kept = self.keep.kept_of(self.count) if self.keep else self.count
        chosen = slice(None) if self.keep is None else slice(-kept, None) if self.keep.highest else slice(None, kept)
        object.__setattr__(self, "kept", kept)
        object.__setattr__(self, "kept_slice", chosen)
        plain = self.reroll is None and self.explode is None and self.successes is None and not self.fudge
        object.__setattr__(self, "plain", plain)
        low, high = die_range(self, None)
        object.__setattr__(self, "die_low", low)
        object.__setattr__(self, "die_high", high)
        object.__setattr__(self, "rolls_at_most", self.count * (1 + (self.explode.cap if self.explode else 0)))

    def face_value(self, face: int) -> int:
        """What a face adds: itself, or -1, 0, +1 for the faces 1, 2, 3 of a Fudge die."""
        return face - 2 if self.fudge else face

    def settled_faces(self) -> list[int]:
        """The faces a roll can end on once rerolls are done (`r` never ends on a face it rerolls)."""
        faces = range(1, self.sides + 1)
        if self.reroll is None or self.reroll.once:
            return list(faces)
        return [face for face in faces if face not in self.reroll.faces]

    @property
    def counts_each_roll(self) -> bool:
        """True when successes are counted roll by roll (`!`), rather than one value a die."""
        return self.explode is not None and not self.explode.compound


def die_range(term: Dice, hit: int | None) -> tuple[int, int]:
    """The lowest and highest value one die of `term` can give: its sum, or with counting (the term's own
    successes, or `hit`), its count. An exploded die is a chain: exploding rolls, then one that stops
    (or any roll, once the cap is reached)."""
    settled = term.settled_faces()

    def worth(face: int) -> int:
        if term.successes is not None:
            return term.successes.value(face)
        if hit is not None:
            return int(face >= hit)
        return term.face_value(face)

    if term.explode is None:
        values = [worth(face) for face in settled]
        return min(values), max(values)
    if term.counts_each_roll or (term.successes is None and hit is None):
        return _chain(term, settled, worth)
    # Compounded, then counted: the count reads the chain's sum.
    low, high = _chain(term, settled, term.face_value)
    counted = [worth(total) for total in range(low, high + 1)]
    return min(counted), max(counted)


def _chain(term: Dice, settled: list[int], worth: Callable[[int], int]) -> tuple[int, int]:
    """The lowest and highest sum of `worth` over one die's chain of rolls."""
    explode = term.explode
    assert explode is not None  # only exploding dice make chains
    stopping = [worth(face) for face in settled if face not in explode.faces]
    going = [worth(face) for face in settled if face in explode.faces]
    anything = [worth(face) for face in settled]
    low, high = min(anything), max(anything)  # at the cap: any face, and it explodes no further
    for _ in range(explode.cap):
        low = min([*stopping, *(value + low for value in going)])
        high = max([*stopping, *(value + high for value in going)])
    return low, high


@dataclass(frozen=True, slots=True)
class Constant:
    """A whole number added or subtracted."""

    value: int
    negative: bool
    column: int = field(compare=False)

    @property
    def signed(self) -> int:
        return -self.value if self.negative else self.value


Term = Dice | Constant


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed notation: its terms in order, rolled as often as needed with `gm.dice.roll`."""

    text: str  # normalised: lower case, no spaces
    terms: tuple[Term, ...]
    minimum: int = field(init=False)
    maximum: int = field(init=False)
    dice: tuple[Dice, ...] = field(init=False)  # the dice terms, without the constants
    constant: int = field(init=False)  # the constants, added up
    plain: bool = field(init=False)  # every dice term is plain (no reroll, explosion, count or Fudge)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dice", tuple(term for term in self.terms if isinstance(term, Dice)))
        object.__setattr__(self, "constant", sum(term.signed for term in self.terms if isinstance(term, Constant)))
        object.__setattr__(self, "plain", all(term.plain for term in self.dice))
        low = high = 0
        for term in self.terms:
            if isinstance(term, Constant):
                low += term.signed
                high += term.signed
            elif term.negative:
                low -= term.kept * term.die_high
                high -= term.kept * term.die_low
            else:
                low += term.kept * term.die_low
                high += term.kept * term.die_high
        object.__setattr__(self, "minimum", low)
        object.__setattr__(self, "maximum", high)

    @property
    def kept_dice(self) -> int:
        """How many dice count toward the total: the largest possible number of successes of plain dice."""
        return sum(term.kept for term in self.dice)

    @property
    def counts(self) -> bool:
        """True when some term counts successes itself (`5d10>=7`), so the notation reads a count."""
        return any(term.successes is not None for term in self.dice)

    def __str__(self) -> str:
        return self.text
