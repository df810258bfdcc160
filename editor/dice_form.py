"""The Dice section's form: dice.json as fields an author types into, and back.

A draft keeps exactly what the author typed (text, even in number fields), so that a form with
mistakes comes back as it was sent. `dice_data` turns a draft into dice.json's data for validation
and saving: numbers that read as whole numbers become numbers, anything else stays text for the
schema to refuse at that field, and defaults are left out (`reading` total, `compare` absolute,
`critical` false), as in the examples of docs/dice-json.md. Fields are named like `checks-0-bands-1-min` (and
`checks-0-naturals-0-face` for a natural); the add, remove and move buttons send `action` values such
as `add-band:0`, `up-check:2` or `remove-natural:0:1`. A natural is typed as a face, an optional
number of sides, and either a step (`kind` step) or the label of a band to send the roll to.
A band's effects (what a roll there changes on a character's sheet) are typed on one line as
`-1d2 grit; -1d3 grit of opponent`: an amount, a variable and optionally whose (`of self`, the default,
or `of opponent`), separated by semicolons (`effects_text`, `effects_data`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.exceptions import HTTPException

from .fields import change, field_text, index_in, one_line, positions, text_area

CHECK_FIELDS = ("key", "name", "use", "dice", "advantage", "disadvantage", "reading", "hit", "compare", "modifier")
BAND_FIELDS = ("label", "min", "max", "result")
NATURAL_FIELDS = ("face", "sides", "kind", "step", "band")
NATURAL_KINDS = ("step", "band")
RESULTS = ("succeeded", "partial", "failed")
READINGS = ("total", "successes")
COMPARES = ("absolute", "over", "under", "opposed")
WHOLE = re.compile(r"^[+-]?\d{1,30}$")
_CHECK_NAME = re.compile(r"^checks-(\d{1,4})-")
_BAND_NAME = re.compile(r"^checks-(\d{1,4})-bands-(\d{1,4})-")
_NATURAL_NAME = re.compile(r"^checks-(\d{1,4})-naturals-(\d{1,4})-")
_EFFECT = re.compile(r"^(?P<by>[+-]?\S+)\s+(?P<variable>.+?)(?:\s+of\s+(?P<of>self|opponent))?$")


@dataclass
class BandDraft:
    """One band as typed."""

    label: str = ""
    min: str = ""
    max: str = ""
    result: str = "failed"
    critical: bool = False
    effects: str = ""


@dataclass
class NaturalDraft:
    """One natural as typed: `kind` says whether it steps (`step`) or sends the roll to a band (`band`)."""

    face: str = ""
    sides: str = ""
    kind: str = "step"
    step: str = "1"
    band: str = ""


@dataclass
class CheckDraft:
    """One check as typed; `target`, `character` and `opponent` only choose what the chance strips show."""

    key: str = ""
    name: str = ""
    use: str = ""
    dice: str = ""
    advantage: str = ""
    disadvantage: str = ""
    reading: str = "total"
    hit: str = ""
    compare: str = "absolute"
    modifier: str = ""
    secret: bool = False  # rolled in secret: no card for the player until revealed (gm.integrity.secret)
    bands: list[BandDraft] = field(default_factory=lambda: [BandDraft()])
    naturals: list[NaturalDraft] = field(default_factory=list)
    target: str = ""
    character: str = ""
    opponent: str = ""


@dataclass
class DiceDraft:
    """A whole dice.json as typed; `schema` keeps a `$schema` member the file had."""

    checks: list[CheckDraft] = field(default_factory=list)
    schema: str = ""


def draft_from_data(data: Any) -> DiceDraft:
    """A draft showing parsed dice.json `data`; what the form cannot hold (unknown fields, odd shapes) is left out."""
    if not isinstance(data, dict):
        return DiceDraft()
    checks = data.get("checks")
    schema = data.get("$schema")
    draft = DiceDraft(schema=schema if isinstance(schema, str) else "")
    for raw in checks if isinstance(checks, list) else []:
        if not isinstance(raw, dict):
            continue
        bands = raw.get("bands")
        naturals = raw.get("naturals")
        draft.checks.append(
            CheckDraft(
                key=field_text(raw.get("key")),
                name=field_text(raw.get("name")),
                use=field_text(raw.get("use")),
                dice=field_text(raw.get("dice")),
                advantage=field_text(raw.get("advantage")),
                disadvantage=field_text(raw.get("disadvantage")),
                reading=field_text(raw.get("reading", "total")),
                hit=field_text(raw.get("hit")),
                compare=field_text(raw.get("compare", "absolute")),
                modifier=field_text(raw.get("modifier")),
                secret=raw.get("secret") is True,
                bands=[
                    BandDraft(
                        label=field_text(band.get("label")),
                        min=field_text(band.get("min")),
                        max=field_text(band.get("max")),
                        result=field_text(band.get("result", "failed")),
                        critical=band.get("critical") is True,
                        effects=effects_text(band.get("effects")),
                    )
                    for band in (bands if isinstance(bands, list) else [])
                    if isinstance(band, dict)
                ],
                naturals=[
                    NaturalDraft(
                        face=field_text(natural.get("face")),
                        sides=field_text(natural.get("sides")),
                        kind="band" if "band" in natural and "step" not in natural else "step",
                        step=field_text(natural.get("step", "")),
                        band=field_text(natural.get("band")),
                    )
                    for natural in (naturals if isinstance(naturals, list) else [])
                    if isinstance(natural, dict)
                ],
            )
        )
    return draft


def draft_from_form(form: Mapping[str, str]) -> DiceDraft:
    """The draft a posted form describes. Rows are taken in the order of their numbers, gaps closed up."""
    check_numbers = sorted({int(match[1]) for name in form if (match := _CHECK_NAME.match(name))})
    band_numbers: dict[int, set[int]] = {}
    natural_numbers: dict[int, set[int]] = {}
    for name in form:
        if match := _BAND_NAME.match(name):
            band_numbers.setdefault(int(match[1]), set()).add(int(match[2]))
        elif match := _NATURAL_NAME.match(name):
            natural_numbers.setdefault(int(match[1]), set()).add(int(match[2]))
    draft = DiceDraft(schema=form.get("schema", ""))
    for number in check_numbers:
        prefix = f"checks-{number}-"
        values = {
            name: one_line(form.get(prefix + name, "")) for name in (*CHECK_FIELDS, "target", "character", "opponent")
        }
        values["use"] = text_area(form.get(prefix + "use", ""))
        bands = []
        for band in sorted(band_numbers.get(number, ())):
            band_prefix = f"{prefix}bands-{band}-"
            bands.append(
                BandDraft(
                    **{name: one_line(form.get(band_prefix + name, "")) for name in BAND_FIELDS},
                    critical=band_prefix + "critical" in form,
                    effects=one_line(form.get(band_prefix + "effects", "")),
                )
            )
        naturals = [
            NaturalDraft(
                **{name: one_line(form.get(f"{prefix}naturals-{natural}-{name}", "")) for name in NATURAL_FIELDS}
            )
            for natural in sorted(natural_numbers.get(number, ()))
        ]
        draft.checks.append(CheckDraft(**values, secret=prefix + "secret" in form, bands=bands, naturals=naturals))
    return draft


def dice_data(draft: DiceDraft) -> dict[str, Any]:
    """dice.json's data for `draft`, fields in the reference's order; what is not valid is left for validation."""
    data: dict[str, Any] = {"$schema": draft.schema} if draft.schema else {}
    data["checks"] = [_check_data(check) for check in draft.checks]
    return data


def _check_data(check: CheckDraft) -> dict[str, Any]:
    data: dict[str, Any] = {"key": check.key, "name": check.name, "use": check.use, "dice": check.dice}
    for edge in ("advantage", "disadvantage"):
        if getattr(check, edge).strip():
            data[edge] = getattr(check, edge)
    if check.reading != "total":
        data["reading"] = check.reading
    if check.hit.strip():
        data["hit"] = number_or_text(check.hit)
    if check.compare != "absolute":
        data["compare"] = check.compare
    if check.modifier:
        data["modifier"] = check.modifier
    if check.secret:
        data["secret"] = True
    if check.naturals:
        data["naturals"] = [_natural_data(natural) for natural in check.naturals]
    data["bands"] = [_band_data(band) for band in check.bands]
    return data


def _natural_data(natural: NaturalDraft) -> dict[str, Any]:
    data: dict[str, Any] = {"face": number_or_text(natural.face)}
    if natural.sides.strip():
        data["sides"] = number_or_text(natural.sides)
    if natural.kind == "band":
        data["band"] = natural.band
    else:
        data["step"] = number_or_text(natural.step)
    return data


def _band_data(band: BandDraft) -> dict[str, Any]:
    data: dict[str, Any] = {"label": band.label}
    if band.min.strip():
        data["min"] = number_or_text(band.min)
    if band.max.strip():
        data["max"] = number_or_text(band.max)
    data["result"] = band.result
    if band.critical:
        data["critical"] = True
    effects, _ = effects_data(band.effects)
    if effects:
        data["effects"] = effects
    return data


def effects_text(effects: Any) -> str:
    """A band's effects as the form's one line: `-1d2 grit; -1d3 grit of opponent`."""
    parts = []
    for effect in effects if isinstance(effects, list) else []:
        if isinstance(effect, dict):
            whose = f" of {effect['of']}" if "of" in effect else ""
            parts.append(f"{str(effect.get('by', '')).replace(' ', '')} {field_text(effect.get('variable'))}{whose}")
    return "; ".join(parts)


def effects_data(typed: str) -> tuple[list[dict[str, str]], list[str]]:
    """The effects a band's line describes, and a sentence for each part that cannot be read."""
    effects: list[dict[str, str]] = []
    problems = []
    for part in (part.strip() for part in typed.split(";")):
        if not part:
            continue
        match = _EFFECT.match(part)
        if not match:
            problems.append(f"cannot read the effect {part!r}: write an amount and a variable, such as -1d6 hp")
            continue
        effect = {"variable": match["variable"]}
        if match["of"]:
            effect["of"] = match["of"]
        effect["by"] = match["by"]
        effects.append(effect)
    return effects, problems


def number_or_text(typed: str) -> int | str:
    """A whole number when `typed` reads as one (so the schema can check its range), else the text itself."""
    stripped = typed.strip().replace("\u2212", "-")  # a typographic minus, as some keyboards type it
    return int(stripped) if WHOLE.match(stripped) else typed


def apply_action(draft: DiceDraft, action: str) -> None:
    """Add, remove or move a check or band of `draft` as a button's `action` value says; a 400 for any other."""
    verb, _, where = action.partition(":")
    numbers = positions(where)
    checks = draft.checks
    if verb == "add-check" and not numbers:
        checks.append(CheckDraft())
    elif verb in {"remove-check", "up-check", "down-check"} and len(numbers) == 1:
        change(checks, verb.split("-")[0], index_in(checks, numbers[0]))
    elif verb == "add-band" and len(numbers) == 1:
        check = checks[index_in(checks, numbers[0])]
        check.bands.append(_next_band(check.bands))
    elif verb in {"remove-band", "up-band", "down-band"} and len(numbers) == 2:
        bands = checks[index_in(checks, numbers[0])].bands
        change(bands, verb.split("-")[0], index_in(bands, numbers[1]))
    elif verb == "add-natural" and len(numbers) == 1:
        checks[index_in(checks, numbers[0])].naturals.append(NaturalDraft())
    elif verb == "remove-natural" and len(numbers) == 2:
        naturals = checks[index_in(checks, numbers[0])].naturals
        change(naturals, "remove", index_in(naturals, numbers[1]))
    else:
        raise HTTPException(400, f"The editor does not know the action {action!r}.")


def _next_band(bands: list[BandDraft]) -> BandDraft:
    """A new band starting just above the last band's max, when that is a number: the usual next step."""
    if bands and WHOLE.match(bands[-1].max.strip()):
        return BandDraft(min=str(int(bands[-1].max.strip()) + 1))
    return BandDraft()
