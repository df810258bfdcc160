"""Stretches of targets in words, for the refusals and odds that name which targets a check can go either way at
(gm.rules.chances)."""

from __future__ import annotations

FAR = 10**9  # a stretch of targets reaching this far has no end (the schema's largest band end)


def describe_targets(stretches: tuple[tuple[int, int], ...]) -> str:
    """Stretches of targets in words: "from 2 to 19", "5", "from 2 to 4 or from 9 to 12"."""
    return " or ".join(_described(first, last) for first, last in stretches)


def _described(first: int, last: int) -> str:
    if first <= -FAR and last >= FAR:
        return "any target"
    if first <= -FAR:
        return f"{last} or less"
    if last >= FAR:
        return f"{first} or more"
    return str(first) if first == last else f"from {first} to {last}"
