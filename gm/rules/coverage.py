"""Coverage of a check's bands: gaps, unreachable bands, and the ladder naturals step along.

`coverage_problems` is what `gm check` says of one check's bands at one modifier: gaps in an
`absolute` check (errors: such a roll would mean nothing), stretches in no band of an `over`,
`under` or `opposed` check (warnings: a roll there is void), bands earlier bands cover, and bands
outside what an `absolute` check can roll, unless a natural can step a roll into them. `ladder` is
the order naturals step along. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from gm.problems import Problem

if TYPE_CHECKING:
    from gm.rules.checks import Band, Check


def coverage_problems(check: Check, path: str, modifier: int = 0, who: str = "") -> list[Problem]:
    """Gaps and unreachable bands of one check; `who` names the character whose `modifier` applies."""
    problems: list[Problem] = []
    spans = sorted({span for edge in (None, *check.edges) for span in check.spans_for(edge)})
    low, high = spans[0][0], max(span[1] for span in spans)
    stepped = _stepped_to(check, spans, modifier)
    for number, band in enumerate(check.bands):
        earlier = check.bands[:number]
        if band.min is not None and band.max is not None and band.min > band.max:
            continue
        if _covered(band.min, band.max, earlier):
            problems.append(
                Problem(
                    f"{path}.bands[{number}]",
                    f"the band '{band.label}' is covered by earlier bands and can never be reached",
                    "warning",
                )
            )
        elif (
            check.compare == "absolute"
            and not any(_overlaps(band, first + modifier, last + modifier) for first, last in spans)
            and number not in stepped
        ):
            problems.append(
                Problem(
                    f"{path}.bands[{number}]",
                    f"the band '{band.label}' lies outside the values {low + modifier} to {high + modifier}"
                    f" the dice can give{who}",
                    "warning",
                )
            )
    if check.compare == "absolute":
        gaps = sorted({gap for first, last in spans for gap in _gaps(check.bands, first + modifier, last + modifier)})
        for first, last in gaps:
            values = f"the value {first}" if first == last else f"the values {first} to {last}"
            problems.append(
                Problem(f"{path}.bands", f"check '{check.key}' can roll {values}{who}, which no band holds")
            )
    else:
        for first, last in _gaps(check.bands, None, None):
            values = _stretch(first, last)
            problems.append(
                Problem(
                    f"{path}.bands",
                    f"check '{check.key}' has no band for {values}; a roll landing there is void",
                    "warning",
                )
            )
    return problems


def _stepped_to(check: Check, spans: list[tuple[int, int]], modifier: int) -> set[int]:
    """Indexes of bands only naturals can reach in an absolute check (so they are not unreachable)."""
    if not check.naturals or check.compare != "absolute":
        return set()
    from gm.rules.naturals import reachable_by_naturals  # it reads bands through this module

    rolled = {
        index
        for index, band in enumerate(check.bands)
        if any(_overlaps(band, first + modifier, last + modifier) for first, last in spans)
    }
    return reachable_by_naturals(check, rolled)


def ladder(check: Check) -> tuple[int, ...]:
    """The indexes of the bands a roll can end in, from the lowest values to the highest: the order
    naturals step along. A band wholly covered by earlier bands is not on it; ties keep list order."""
    reachable = [
        index
        for index, band in enumerate(check.bands)
        if not (band.min is not None and band.max is not None and band.min > band.max)
        and not _covered(band.min, band.max, check.bands[:index])
    ]
    return tuple(
        sorted(
            reachable,
            key=lambda index: (-(10**12) if check.bands[index].min is None else check.bands[index].min, index),
        )
    )


def _overlaps(band: Band, low: int, high: int) -> bool:
    return (band.min is None or band.min <= high) and (band.max is None or band.max >= low)


def _covered(low: int | None, high: int | None, bands: Iterable[Band]) -> bool:
    """Whether every value from `low` to `high` (None: unbounded) is held by one of `bands`."""
    return not any(True for _ in _gaps(tuple(bands), low, high))


def _gaps(bands: tuple[Band, ...], low: int | None, high: int | None) -> Iterable[tuple[int | None, int | None]]:
    """Stretches from `low` to `high` (None: unbounded) that no band holds, lowest first."""
    spans = sorted(
        ((band.min, band.max) for band in bands if band.min is None or band.max is None or band.min <= band.max),
        key=lambda span: -(10**12) if span[0] is None else span[0],
    )
    cursor = low  # the lowest value not yet known to be held; None is minus infinity
    for start, end in spans:
        if high is not None and cursor is not None and cursor > high:
            return
        if start is not None and (cursor is None or start > cursor):
            gap_end = start - 1 if high is None else min(start - 1, high)
            if cursor is None or gap_end >= cursor:
                yield cursor, gap_end
        if end is None:
            return
        if cursor is None or end + 1 > cursor:
            cursor = end + 1
    if high is None or cursor is None or cursor <= high:
        yield cursor, high


def _stretch(first: int | None, last: int | None) -> str:
    if first is None and last is None:
        return "any value"
    if first is None:
        return f"values of {last} or less"
    if last is None:
        return f"values of {first} or more"
    return f"the value {first}" if first == last else f"the values {first} to {last}"
