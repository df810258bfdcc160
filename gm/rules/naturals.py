"""Natural results (tier stepping): what a check's triggers on natural faces do to a roll's band.

A check's `naturals` watch the actor's kept dice. After the value has found its band, every trigger
whose face a kept die shows (with the right number of sides, when the trigger names them) fires,
once however many dice show it. Then:

- if a fired trigger names a band (`"band": "Critical success"`), the roll goes to that band; the
  first such trigger in the list wins, and steps are not applied;
- otherwise the fired triggers' steps are added up, and the band moves that many places along the
  *ladder* (`gm.rules.checks.ladder`: the bands a roll can end in, ordered from the lowest values to the
  highest), stopping at the first and the last band. So with bands from failure up to success, a
  step of 1 is one band better, whichever way the check compares.

The band after stepping gives the result: a natural 20 can turn a failure into a success. A roll
whose value is in no band (void) stays void: there is no band to step from. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from gm import dice
from gm.dice.joint import mask_of
from gm.rules._labels import label_key
from gm.rules.checks import Band, Check, Edge, Natural, band_for, ladder, read_value


@dataclass(frozen=True, slots=True)
class Settled:
    """The band a roll ends in after its naturals, the band it found before them if they moved it,
    and what the naturals did in words ("natural 20: stepped up from Success"), or None."""

    band: Band | None
    stepped_from: str | None = None
    natural: str | None = None


def watched_terms(check: Check, edge: Edge | None) -> int:
    """How many leading dice terms of `check.rolled(edge)` are the actor's (the ones naturals watch)."""
    actor = check.dice_for(edge)
    return len(actor.dice) if actor is not None else 0


def fired_mask(check: Check, rolled: dice.Roll, edge: Edge | None) -> int:
    """Which of the check's naturals the roll's kept actor dice showed, as a mask (bit i: naturals[i])."""
    watches = [natural.watch for natural in check.naturals]
    return mask_of(rolled.expression, rolled.faces, watches, watched_terms(check, edge))


def fired(check: Check, mask: int) -> tuple[Natural, ...]:
    return tuple(natural for bit, natural in enumerate(check.naturals) if mask >> bit & 1)


def settle(check: Check, band: Band | None, mask: int) -> Settled:
    """Apply the naturals in `mask` to the band a roll's value found (see the module's rules)."""
    triggered = fired(check, mask)
    if band is None or not triggered:
        return Settled(band)
    names = " and ".join(dict.fromkeys(natural.text for natural in triggered))
    labels = {label_key(candidate.label): candidate for candidate in check.bands}
    goto = next(
        (labels[label_key(n.band)] for n in triggered if n.band and label_key(n.band) in labels),
        None,
    )
    if goto is not None:
        if goto == band:
            return Settled(band, None, f"{names}: {band.label} already")
        return Settled(goto, band.label, f"{names}: sent to {goto.label} from {band.label}")
    steppers = [natural for natural in triggered if natural.band is None]
    if not steppers:
        return Settled(band)
    steps = sum(natural.step for natural in steppers)
    if steps == 0:
        return Settled(band, None, f"{names}: the steps cancel out, {band.label} stands")
    rungs = ladder(check)
    place = rungs.index(check.bands.index(band))
    moved = min(max(place + steps, 0), len(rungs) - 1)
    if moved == place:
        end = "highest" if steps > 0 else "lowest"
        return Settled(band, None, f"{names}: {band.label} is already the {end} band")
    way = "up" if moved > place else "down"
    by = f" {abs(moved - place)} bands" if abs(moved - place) > 1 else ""
    return Settled(check.bands[rungs[moved]], band.label, f"{names}: stepped {way}{by} from {band.label}")


def reachable_by_naturals(check: Check, rolled: set[int]) -> set[int]:
    """Indexes of the bands naturals can move a roll to from the bands in `rolled` (every subset of
    triggers is assumed possible: this is for warnings, where erring toward "reachable" is safe)."""
    rungs = ladder(check)
    found: set[int] = set()
    labels = {label_key(band.label): index for index, band in enumerate(check.bands)}
    for natural in check.naturals:
        if natural.band is not None and label_key(natural.band) in labels:
            found.add(labels[label_key(natural.band)])
    steps = [natural.step for natural in check.naturals if natural.band is None]
    sums = {sum(chosen) for size in range(1, len(steps) + 1) for chosen in combinations(steps, size)}
    for index in rolled:
        if index not in rungs:
            continue
        place = rungs.index(index)
        found |= {rungs[min(max(place + step, 0), len(rungs) - 1)] for step in sums}
    return found


def read_roll(
    check: Check, rolled: dice.Roll, edge: Edge | None, target: int | None, modifier: int
) -> tuple[int, Settled]:
    """The value a roll of `check` reads and the band it ends in, naturals applied: the one reading
    the tools, the audit and the odds share. `modifier` is the net one (`gm.rules.checks.opposed_modifier`)."""
    count = rolled.successes if rolled.successes is not None else rolled.total
    value = read_value(check, count, target, modifier)
    return value, settle(check, band_for(check, value), fired_mask(check, rolled, edge))
