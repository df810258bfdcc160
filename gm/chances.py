"""The chance of each band of a check: what the editor's preview and `gm odds WORLD CHECK` show."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gm import dice
from gm.rules import Band, Check, band_for, read_value


@dataclass(frozen=True, slots=True)
class BandChance:
    """One band and the probability that a roll of its check lands in it."""

    band: Band
    probability: Fraction


@dataclass(frozen=True, slots=True)
class CheckOdds:
    """A check's odds for one target and modifier: the dice's own distribution, each band's chance, and
    the chance of a void roll (a value in no band). Exact unless `dice.exact` is False."""

    check: Check
    target: int | None
    modifier: int
    dice: dice.Odds
    bands: tuple[BandChance, ...]
    void: Fraction

    def to_json(self) -> dict[str, Any]:
        data = self.dice.to_json()
        data.update(
            {
                "check": self.check.key,
                "notation": self.check.dice.text,
                "target": self.target,
                "modifier": self.modifier,
                "bands": [
                    {
                        "label": chance.band.label,
                        "result": chance.band.result,
                        "critical": chance.band.critical,
                        "probability": str(chance.probability),
                    }
                    for chance in self.bands
                ],
                "void": str(self.void),
            }
        )
        return data


def check_odds(
    check: Check, target: int | None = None, modifier: int = 0, distribution: dice.Odds | None = None
) -> CheckOdds:
    """Each band's probability for `check` rolled against `target` with `modifier` added.

    `distribution` is the odds of the check's dice under its reading, if the caller already has them
    (the editor keeps them between previews, as exact odds of big dice can take a second).
    Raises `gm.rules.CheckRollError` when the check needs a target and has none, or the reverse.
    """
    if distribution is None:
        distribution = dice.odds(check.dice, hit=check.hit if check.reading == "successes" else None)
    read_value(check, distribution.lowest, target, modifier)  # refuses a missing or unwanted target up front
    per_band = [0] * len(check.bands)
    void = 0
    for index, count in enumerate(distribution.counts):
        band = band_for(check, read_value(check, distribution.lowest + index, target, modifier))
        if band is None:
            void += count
        else:
            per_band[check.bands.index(band)] += count
    denominator = distribution.denominator
    chances = tuple(
        BandChance(band, Fraction(count, denominator)) for band, count in zip(check.bands, per_band, strict=True)
    )
    return CheckOdds(check, target, modifier, distribution, chances, Fraction(void, denominator))
