"""A problem found in a file an author wrote (dice.json, world.json): where it is and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: `path` is a JSON path such as `$.checks[0].bands[2].max`, `message` one sentence.

    Errors make the file unusable; warnings point at something that is allowed but probably a mistake.
    """

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.severity}: {self.path}: {self.message}"


class ProblemsError(ValueError):
    """A file that cannot be used, with every error found in it (warnings ride along)."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        errors = [problem for problem in problems if problem.severity == "error"]
        first = errors[0] if errors else problems[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{source}: {first.path}: {first.message}{more}")

    @property
    def errors(self) -> list[Problem]:
        return [problem for problem in self.problems if problem.severity == "error"]
