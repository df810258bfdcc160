"""Hypothesis strategies for dice notation, and a model of it written independently of `gm.dice`.

A notation is drawn as a list of term specs (`DiceSpec` / `ConstSpec`), then written out as text with
random letter case, optional counts, `d%`, default keep counts and spaces around the signs. Tests parse
the text and compare what `gm.dice` made of it with the specs, which never pass through gm code.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from itertools import product

from hypothesis import strategies as st

# The limits stated in the issue, restated here rather than imported from the parser.
MAX_LENGTH = 100
MAX_TERMS = 8
MAX_DICE = 100
MAX_SIDES = 1000
MAX_CONSTANT = 1_000_000

# Every character that may appear in notation, plus a few near misses.
NOTATION_ALPHABET = "0123456789dDkKhHlL%+- \t_*x"


@dataclass(frozen=True)
class DiceSpec:
    count: int
    sides: int
    mode: str | None  # "kh", "kl", "dh", "dl" or None
    how_many: int | None  # the keep/drop count, when mode is set
    negative: bool

    @property
    def kept(self) -> int:
        if self.mode is None:
            return self.count
        assert self.how_many is not None
        return self.how_many if self.mode in ("kh", "kl") else self.count - self.how_many

    def kept_faces(self, faces: tuple[int, ...] | list[int]) -> list[int]:
        """The faces that count, chosen by sorting; independent of gm's keep logic."""
        ordered = sorted(faces)
        if self.mode is None:
            return ordered
        assert self.how_many is not None
        if self.mode == "kh":
            return ordered[len(ordered) - self.how_many :]
        if self.mode == "kl":
            return ordered[: self.how_many]
        if self.mode == "dh":
            return ordered[: len(ordered) - self.how_many]
        return ordered[self.how_many :]  # "dl"


@dataclass(frozen=True)
class ConstSpec:
    value: int
    negative: bool


Spec = DiceSpec | ConstSpec


def spec_bounds(specs: list[Spec]) -> tuple[int, int]:
    """The lowest and highest total, worked out from the specs."""
    low = high = 0
    for spec in specs:
        if isinstance(spec, ConstSpec):
            signed = -spec.value if spec.negative else spec.value
            low, high = low + signed, high + signed
        elif spec.negative:
            low, high = low - spec.kept * spec.sides, high - spec.kept
        else:
            low, high = low + spec.kept, high + spec.kept * spec.sides
    return low, high


def spec_total(specs: list[Spec], faces: list[tuple[int, ...]]) -> int:
    """The total of one roll from the specs and the faces of each dice term in order."""
    total = 0
    rolled = iter(faces)
    for spec in specs:
        if isinstance(spec, ConstSpec):
            total += -spec.value if spec.negative else spec.value
        else:
            part = sum(spec.kept_faces(next(rolled)))
            total += -part if spec.negative else part
    return total


def brute_force(specs: list[Spec], hit: int | None = None) -> dict[int, Fraction]:
    """Exact odds by enumerating every face of every die: a total, or a count of kept faces >= hit."""
    dice = [spec for spec in specs if isinstance(spec, DiceSpec)]
    per_term: list[Counter[int]] = []
    for spec in dice:
        tally: Counter[int] = Counter()
        for faces in product(range(1, spec.sides + 1), repeat=spec.count):
            kept = spec.kept_faces(faces)
            value = sum(kept) if hit is None else sum(1 for face in kept if face >= hit)
            tally[-value if spec.negative else value] += 1
        per_term.append(tally)
    constant = sum(-s.value if s.negative else s.value for s in specs if isinstance(s, ConstSpec))
    combined: Counter[int] = Counter({constant: 1})
    for tally in per_term:
        following: Counter[int] = Counter()
        for value, ways in combined.items():
            for other, other_ways in tally.items():
                following[value + other] += ways * other_ways
        combined = following
    denominator = sum(combined.values())
    return {value: Fraction(ways, denominator) for value, ways in combined.items()}


def _cased(draw: st.DrawFn, text: str) -> str:
    """`text` with each letter in a random case."""
    return "".join(char.upper() if char.isalpha() and draw(st.booleans()) else char for char in text)


def _number(draw: st.DrawFn, value: int) -> str:
    """A number, sometimes with a leading zero or two (still a number by the grammar)."""
    return "0" * draw(st.sampled_from([0] * 6 + [1, 2])) + str(value)


def write_term(draw: st.DrawFn, spec: Spec) -> str:
    """One term as a player might type it."""
    if isinstance(spec, ConstSpec):
        return _number(draw, spec.value)
    count = "" if spec.count == 1 and draw(st.booleans()) else _number(draw, spec.count)
    sides = "%" if spec.sides == 100 and draw(st.booleans()) else _number(draw, spec.sides)
    keep = ""
    if spec.mode is not None:
        keep = spec.mode
        if not (spec.how_many == 1 and draw(st.booleans())):
            keep += _number(draw, spec.how_many or 0)
    return _cased(draw, f"{count}d{sides}{keep}")


@st.composite
def dice_spec(draw: st.DrawFn, negative: bool, max_count: int, max_sides: int) -> DiceSpec:
    count = draw(st.integers(1, max_count))
    sides = draw(st.one_of(st.integers(1, max_sides), st.sampled_from([s for s in (1, 2, 6, 100) if s <= max_sides])))
    modes = [None, "kh", "kl"] + (["dh", "dl"] if count > 1 else [])
    mode = draw(st.sampled_from(modes))
    how_many = None
    if mode in ("kh", "kl"):
        how_many = draw(st.integers(1, count))
    elif mode in ("dh", "dl"):
        how_many = draw(st.integers(1, count - 1))
    return DiceSpec(count, sides, mode, how_many, negative)


@st.composite
def specs(
    draw: st.DrawFn,
    max_terms: int = MAX_TERMS,
    max_dice: int = MAX_DICE,
    max_sides: int = MAX_SIDES,
    max_constant: int = MAX_CONSTANT,
    constants: bool = True,
    negatives: bool = True,
    max_outcomes: int | None = None,
) -> list[Spec]:
    """Term specs within the limits; `max_outcomes` caps the product of sides ** count (for brute force)."""
    terms = draw(st.integers(1, max_terms))
    result: list[Spec] = []
    dice_left, outcomes = max_dice, 1
    for index in range(terms):
        negative = index > 0 and negatives and draw(st.booleans())
        cap = max_sides
        if max_outcomes is not None:
            cap = min(cap, max_outcomes // outcomes)
        can_roll = dice_left > 0 and cap >= 1
        if constants and (not can_roll or draw(st.integers(0, 3)) == 0):
            result.append(ConstSpec(draw(st.integers(0, max_constant)), negative))
            continue
        if not can_roll:
            break
        count_cap = dice_left
        if max_outcomes is not None:
            while count_cap > 1 and max(cap, 2) ** count_cap * outcomes > max_outcomes:
                count_cap -= 1
        spec = draw(dice_spec(negative, count_cap, cap))
        result.append(spec)
        dice_left -= spec.count
        outcomes *= spec.sides**spec.count
    return result


_SIGN_SPACING = st.sampled_from(["", "", "", " ", "\t", "  "])


@st.composite
def notations(draw: st.DrawFn, /, **limits: int | bool | None) -> tuple[str, list[Spec]]:
    """Valid notation text, with the term specs it was written from."""
    terms = draw(specs(**limits))  # type: ignore[arg-type]
    pieces = [write_term(draw, terms[0])]
    for spec in terms[1:]:
        sign = "-" if spec.negative else "+"
        pieces.append(f"{draw(_SIGN_SPACING)}{sign}{draw(_SIGN_SPACING)}{write_term(draw, spec)}")
    text = "".join(pieces)
    if len(text) > MAX_LENGTH:  # rare: long numbers and spaces in many terms; write it compactly instead
        text = "".join(("-" if s.negative else "+" if i else "") + _compact(s) for i, s in enumerate(terms))
    assert len(text) <= MAX_LENGTH, text
    return text, terms


def _compact(spec: Spec) -> str:
    if isinstance(spec, ConstSpec):
        return str(spec.value)
    keep = f"{spec.mode}{spec.how_many}" if spec.mode else ""
    return f"{spec.count}d{spec.sides}{keep}"
