"""Coverage of a check's bands: gaps and unreachable bands.

`coverage_problems` is what `gm check` says of one check's bands at one modifier: gaps in an
`absolute` check (errors: such a roll would mean nothing), stretches in no band of an `over`,
`under` or `opposed` check (warnings: a roll there is void), bands earlier bands cover, and bands
outside what an `absolute` check can roll, unless a natural can step a roll into them. Pure: no I/O.
"""

from __future__ import annotations

from gm.problems import Problem
from gm.rules.checks import Band, Check, covered, gaps
from gm.rules.naturals import reachable_by_naturals


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
        if covered(band.min, band.max, earlier):
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
        holes = sorted({hole for first, last in spans for hole in gaps(check.bands, first + modifier, last + modifier)})
        for first, last in holes:
            values = f"the value {first}" if first == last else f"the values {first} to {last}"
            problems.append(
                Problem(f"{path}.bands", f"check '{check.key}' can roll {values}{who}, which no band holds")
            )
    else:
        for first, last in gaps(check.bands, None, None):
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
    rolled = {
        index
        for index, band in enumerate(check.bands)
        if any(_overlaps(band, first + modifier, last + modifier) for first, last in spans)
    }
    return reachable_by_naturals(check, rolled)


def _overlaps(band: Band, low: int, high: int) -> bool:
    return (band.min is None or band.min <= high) and (band.max is None or band.max >= low)


def _stretch(first: int | None, last: int | None) -> str:
    if first is None and last is None:
        return "any value"
    if first is None:
        return f"values of {last} or less"
    if last is None:
        return f"values of {first} or more"
    return f"the value {first}" if first == last else f"the values {first} to {last}"
