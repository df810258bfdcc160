"""Errors a caller causes belong to gm's UsageError family, and stay ValueErrors for code that caught those."""

from __future__ import annotations

import pytest

from gm.cli_edit import EditCommandError
from gm.cli_serve import ServeCommandError
from gm.cli_story import StoryCommandError
from gm.errors import UsageError
from gm.problems import Problem, ProblemsError


def test_a_file_that_cannot_be_used_is_a_usage_error() -> None:
    error = ProblemsError("world.json", [Problem("$.title", "'title' is missing")])
    assert isinstance(error, UsageError) and isinstance(error, ValueError)
    assert str(error) == "world.json: $.title: 'title' is missing"


@pytest.mark.parametrize("error", [StoryCommandError, ServeCommandError, EditCommandError])
def test_bad_input_to_a_subcommand_is_a_usage_error(error: type[Exception]) -> None:
    assert issubclass(error, UsageError) and issubclass(error, ValueError)
