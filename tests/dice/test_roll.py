"""Rolling: dice sources, the itemised result, how it is shown, and successes."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gm.dice import (
    Constant,
    DiceError,
    DiceRoll,
    GivenFaces,
    Roll,
    check_successes,
    odds,
    parse,
    roll,
    seeded_source,
)
from tests.support.strategies import ConstSpec, DiceSpec, Spec, notations, spec_bounds, spec_total

# How one roll is shown.


def test_documented_roll_line() -> None:
    result = roll("4d6kh3+2", GivenFaces([6, 5, 4, 1]))
    assert str(result) == "4d6kh3 (6, 5, 4, [1]) + 2 = 17"
    assert result.total == 17
    assert result.faces == ((6, 5, 4, 1),)


def test_documented_roll_as_json() -> None:
    data = roll(parse("4d6kh3+2"), GivenFaces([6, 5, 4, 1])).to_json()
    assert data == {
        "notation": "4d6kh3+2",
        "terms": [
            {"dice": "4d6kh3", "sign": "+", "faces": [6, 5, 4, 1], "kept": [True, True, True, False], "subtotal": 15},
            {"constant": 2, "sign": "+"},
        ],
        "total": 17,
        "text": "4d6kh3 (6, 5, 4, [1]) + 2 = 17",
    }
    assert json.loads(json.dumps(data)) == data


def test_subtracted_terms_are_shown_with_their_sign() -> None:
    result = roll("1d20 - 1d4 - 3", GivenFaces([15, 2]))
    assert str(result) == "1d20 (15) - 1d4 (2) - 3 = 10"
    data = result.to_json()
    assert data["notation"] == "1d20-1d4-3"
    assert [term["sign"] for term in data["terms"]] == ["+", "-", "-"]
    assert data["terms"][1] == {"dice": "1d4", "sign": "-", "faces": [2], "kept": [True], "subtotal": -2}
    assert data["terms"][2] == {"constant": 3, "sign": "-"}
    assert data["total"] == 10


def test_percent_and_bare_die_are_shown_as_written() -> None:
    assert str(roll("d% + D6", GivenFaces([42, 3]))) == "d% (42) + d6 (3) = 45"


@pytest.mark.parametrize(
    ("notation", "faces", "line"),
    [
        ("2d20kh1", [3, 17], "2d20kh1 ([3], 17) = 17"),
        ("2d20kl1", [3, 17], "2d20kl1 (3, [17]) = 3"),
        ("4d6dl1", [2, 6, 1, 3], "4d6dl1 (2, 6, [1], 3) = 11"),
        ("4d6dh1", [2, 6, 1, 3], "4d6dh1 (2, [6], 1, 3) = 6"),
        ("5d10dl2", [7, 1, 9, 2, 4], "5d10dl2 (7, [1], 9, [2], 4) = 20"),
        ("3d6kh3", [1, 1, 1], "3d6kh3 (1, 1, 1) = 3"),
        # Among equal faces the first rolled is the one kept (result.kept_flags documents this).
        ("4d6kh3", [6, 1, 1, 1], "4d6kh3 (6, 1, 1, [1]) = 8"),
        ("3d6kl2", [1, 1, 1], "3d6kl2 (1, 1, [1]) = 2"),
        ("4d6dl1", [3, 3, 3, 3], "4d6dl1 (3, 3, 3, [3]) = 9"),
        ("4d6dh2", [5, 2, 5, 2], "4d6dh2 ([5], 2, [5], 2) = 4"),
        ("2d20kh1", [12, 12], "2d20kh1 (12, [12]) = 12"),
        ("3d6kh2", [4, 6, 4], "3d6kh2 (4, 6, [4]) = 10"),
    ],
)
def test_kept_and_dropped_dice(notation: str, faces: list[int], line: str) -> None:
    assert str(roll(notation, GivenFaces(faces))) == line


def test_successes_line_and_json() -> None:
    result = roll("5d6", GivenFaces([6, 5, 1, 2, 5]), hit=5)
    assert result.successes == 3
    assert result.total == 19
    assert str(result) == "5d6 (6, 5, 1, 2, 5) = 3 successes (hit 5+)"
    data = result.to_json()
    assert (data["hit"], data["successes"], data["total"]) == (5, 3, 19)
    assert str(roll("2d10", GivenFaces([10, 3]), hit=8)) == "2d10 (10, 3) = 1 success (hit 8+)"
    assert roll("2d10", GivenFaces([1, 3]), hit=8).successes == 0


def test_readme_successes_line() -> None:
    assert str(roll("5d10", GivenFaces([3, 6, 4, 7, 7]), hit=7)) == "5d10 (3, 6, 4, 7, 7) = 2 successes (hit 7+)"


def test_successes_count_only_kept_dice() -> None:
    # 4d6kh2 of 6, 5, 5, 1 keeps 6 and one 5: two hits of 5+, the dropped 5 does not count.
    assert roll("4d6kh2", GivenFaces([6, 5, 5, 1]), hit=5).successes == 2
    # 4d6kl2 of 6, 5, 5, 1 keeps 1 and a 5: one hit.
    assert roll("4d6kl2", GivenFaces([6, 5, 5, 1]), hit=5).successes == 1
    # Dice of different sizes: a d4 can never reach 6.
    assert roll("2d4+2d6", GivenFaces([4, 4, 6, 1]), hit=4).successes == 3
    assert roll("2d4+2d6", GivenFaces([4, 4, 6, 1]), hit=6).successes == 1


def test_no_successes_reading_without_hit() -> None:
    result = roll("2d6", GivenFaces([6, 6]))
    assert result.successes is None and result.hit is None
    assert "hit" not in result.to_json() and "successes" not in result.to_json()


# Refusing a successes reading.


@pytest.mark.parametrize(
    ("notation", "hit"),
    [
        ("2d6+1", 4),  # a constant
        ("5d10-1", 8),
        ("3", 1),
        ("2d6-1d6", 4),  # subtracted dice
        ("2d6", 0),  # unreachable
        ("2d6", 7),
        ("2d6", -1),
        ("1d4+1d6", 7),
        ("d%", 101),
    ],
)
def test_successes_reading_is_refused(notation: str, hit: int) -> None:
    expression = parse(notation)
    with pytest.raises(DiceError):
        check_successes(expression, hit)
    with pytest.raises(DiceError):
        roll(expression, GivenFaces([1] * 10), hit=hit)
    with pytest.raises(DiceError):
        odds(expression, hit=hit)


def test_successes_refusals_name_the_column() -> None:
    with pytest.raises(DiceError, match="column 5"):
        check_successes(parse("2d6+1"), 4)
    with pytest.raises(DiceError, match="column 5"):
        check_successes(parse("2d6-1d6"), 4)


@pytest.mark.parametrize("hit", [True, 2.0, "4"])
def test_hit_must_be_a_whole_number(hit: object) -> None:
    with pytest.raises(DiceError):
        check_successes(parse("3d6"), hit)  # type: ignore[arg-type]


@pytest.mark.parametrize(("notation", "hit"), [("2d6", 1), ("2d6", 6), ("1d4+1d6", 6), ("4d6kh3+d%", 100)])
def test_successes_reading_is_accepted(notation: str, hit: int) -> None:
    expression = parse(notation)
    check_successes(expression, hit)  # raises DiceError if refused
    result = roll(expression, seed=5, hit=hit)
    kept = [face for part in result.parts if isinstance(part, DiceRoll) for face, k in zip(part.faces, part.kept) if k]
    assert result.successes == sum(1 for face in kept if face >= hit)


# Dice sources.


def test_given_faces_are_handed_out_in_order() -> None:
    source = GivenFaces([1, 2, 3, 4, 3, 2, 7])
    result = roll("2d6 + 1d8 - 3d4", source)
    assert result.faces == ((1, 2), (3,), (4, 3, 2))
    assert result.total == 1 + 2 + 3 - (4 + 3 + 2)
    assert source.left_over == 1
    assert source(1, 7) == [7]
    assert source.left_over == 0


def test_given_faces_too_few() -> None:
    with pytest.raises(DiceError):
        roll("3d6", GivenFaces([4, 5]))
    source = GivenFaces([1, 2])
    source(2, 6)
    with pytest.raises(DiceError):
        source(1, 6)


@pytest.mark.parametrize("face", [0, 7, -1, 100, True, 3.0, "3", None])
def test_given_faces_outside_the_die_are_refused(face: object) -> None:
    with pytest.raises(DiceError):
        roll("1d6", GivenFaces([face]))  # type: ignore[list-item]
    with pytest.raises(DiceError):
        roll("2d6", GivenFaces([2, face]))  # type: ignore[list-item]


def test_given_faces_accept_the_whole_range() -> None:
    assert roll("2d6", GivenFaces([1, 6])).total == 7
    assert roll("1d1000", GivenFaces([1000])).total == 1000


def test_seed_is_reproducible() -> None:
    first = roll("4d6kh3 + 2d20 - d8", seed=1234)
    again = roll("4d6kh3 + 2d20 - d8", seed=1234)
    assert first.faces == again.faces and first.total == again.total
    assert seeded_source(99)(20, 6) == seeded_source(99)(20, 6)
    # Different seeds are different streams.
    assert len({roll("10d20", seed=seed).faces for seed in range(20)}) == 20


def test_one_seeded_source_keeps_rolling() -> None:
    source = seeded_source(7)
    rolls = [roll("3d6", source).faces for _ in range(30)]
    assert len(set(rolls)) > 10
    source = seeded_source(7)
    assert [roll("3d6", source).faces for _ in range(30)] == rolls


def test_system_source_rolls_every_face() -> None:
    # 600 rolls miss a face of a d6 with chance about 6 * (5/6)**600, i.e. never.
    seen = Counter(face for _ in range(600) for face in roll("1d6").faces[0])
    assert set(seen) == {1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize("sides", [1, 2, 3, 6, 7, 20, 100, 1000])
def test_seeded_faces_stay_on_the_die(sides: int) -> None:
    faces = seeded_source(sides)(1000, sides)
    assert len(faces) == 1000
    assert all(isinstance(face, int) and 1 <= face <= sides for face in faces)
    if sides <= 20:
        assert set(faces) == set(range(1, sides + 1))


# Properties of rolls.


@st.composite
def rolled(draw: st.DrawFn, /, **limits: object) -> tuple[str, list[Spec], list[tuple[int, ...]]]:
    """Notation, its specs, and faces for each dice term."""
    text, specs = draw(notations(**limits))  # type: ignore[arg-type]
    faces = [
        tuple(draw(st.lists(st.integers(1, spec.sides), min_size=spec.count, max_size=spec.count)))
        for spec in specs
        if isinstance(spec, DiceSpec)
    ]
    return text, specs, faces


def check_itemised(result: Roll, specs: list[Spec]) -> None:
    """The parts of a roll agree with its total, with the keep rules, and with how it is shown."""
    expression = result.expression
    assert expression.minimum <= result.total <= expression.maximum
    assert (expression.minimum, expression.maximum) == spec_bounds(specs)
    parts = result.parts
    assert len(parts) == len(specs)
    running = 0
    dropped = 0
    for part, spec in zip(parts, specs):
        if isinstance(spec, ConstSpec):
            assert isinstance(part, Constant)
            running += -part.value if part.negative else part.value
            continue
        assert isinstance(part, DiceRoll)
        assert len(part.faces) == len(part.kept) == spec.count
        assert all(1 <= face <= spec.sides for face in part.faces)
        assert sum(part.kept) == part.term.kept == spec.kept
        kept_faces = sorted(face for face, kept in zip(part.faces, part.kept) if kept)
        assert kept_faces == spec.kept_faces(part.faces)
        assert part.subtotal == (-1 if spec.negative else 1) * sum(kept_faces)
        running += part.subtotal
        dropped += spec.count - spec.kept
    assert running == result.total
    line = str(result)
    assert "\n" not in line
    assert line.endswith(f"= {result.total}")
    assert line.count("[") == dropped
    data = result.to_json()
    assert data["total"] == result.total and data["text"] == line and data["notation"] == expression.text
    assert [term.get("subtotal", None) for term in data["terms"]] == [
        part.subtotal if isinstance(part, DiceRoll) else None for part in parts
    ]
    assert json.loads(json.dumps(data)) == data


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(rolled())
def test_roll_with_given_faces_is_itemised_correctly(drawn: tuple[str, list[Spec], list[tuple[int, ...]]]) -> None:
    text, specs, faces = drawn
    source = GivenFaces([face for term in faces for face in term])
    result = roll(text, source)
    assert result.faces == tuple(faces)
    assert source.left_over == 0
    assert result.total == spec_total(specs, faces)
    check_itemised(result, specs)


@settings(max_examples=200, deadline=None)
@given(notations(), st.integers(0, 2**64))
@pytest.mark.slow
def test_seeded_roll_stays_in_bounds(drawn: tuple[str, list[Spec]], seed: int) -> None:
    text, specs = drawn
    result = roll(text, seed=seed)
    faces = list(result.faces)
    assert result.total == spec_total(specs, faces)
    check_itemised(result, specs)
    assert roll(text, seed=seed) == result


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(rolled(constants=False, negatives=False), st.data())
def test_successes_count_kept_faces_at_or_above_hit(
    drawn: tuple[str, list[Spec], list[tuple[int, ...]]], data: st.DataObject
) -> None:
    text, specs, faces = drawn
    dice = [spec for spec in specs if isinstance(spec, DiceSpec)]
    hit = data.draw(st.integers(1, max(spec.sides for spec in dice)))
    result = roll(text, GivenFaces([face for term in faces for face in term]), hit=hit)
    expected = sum(1 for spec, term in zip(dice, faces) for face in spec.kept_faces(term) if face >= hit)
    assert result.successes == expected
    assert 0 <= expected <= result.expression.kept_dice
    assert result.total == spec_total(specs, faces)
    noun = "success" if expected == 1 else "successes"
    assert str(result).endswith(f"= {expected} {noun} (hit {hit}+)")
