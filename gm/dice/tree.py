"""The parsed form of dice notation: a small immutable tree of terms, ready to be rolled many times."""

from __future__ import annotations

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
class Dice:
    """One dice term such as `4d6kh3` or `-d8`: `count` dice of `sides` sides, maybe keeping some."""

    count: int
    sides: int
    keep: Keep | None
    negative: bool
    text: str  # as written, lower-cased and without spaces: "d%", "4d6kh3"
    column: int = field(compare=False)  # where it was written, for messages: not part of what it means

    kept: int = field(init=False)
    kept_slice: slice = field(init=False)  # the kept faces, once sorted in ascending order

    def __post_init__(self) -> None:
        kept = self.keep.kept_of(self.count) if self.keep else self.count
        chosen = slice(None) if self.keep is None else slice(-kept, None) if self.keep.highest else slice(None, kept)
        object.__setattr__(self, "kept", kept)
        object.__setattr__(self, "kept_slice", chosen)


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "dice", tuple(term for term in self.terms if isinstance(term, Dice)))
        object.__setattr__(self, "constant", sum(term.signed for term in self.terms if isinstance(term, Constant)))
        low = high = 0
        for term in self.terms:
            if isinstance(term, Constant):
                low += term.signed
                high += term.signed
            elif term.negative:
                low -= term.kept * term.sides
                high -= term.kept
            else:
                low += term.kept
                high += term.kept * term.sides
        object.__setattr__(self, "minimum", low)
        object.__setattr__(self, "maximum", high)

    @property
    def kept_dice(self) -> int:
        """How many dice count toward the total: the largest possible number of successes."""
        return sum(term.kept for term in self.dice)

    def __str__(self) -> str:
        return self.text
