"""Errors a caller causes belong to gm's UsageError family, and stay ValueErrors for code that caught those."""

from __future__ import annotations

from gm.errors import ProblemsError, UsageError
from gm.problems import Problem


def test_a_file_that_cannot_be_used_is_a_usage_error() -> None:
    error = ProblemsError("world.json", [Problem("$.title", "'title' is missing")])
    assert isinstance(error, UsageError) and isinstance(error, ValueError)
    assert str(error) == "world.json: $.title: 'title' is missing"
