"""A problem found in a file an author wrote (dice.json, world.json): where it is and what is wrong."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from gm.errors import UsageError

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding: `path` is a JSON path such as `$.checks[0].bands[2].max`, `message` one sentence.

    Errors make the file unusable; warnings point at something that is allowed but probably a mistake.
    `file` names the file the path is in (`world.json`, `dice.json`) where a finding spans several files;
    None when there is only the one file in question.
    """

    path: str
    message: str
    severity: Severity = "error"
    file: str | None = None

    @property
    def where(self) -> str:
        """The file (if named) and the JSON path, as an author would look them up."""
        return f"{self.file} {self.path}" if self.file else self.path

    def __str__(self) -> str:
        return f"{self.severity}: {self.where}: {self.message}"


class ProblemsError(UsageError, ValueError):
    """A file that cannot be used, with every error found in it (warnings ride along)."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        errors = [problem for problem in problems if problem.severity == "error"]
        first = errors[0] if errors else problems[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"{source}: {first.where}: {first.message}{more}")

    @property
    def errors(self) -> list[Problem]:
        return [problem for problem in self.problems if problem.severity == "error"]


_NAME_LIKE = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")
_STEP = re.compile(r"\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\.([^.\[]*)")


def member_path(path: str, name: str) -> str:
    """The JSON path of member `name` of the object at `path`, spelt as jsonschema spells it."""
    if _NAME_LIKE.match(name):
        return f"{path}.{name}"
    escaped = name.replace("\\", "\\\\").replace("'", "\\'")
    return f"{path}['{escaped}']"


def document_order(problem: Problem) -> list[tuple[int, str]]:
    """Sort key for JSON paths: list indices as numbers, so checks[10] follows checks[9]."""
    steps = _STEP.finditer(problem.path.removeprefix("$"))
    return [(int(step[1]), "") if step[1] is not None else (-1, step[2] or step[3] or "") for step in steps]
