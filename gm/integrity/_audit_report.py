"""What an audit found: each mismatch in one sentence, and how much was checked (see gm.integrity.audit)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gm._text import counted


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One thing that does not check out: where it is, and what is wrong, in one sentence."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class AuditReport:
    """What an audit found, and how much it checked."""

    story: str
    fair: bool
    rolls: int = 0  # rolls in the chain
    recomputed: int = 0  # rolls whose numbers were recomputed from their faces
    outcomes: int = 0  # outcomes checked against their rolls
    derived: int = 0  # fair rolls whose faces were derived again from a revealed seed
    unrevealed: int = 0  # fair rolls whose seed is still secret
    sealed: int = (
        0  # secret rolls not yet revealed (gm.integrity.secret): their place in the chain is checked, not their dice
    )
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def verdict(self) -> str:
        """One line: that the story checks out and what was checked, or how many mismatches there are."""
        if not self.ok:
            count = len(self.mismatches)
            return f"story {self.story} does NOT check out: {count} mismatch{'es' if count != 1 else ''}"
        said = (
            f"story {self.story} checks out: {counted(self.rolls, 'roll')} in an unbroken chain, "
            f"{self.recomputed} recomputed from dice.json, {counted(self.outcomes, 'outcome')} "
            f"{'agrees' if self.outcomes == 1 else 'agree'} with {'its roll' if self.outcomes == 1 else 'their rolls'}"
        )
        if self.sealed:
            said += f"; {counted(self.sealed, 'secret roll')} sealed until revealed"
        if self.fair:
            said += f"; {counted(self.derived, 'fair roll')} derived again from revealed seeds"
            if self.unrevealed:
                said += (
                    f", {self.unrevealed} more {'waits' if self.unrevealed == 1 else 'wait'} for a reveal (gm reveal)"
                )
        return said

    def to_json(self) -> dict[str, Any]:
        first = self.mismatches[0] if self.mismatches else None
        return {
            "story": self.story,
            "ok": self.ok,
            "verdict": self.verdict(),
            "fair": self.fair,
            "rolls": self.rolls,
            "recomputed": self.recomputed,
            "outcomes": self.outcomes,
            "derived": self.derived,
            "unrevealed": self.unrevealed,
            "sealed": self.sealed,
            "first_mismatch": {"where": first.where, "message": first.message} if first else None,
            "mismatches": [{"where": m.where, "message": m.message} for m in self.mismatches],
        }
