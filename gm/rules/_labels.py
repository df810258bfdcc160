"""How band labels are compared, wherever a label is looked up (dice.json checks, naturals, table rules)."""

from __future__ import annotations

import unicodedata


def label_key(label: str) -> str:
    """A label trimmed, case-folded and in Unicode's composed form (NFC), so that "Café" typed with a composed
    é and with e plus a combining accent are one label, as are "Hit" and "hit "."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", label).strip().casefold())
